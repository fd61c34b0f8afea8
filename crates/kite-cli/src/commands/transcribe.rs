//! `kite transcribe`: speech to text.

use crate::config;
use crate::config::choices::{FormatChoice, SessionProvider};
use crate::config::endpoint::{EndpointArgs, compatible};
use crate::terminal::output::error_line;
use crate::terminal::output::{errln, out, outln};
use clap::Args;
use kite::{Audio, Error, Provider, StreamExt, Transcriber, TranscriptEvent, TranscriptionRequest};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(Args)]
pub(crate) struct TranscribeArgs {
    /// The audio file (wav, mp3, m4a, ogg, webm, flac).
    file: PathBuf,
    /// The provider (one with a transcription API: not anthropic, nor local). Default: the
    /// first whose API key is set.
    #[arg(
        long,
        value_name = "PROVIDER",
        env = "KITE_PROVIDER",
        value_parser = SessionProvider::parse
    )]
    provider: Option<SessionProvider>,
    /// The model. Default: the provider's (gpt-4o-mini-transcribe on OpenAI).
    #[arg(long, short)]
    model: Option<String>,
    #[command(flatten)]
    at: EndpointArgs,
    /// The spoken language (ISO-639-1, e.g. en), when known.
    #[arg(long)]
    language: Option<String>,
    /// Text to guide spelling and style.
    #[arg(long)]
    prompt: Option<String>,
    /// The transcript's format.
    #[arg(long, ignore_case = true)]
    format: Option<FormatChoice>,
    /// Print the text as it is recognised (models that stream: gpt-4o-transcribe and later).
    #[arg(long)]
    stream: bool,
    /// Print the whole transcript as JSON (segments, speakers, usage).
    #[arg(long)]
    json: bool,
}

pub(crate) async fn run(args: TranscribeArgs, config: Option<&Path>) -> Result<(), ExitCode> {
    transcribe(&args, config).await.map_err(|e| {
        errln!("kite: {}", error_line(&kite::AgentError::from(e)));
        ExitCode::FAILURE
    })
}

async fn transcribe(args: &TranscribeArgs, config: Option<&Path>) -> Result<(), Error> {
    // The file first: a missing one is the mistake to report, before any provider question.
    let bytes = read_audio(&args.file)?;
    let loaded = config::load(config)?.config;
    let (transcriber, default_model) = choose(args, &loaded)?;
    let name = args
        .file
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "audio".into());
    let mut req = TranscriptionRequest::new(
        args.model.clone().unwrap_or(default_model),
        Audio::new(name, bytes),
    );
    req.language = args.language.clone();
    req.prompt = args.prompt.clone();
    req.format = args.format.map(|f| f.0);

    let transcript = if args.stream {
        let mut events = transcriber.transcribe_stream(&req);
        let mut last = None;
        while let Some(event) = events.next().await {
            match event? {
                TranscriptEvent::TextDelta { text } if !args.json => out!("{text}"),
                TranscriptEvent::Segment(s) if !args.json => {
                    let who = s.speaker.map(|w| format!("{w}: ")).unwrap_or_default();
                    outln!("{who}{}", s.text.trim());
                }
                TranscriptEvent::Done(t) => last = Some(t),
                _ => {}
            }
            if crate::terminal::output::stdout_closed() {
                return Ok(());
            }
        }
        let t = last.ok_or_else(|| Error::decode("the stream held no transcript", b""))?;
        if !args.json {
            outln!();
            return Ok(());
        }
        t
    } else {
        transcriber.transcribe(&req).await?
    };
    if args.json {
        outln!(
            "{}",
            serde_json::to_string(&transcript).map_err(|e| Error::Config(e.to_string()))?
        );
    } else {
        outln!("{}", transcript.text);
    }
    Ok(())
}

/// The most audio kite sends: well above every provider's own limit (25 MB at OpenAI).
const MAX_AUDIO: u64 = 1024 * 1024 * 1024;

/// The audio file's bytes: a regular file (a pipe would hang, a device never end) of at
/// most [`MAX_AUDIO`] bytes.
fn read_audio(path: &Path) -> Result<Vec<u8>, Error> {
    let cannot =
        |e: &dyn std::fmt::Display| Error::Config(format!("cannot read {}: {e}", path.display()));
    let meta = std::fs::metadata(path).map_err(|e| cannot(&e))?;
    if !meta.is_file() {
        return Err(cannot(&"not a regular file"));
    }
    if meta.len() > MAX_AUDIO {
        return Err(cannot(&format!(
            "{} bytes is more than kite sends",
            meta.len()
        )));
    }
    std::fs::read(path).map_err(|e| cannot(&e))
}

/// The transcriber and its default model: a named provider (at kite.toml's `base_url` for
/// it, unless `--base-url` says otherwise), a compatible server, or the first provider
/// with a transcription API whose key is set.
fn choose(args: &TranscribeArgs, config: &config::Config) -> Result<(Transcriber, String), Error> {
    let base_url = args.at.base_url.as_deref();
    let provider = match &args.provider {
        Some(SessionProvider::Named(p)) => Some(*p),
        Some(SessionProvider::Own(name)) => {
            return Err(Error::Config(format!(
                "kite transcribe speaks to openai, groq or mistral; for your provider {name:?}, \
                 name its server with --base-url (its key in KITE_API_KEY)"
            )));
        }
        // `KITE_PROVIDER=local`, which `kite ask` takes, names no transcriber.
        Some(SessionProvider::Local) => {
            return Err(Error::Config(
                "the local model does not transcribe audio; name a provider with a \
                 transcription API (--provider openai, groq or mistral)"
                    .into(),
            ));
        }
        None if base_url.is_some() => None,
        None => Some(
            Provider::ALL
                .into_iter()
                .filter(|p| p.default_transcription_model().is_some())
                .find(|p| std::env::var(p.key_var()).is_ok_and(|k| !k.trim().is_empty()))
                .ok_or_else(|| {
                    Error::Config(
                        "transcription needs a provider: set OPENAI_API_KEY (or MISTRAL_API_KEY, \
                         OPENROUTER_API_KEY, GROQ_API_KEY), or point --base-url at a server"
                            .into(),
                    )
                })?,
        ),
    };
    match provider {
        Some(p) => {
            let mut at = args.at.clone();
            if at.base_url.is_none() {
                at.base_url = config
                    .providers
                    .get(p.name())
                    .and_then(|o| o.base_url.clone());
            }
            let model = p.default_transcription_model().unwrap_or("whisper-1");
            Ok((
                p.transcriber(&at.endpoint(&config.http)?)?,
                model.to_owned(),
            ))
        }
        None => {
            let endpoint = args.at.endpoint(&config.http)?;
            let t = compatible(Transcriber::new(base_url.unwrap_or_default()), &endpoint)?;
            Ok((t, "whisper-1".to_owned()))
        }
    }
}
