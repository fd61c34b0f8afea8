//! `kite ask`: one question, answered by the tool-calling loop, streamed as it happens.

use crate::config::choose::SessionArgs;
use crate::session::{Ended, Session};
use crate::terminal::output::{Output, error_line};
use crate::terminal::output::{errln, outln};
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
    /// After the answer, print the tokens used and what they cost on stderr.
    #[arg(long)]
    usage: bool,
    /// Print the answer once it is whole, not as it arrives.
    #[arg(long)]
    no_stream: bool,
    /// Leave standard input alone, even when text is piped in.
    #[arg(long)]
    no_stdin: bool,
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
        Ok(Asked::Answered) => Ok(()),
        // Stopped without an answer (the turn limit, a hook): said on stderr already.
        Ok(Asked::NoAnswer) => Err(ExitCode::from(crate::EXIT_NO_ANSWER)),
        Ok(Asked::Signalled(signal)) => {
            errln!("kite: {}", signal.what());
            Err(ExitCode::from(signal.status()))
        }
        // The reader of stdout went away: end quietly, as `cat` does.
        Err(_) if crate::terminal::output::stdout_closed() => Err(ExitCode::from(crate::EXIT_PIPE)),
        Err(e) => {
            out.error(&e);
            errln!("kite: {}", error_line(&e));
            Err(ExitCode::FAILURE)
        }
    }
}

/// The question: the words given, or standard input for `-`; text piped in follows the
/// words (unless `ignore_stdin`).
async fn question_text(words: &[String], ignore_stdin: bool) -> Result<String, Error> {
    let mut prompt = words.join(" ");
    if prompt == "-" {
        prompt = read_stdin().await?;
    } else if !ignore_stdin && stdin_is_piped() {
        let piped = read_stdin().await?;
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

/// Standard input, whole (at most 20 MiB). A pipe that stays silent is waited for, saying
/// so after a moment: the text may come from a slow program.
async fn read_stdin() -> Result<String, Error> {
    let mut reading = crate::terminal::blocking::off_runtime("reading standard input", || {
        let mut text = String::new();
        std::io::stdin()
            .take(MAX_STDIN + 1)
            .read_to_string(&mut text)
            .map(|_| text)
    });
    let text = tokio::select! {
        read = &mut reading => read,
        () = tokio::time::sleep(std::time::Duration::from_secs(3)) => {
            errln!("kite: waiting for the text piped in on standard input (--no-stdin leaves it out)");
            reading.await
        }
    };
    let text = text?.map_err(|e| Error::Config(format!("cannot read standard input: {e}")))?;
    if text.len() as u64 > MAX_STDIN {
        return Err(Error::Config(format!(
            "standard input holds more than {} MiB; attach a smaller part",
            MAX_STDIN / 1024 / 1024
        )));
    }
    Ok(text)
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
/// How a question ended, when it did not fail.
enum Asked {
    Answered,
    /// The run stopped without an answer (the turn limit, a hook).
    NoAnswer,
    /// A signal cut the turn short; it is stored as far as it got.
    Signalled(crate::terminal::signals::Interrupt),
}

async fn ask(args: AskArgs, config: Option<&Path>, out: &mut Output) -> Result<Asked, AgentError> {
    let prompt = question_text(&args.prompt, args.no_stdin).await?;
    let loaded = crate::config::load(config)?;
    if args.background {
        let session = args.session.clone().with_defaults(&loaded.config)?;
        background(&session, args.json, prompt, &loaded.config.http).await?;
        return Ok(Asked::Answered);
    }
    let question = crate::session::attach::question(prompt, &args.attach)?;
    let mut session = Session::open(args.session, loaded, "kite ask").await?;
    let claim = crate::terminal::signals::Claim::new();
    let ended = session.turn(question, out, claim.interrupted()).await;
    let signal = claim.finish();
    if args.usage {
        errln!(
            "kite: {}",
            crate::terminal::output::usage_line(&session.last_usage)
        );
    }
    session.close().await;
    Ok(match (ended?, signal) {
        (_, Some(signal)) => Asked::Signalled(signal),
        (Ended::Answered, None) => Asked::Answered,
        _ => Asked::NoAnswer,
    })
}

/// Starts a background run and prints its id.
async fn background(
    args: &SessionArgs,
    json: bool,
    prompt: String,
    http: &crate::config::HttpConfig,
) -> Result<(), Error> {
    if args.local {
        return Err(Error::Config(
            "--background runs on OpenAI's Responses API; the local model answers in the \
             foreground: leave out --background"
                .into(),
        ));
    }
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
