//! `kite ask`: one question, answered by the tool-calling loop, streamed as it happens.

use crate::choose::SessionArgs;
use crate::output::{Output, error_line};
use crate::output::{errln, outln};
use crate::session::{Ended, Session};
use clap::Args;
use kite::{AgentError, Error, Message, Provider, ReasoningConfig, Request};
use std::io::{IsTerminal, Read};
use std::path::Path;
use std::process::ExitCode;

#[derive(Args)]
pub(crate) struct AskArgs {
    #[command(flatten)]
    session: SessionArgs,
    /// Start the question as an OpenAI background run, print its id and return; follow it
    /// with `kite responses wait ID`.
    #[arg(long)]
    background: bool,
    /// Print one JSON object per event, one per line, for scripts.
    #[arg(long)]
    json: bool,
    /// Print the answer once it is whole, not as it arrives.
    #[arg(long)]
    no_stream: bool,
    /// Attach a file to the question: an image (png, jpeg, gif, webp) as an image, any
    /// other file as its text.
    #[arg(long = "attach", short = 'a', value_name = "FILE")]
    attach: Vec<std::path::PathBuf>,
    /// The question; `-` reads it from standard input. Text piped in without `-` follows
    /// the question (`cat notes.md | kite ask "summarize"`).
    prompt: Vec<String>,
}

/// The most bytes read from standard input.
const MAX_STDIN: u64 = 20 * 1024 * 1024;

pub(crate) async fn run(args: AskArgs, config: Option<&Path>) -> Result<(), ExitCode> {
    let terminal = std::io::stdout().is_terminal();
    let mut out = Output::new(args.json)
        .whole(args.no_stream)
        .markdown(terminal);
    match ask(args, config, &mut out).await {
        Ok(true) => Ok(()),
        // Stopped without an answer (the turn limit, a hook): said on stderr already.
        Ok(false) => Err(ExitCode::from(crate::EXIT_NO_ANSWER)),
        // The reader of stdout went away: end quietly, as `cat` does.
        Err(_) if crate::output::stdout_closed() => Err(ExitCode::from(crate::EXIT_PIPE)),
        Err(e) => {
            out.error(&e);
            errln!("kite: {}", error_line(&e));
            Err(ExitCode::FAILURE)
        }
    }
}

/// The question: the words given, or standard input for `-`; text piped in follows the
/// words.
fn question_text(words: &[String]) -> Result<String, Error> {
    let read_stdin = || -> Result<String, Error> {
        let mut text = String::new();
        std::io::stdin()
            .take(MAX_STDIN + 1)
            .read_to_string(&mut text)
            .map_err(|e| Error::Config(format!("cannot read standard input: {e}")))?;
        if text.len() as u64 > MAX_STDIN {
            return Err(Error::Config(format!(
                "standard input holds more than {} MiB; attach a smaller part",
                MAX_STDIN / 1024 / 1024
            )));
        }
        Ok(text)
    };
    let mut prompt = words.join(" ");
    if prompt == "-" {
        prompt = read_stdin()?;
    } else if stdin_is_piped() {
        let piped = read_stdin()?;
        if !piped.trim().is_empty() {
            prompt = match prompt.is_empty() {
                true => piped,
                false => format!("{prompt}\n\n{piped}"),
            };
        }
    }
    if prompt.trim().is_empty() {
        return Err(Error::Config(
            "the question is empty; give it as words, with `-` for standard input, or pipe \
             text in"
                .into(),
        ));
    }
    Ok(prompt)
}

/// Whether standard input is a pipe or a file (not a terminal, nor a device such as
/// `/dev/null`, which a program started with no input has).
fn stdin_is_piped() -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        let Ok(meta) = std::fs::metadata("/dev/stdin") else {
            return false;
        };
        let kind = meta.file_type();
        kind.is_fifo() || kind.is_file() || kind.is_socket()
    }
    #[cfg(not(unix))]
    {
        use std::io::IsTerminal;
        !std::io::stdin().is_terminal()
    }
}

/// Asks; true when the model answered, false when the run stopped short of an answer.
async fn ask(args: AskArgs, config: Option<&Path>, out: &mut Output) -> Result<bool, AgentError> {
    let prompt = question_text(&args.prompt)?;
    let loaded = crate::config::load(config)?;
    if args.background {
        let session = args.session.clone().with_defaults(&loaded.config)?;
        background(&session, args.json, prompt, &loaded.config.http).await?;
        return Ok(true);
    }
    let question = crate::attach::question(prompt, &args.attach)?;
    let mut session = Session::open(args.session, loaded).await?;
    let ended = session
        .turn(question, out, std::future::pending::<()>())
        .await;
    session.close().await;
    Ok(matches!(ended?, Ended::Answered))
}

/// Starts a background run and prints its id.
async fn background(
    args: &SessionArgs,
    json: bool,
    prompt: String,
    http: &crate::config::HttpConfig,
) -> Result<(), Error> {
    let provider = args.provider.map_or(Provider::OpenAi, |p| p.0);
    let name = args
        .model
        .clone()
        .unwrap_or_else(|| provider.default_model().to_owned());
    let model = provider.responses(&name, &args.at.endpoint(http)?)?;
    let mut req = Request::new(name).message(Message::user(prompt));
    req.system = args.system.clone();
    req.max_tokens = args.max_tokens;
    req.temperature = args.temperature;
    req.reasoning = args.reasoning.clone().map(ReasoningConfig::effort);
    let run = model.start(&req).await?;
    if json {
        outln!(
            "{}",
            serde_json::json!({"id": run.id, "status": run.status.as_str()})
        );
    } else {
        outln!("{}", run.id);
        errln!(
            "kite: {} ({}); follow it with `kite responses wait {}`",
            run.id,
            run.status.as_str(),
            run.id
        );
    }
    Ok(())
}
