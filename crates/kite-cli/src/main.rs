//! The `kite` command.

mod ask;
mod cassette;
mod config;
mod endpoint;
mod mcp;
mod model;
mod output;
mod responses;
mod transcribe;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "kite",
    version,
    about = "Talk to language models from the command line"
)]
struct Cli {
    /// The configuration file. Default: ./kite.toml, else kite/kite.toml in the XDG
    /// config directory.
    #[arg(long, global = true, env = "KITE_CONFIG", value_name = "PATH")]
    config: Option<std::path::PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Ask a model and stream its answer.
    Ask(Box<ask::AskArgs>),
    /// Inspect recorded traffic (cassettes) and scan it for keys.
    #[command(subcommand)]
    Cassette(cassette::CassetteCommand),
    /// Check the MCP servers configured in kite.toml.
    #[command(subcommand)]
    Mcp(mcp::McpCommand),
    /// Manage the embedded local model.
    #[command(subcommand)]
    Model(model::ModelCommand),
    /// Follow, cancel or delete responses OpenAI stores (background runs).
    Responses(responses::ResponsesArgs),
    /// Transcribe an audio file.
    Transcribe(Box<transcribe::TranscribeArgs>),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("KITE_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        .with_target(false)
        .init();
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("kite: cannot start: {e}");
            return ExitCode::FAILURE;
        }
    };
    let config = cli.config.as_deref();
    let result = runtime.block_on(async {
        match cli.command {
            Command::Ask(args) => ask::run(*args, config).await,
            Command::Mcp(cmd) => mcp::run(cmd, config).await,
            Command::Cassette(cmd) => cassette::run(cmd),
            Command::Model(cmd) => model::run(cmd),
            Command::Responses(args) => responses::run(args).await,
            Command::Transcribe(args) => transcribe::run(*args).await,
        }
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(code) => code,
    }
}
