//! `kite ask`: one question, the answer streamed as it arrives.

use crate::output::{Output, error_line};
use clap::Args;
use futures_util::StreamExt;
use kite::wire::openai_chat::Dialect;
use kite::{Error, Message, Model, OpenAiCompatible, Provider, Request};
use std::io::Read;
use std::process::ExitCode;

#[derive(Args)]
pub struct AskArgs {
    /// openai, mistral, openrouter or groq. Default: the first whose API key is set.
    #[arg(long, env = "KITE_PROVIDER")]
    provider: Option<String>,
    /// The model. Default: the provider's inexpensive default.
    #[arg(long, short, env = "KITE_MODEL")]
    model: Option<String>,
    /// Send requests here instead (llama.cpp, vLLM, Ollama, a proxy). Without --provider,
    /// the key is taken from KITE_API_KEY, if set.
    #[arg(long, env = "KITE_BASE_URL")]
    base_url: Option<String>,
    /// System instructions.
    #[arg(long)]
    system: Option<String>,
    /// Limit the answer's length in tokens.
    #[arg(long)]
    max_tokens: Option<u32>,
    /// Sampling temperature.
    #[arg(long)]
    temperature: Option<f64>,
    /// Print one JSON object per event, one per line, for scripts.
    #[arg(long)]
    json: bool,
    /// The question; `-` reads it from standard input.
    #[arg(required = true, num_args = 1..)]
    prompt: Vec<String>,
}

pub async fn run(args: AskArgs) -> Result<(), ExitCode> {
    let mut out = Output::new(args.json);
    match ask(&args, &mut out).await {
        Ok(()) => Ok(()),
        Err(e) => {
            out.error(&e);
            eprintln!("kite: {}", error_line(&e));
            Err(ExitCode::FAILURE)
        }
    }
}

async fn ask(args: &AskArgs, out: &mut Output) -> Result<(), Error> {
    let (model, default_model) = choose_model(args)?;
    let mut prompt = args.prompt.join(" ");
    if prompt == "-" {
        prompt.clear();
        std::io::stdin()
            .read_to_string(&mut prompt)
            .map_err(|e| Error::Config(format!("cannot read the question from stdin: {e}")))?;
    }
    let mut request =
        Request::new(args.model.clone().unwrap_or(default_model)).message(Message::user(prompt));
    request.system = args.system.clone();
    request.max_tokens = args.max_tokens;
    request.temperature = args.temperature;

    let mut stream = model.stream(request);
    let interrupted = tokio::signal::ctrl_c();
    tokio::pin!(interrupted);
    loop {
        tokio::select! {
            event = stream.next() => match event {
                Some(Ok(e)) => out.event(&e),
                Some(Err(e)) => return Err(e),
                None => break,
            },
            _ = &mut interrupted => return Err(Error::Cancelled),
        }
    }
    out.end();
    Ok(())
}

/// The model to ask and its default model name.
fn choose_model(args: &AskArgs) -> Result<(OpenAiCompatible, String), Error> {
    let base_url = args.base_url.as_deref();
    if let Some(name) = &args.provider {
        let p = Provider::parse(name)?;
        return Ok((p.model(base_url)?, p.default_model().to_owned()));
    }
    if let Some(url) = base_url {
        // A compatible server: never send another provider's key to it.
        let mut m = OpenAiCompatible::new(url, Dialect::Compatible);
        if let Ok(key) = std::env::var("KITE_API_KEY")
            && !key.is_empty()
        {
            m = m.api_key(key);
        }
        return Ok((m, "default".to_owned()));
    }
    match Provider::detect() {
        Some(p) => Ok((p.from_env()?, p.default_model().to_owned())),
        None => Err(Error::Config(
            "no provider is set up: export OPENAI_API_KEY (or MISTRAL_API_KEY, \
             OPENROUTER_API_KEY, GROQ_API_KEY), or point --base-url at an \
             OpenAI-compatible server"
                .into(),
        )),
    }
}
