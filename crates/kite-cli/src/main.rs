//! The `kite` command.

mod commands;
mod config;
mod session;
mod terminal;

use crate::commands::{
    ask, cassette, chat, completions, conversations, keys, man, mcp, model, models, prices,
    responses, serve, skills, transcribe, trust, usage,
};
use crate::terminal::output::{self, errln};
use crate::terminal::{logging, signals};
use clap::{Parser, Subcommand};
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "kite",
    version = concat!(env!("CARGO_PKG_VERSION"), " (", env!("KITE_COMMIT"), ")"),
    about = "Talk to language models from the command line"
)]
struct Cli {
    /// The configuration file. Default: ./kite.toml, else kite/kite.toml in the XDG
    /// config directory.
    #[arg(long, global = true, env = "KITE_CONFIG", value_name = "PATH")]
    config: Option<std::path::PathBuf>,
    /// Show each model call, tool call and run on stderr as it ends: latency, time to the
    /// first chunk, tokens (as `KITE_LOG=kite::gen_ai=info` does).
    #[arg(long, short = 'v', global = true)]
    verbose: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Ask a model and stream its answer.
    Ask(Box<ask::AskArgs>),
    /// Chat in the terminal; every turn is stored.
    Chat(Box<chat::ChatArgs>),
    /// Inspect recorded traffic (cassettes) and scan it for keys.
    #[command(subcommand)]
    Cassette(cassette::CassetteCommand),
    /// Print a shell's completion script (e.g. `kite completions bash >
    /// ~/.local/share/bash-completion/completions/kite`).
    Completions(completions::CompletionsArgs),
    /// List, show, delete or export stored conversations.
    #[command(subcommand)]
    Conversations(conversations::ConversationsCommand),
    /// Manage `kite serve`'s client keys (kept in the store every replica reads).
    #[command(subcommand)]
    Keys(keys::KeysCommand),
    /// Write kite's man pages, one a command (`kite.1`, `kite-ask.1`, …), into a folder.
    Man(man::ManArgs),
    /// Check the MCP servers configured in kite.toml.
    #[command(subcommand)]
    Mcp(mcp::McpCommand),
    /// The models kite knows for each provider, and the provider's own list when its key
    /// is set.
    Models(models::ModelsArgs),
    /// Manage the embedded local model.
    #[command(subcommand)]
    Model(model::ModelCommand),
    /// The prices kite puts on calls: update them from PyPI, or show one model's.
    #[command(subcommand)]
    Prices(prices::PricesCommand),
    /// Follow, cancel or delete responses OpenAI stores (background runs).
    Responses(responses::ResponsesArgs),
    /// Trust a kite.toml in the working directory, or a project folder's skills (after
    /// reading them): until then kite does not use them, since they can start programs and
    /// send keys elsewhere.
    Trust(trust::TrustArgs),
    /// Serve a web chat, and a gateway that speaks OpenAI's Chat Completions and Responses
    /// and Anthropic's Messages, in front of the chosen model or the routes of [serve].
    // What each client sets in its own requests is left out of serve's help (and refused,
    // saying so, if given).
    #[command(
        mut_arg("max_tokens", |a| a.hide(true)),
        mut_arg("temperature", |a| a.hide(true)),
        mut_arg("reasoning", |a| a.hide(true)),
        mut_arg("tool_choice", |a| a.hide(true)),
        mut_arg("continue_last", |a| a.hide(true)),
        mut_arg("conversation", |a| a.hide(true))
    )]
    Serve(Box<serve::ServeArgs>),
    /// List, show and validate Agent Skills.
    #[command(subcommand)]
    Skills(skills::SkillsCommand),
    /// Manage teams: keys of `kite serve` that share limits and a budget.
    #[command(subcommand)]
    Teams(keys::TeamsCommand),
    /// Transcribe an audio file.
    Transcribe(Box<transcribe::TranscribeArgs>),
    /// What `kite serve`'s clients used, from the ledger: requests, tokens and cost.
    Usage(usage::UsageArgs),
}

/// Exit status when a run stopped without an answer (the turn limit, a hook).
pub const EXIT_NO_ANSWER: u8 = 3;
/// Exit status when stdout's reader went away (as a shell reports `cat` killed by SIGPIPE).
pub const EXIT_PIPE: u8 = 141;

fn main() -> ExitCode {
    let cli = Cli::try_parse().unwrap_or_else(|e| exit_on(name_the_variable(e)));
    let telemetry = logging::init(cli.verbose, matches!(cli.command, Command::Serve(_)));
    signals::survive_file_size_limit();
    // Two workers run the command; this thread only waits for it or for a signal, so a
    // signal is heard even while the command is stuck in a blocking read (a pipe, a
    // terminal).
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            errln!("kite: cannot start: {e}");
            return ExitCode::FAILURE;
        }
    };
    let config = cli.config;
    let command = runtime.spawn(async move {
        let config = config.as_deref();
        match cli.command {
            Command::Ask(args) => ask::run(*args, config).await,
            Command::Chat(args) => chat::run(*args, config).await,
            Command::Keys(cmd) => keys::keys(cmd, config).await,
            Command::Teams(cmd) => keys::teams(cmd, config).await,
            Command::Usage(args) => usage::usage(args, config).await,
            Command::Mcp(cmd) => mcp::run(cmd, config).await,
            Command::Models(args) => models::run(args, config).await,
            Command::Cassette(cmd) => cassette::run(cmd),
            Command::Completions(args) => completions::run(args, cli_tree()),
            Command::Man(args) => man::run(args, cli_tree()),
            Command::Conversations(cmd) => conversations::run(cmd, config).await,
            Command::Model(cmd) => model::run(cmd),
            Command::Prices(cmd) => prices::run(cmd),
            Command::Responses(args) => responses::run(args).await,
            Command::Serve(args) => serve::run(*args, config).await,
            Command::Skills(cmd) => skills::run(cmd, config),
            Command::Transcribe(args) => transcribe::run(*args, config).await,
            Command::Trust(args) => trust::run(args),
        }
    });
    let result = runtime.block_on(async {
        tokio::select! {
            r = command => r.unwrap_or_else(|e| {
                errln!("kite: the command failed: {e}");
                Err(ExitCode::FAILURE)
            }),
            signal = signals::interrupted() => {
                errln!("kite: {}", signal.what());
                output::hush(true);
                // A second signal while kite cleans up ends it at once.
                signals::restore_defaults();
                Err(ExitCode::from(signal.status()))
            }
        }
    });
    // Shutting the runtime down drops the command where it stands: its model call, its MCP
    // servers (their process groups are killed) and its local generation (stopped at the
    // next token) go with it. Then the local model's worker is waited for, so that nothing
    // is inside llama.cpp as the process ends.
    runtime.shutdown_timeout(std::time::Duration::from_secs(2));
    output::hush(false);
    // A signal may have come while the chat's line editor had the terminal in raw mode:
    // the terminal is given back as it was (nothing happens if it was never raw).
    let _ = crossterm::terminal::disable_raw_mode();
    kite::local::wait_for_workers(std::time::Duration::from_secs(10));
    // The spans of what was cut short ended with the runtime: they are sent now, within
    // 2 s in all for a collector that does not answer, which is said once.
    if let Some(t) = telemetry
        && let Err(e) = t.shutdown(std::time::Duration::from_secs(2))
    {
        errln!("kite: {e}");
    }
    match result {
        _ if output::stdout_failed() => ExitCode::FAILURE,
        Ok(()) if output::stdout_closed() => ExitCode::from(EXIT_PIPE),
        Ok(()) => ExitCode::SUCCESS,
        Err(code) => code,
    }
}

/// Ends kite on what clap stopped at: an error, or the help or version asked for, which
/// fail (status 1) when they cannot be written, but for a closed pipe (`kite --help | head`).
fn exit_on(e: clap::Error) -> ! {
    use clap::error::ErrorKind;
    if !matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
        e.exit()
    }
    let written = e
        .print()
        .and_then(|()| std::io::Write::flush(&mut std::io::stdout()));
    match written {
        Err(err) if err.kind() != std::io::ErrorKind::BrokenPipe => {
            errln!("kite: cannot write to standard output: {err}");
            std::process::exit(1)
        }
        _ => std::process::exit(0),
    }
}

/// The whole command tree, for what is made from it (completions, man pages).
fn cli_tree() -> clap::Command {
    <Cli as clap::CommandFactory>::command()
}

/// A wrong value names its flag; when the value came from the flag's environment variable
/// (`KITE_LOCAL_PARALLEL=-1`), the error names the variable too, which is what to change;
/// so it does when a variable's value is not UTF-8, which clap reports naming nothing.
fn name_the_variable(mut e: clap::Error) -> clap::Error {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    let mut tip = None;
    if e.kind() == ErrorKind::InvalidUtf8 {
        // Clap names no argument then: the variable is found by its value.
        tip = env_args(|_| true)
            .into_iter()
            .find(|v| std::env::var_os(v).is_some_and(|set| set.to_str().is_none()))
            .map(|v| {
                format!(
                    "the environment variable {} is not UTF-8",
                    v.to_string_lossy()
                )
            });
    } else if let (Some(ContextValue::String(flag)), Some(ContextValue::String(value))) = (
        e.get(ContextKind::InvalidArg),
        e.get(ContextKind::InvalidValue),
    ) {
        let long = flag.split(' ').next().unwrap_or("").trim_start_matches('-');
        tip = env_args(|a| a.get_long() == Some(long))
            .into_iter()
            .find(|v| std::env::var_os(v).is_some_and(|set| set == value.as_str()))
            .map(|v| {
                format!(
                    "the value comes from the environment variable {}",
                    v.to_string_lossy()
                )
            });
    }
    if let Some(tip) = tip {
        e.insert(
            ContextKind::Suggested,
            ContextValue::StyledStrs(vec![tip.into()]),
        );
    }
    e
}

/// The environment variables the arguments `which` picks take their values from, in every
/// command.
fn env_args(which: impl Fn(&clap::Arg) -> bool) -> Vec<std::ffi::OsString> {
    let mut commands = vec![cli_tree()];
    let mut vars = Vec::new();
    while let Some(command) = commands.pop() {
        let named = command.get_arguments().filter(|a| which(a));
        vars.extend(
            named
                .filter_map(|a| a.get_env())
                .map(std::ffi::OsStr::to_os_string),
        );
        commands.extend(command.get_subcommands().cloned());
    }
    vars
}
