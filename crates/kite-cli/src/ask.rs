//! `kite ask`: one question, answered by the tool-calling loop, streamed as it happens.

use crate::output::{Output, error_line};
use clap::Args;
use kite::agent::builtin;
use kite::local::{LocalConfig, LocalModel};
use kite::wire::openai_chat::Dialect;
use kite::{
    Agent, AgentError, AgentEvent, Error, Message, Model, OpenAiCompatible, Provider, StreamExt,
    ToolChoice,
};
use std::io::{IsTerminal, Read, Write};
use std::process::ExitCode;
use std::sync::Arc;

#[derive(Args)]
pub struct AskArgs {
    /// openai, anthropic, mistral, openrouter or groq. Default: the first whose API key is
    /// set, else the embedded local model.
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
    /// Limit each answer's length in tokens.
    #[arg(long)]
    max_tokens: Option<u32>,
    /// Sampling temperature.
    #[arg(long)]
    temperature: Option<f64>,
    /// Let the model use every built-in tool: now, calculate, read_file, list_files (files
    /// only under the working directory).
    #[arg(long)]
    tools: bool,
    /// Let the model use this built-in tool (repeatable).
    #[arg(long = "tool", value_name = "NAME", value_parser = clap::builder::PossibleValuesParser::new(builtin::NAMES))]
    tool: Vec<String>,
    /// auto, required, none, or a tool's name (that tool must be called). A forced choice
    /// holds until tools have run once.
    #[arg(long, value_name = "CHOICE")]
    tool_choice: Option<String>,
    /// Model calls allowed before giving up.
    #[arg(long, default_value_t = 10)]
    max_turns: u32,
    /// Use the embedded local model even when a provider key is set.
    #[arg(long)]
    local: bool,
    /// Local model: threads for generating (default 1).
    #[arg(long, env = "KITE_LOCAL_THREADS")]
    threads: Option<i32>,
    /// Local model: most tokens a call may hold, prompt and answer (default 4096).
    #[arg(long, env = "KITE_LOCAL_CONTEXT")]
    context_size: Option<u32>,
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

async fn ask(args: &AskArgs, out: &mut Output) -> Result<(), AgentError> {
    let (model, default_model) = choose_model(args)?;
    let mut prompt = args.prompt.join(" ");
    if prompt == "-" {
        prompt.clear();
        std::io::stdin()
            .read_to_string(&mut prompt)
            .map_err(|e| Error::Config(format!("cannot read the question from stdin: {e}")))?;
    }
    let tool_choice = args.tool_choice.as_deref().map(|c| match c {
        "auto" => ToolChoice::Auto,
        "required" => ToolChoice::Required,
        "none" => ToolChoice::None,
        name => ToolChoice::Tool(name.to_owned()),
    });
    let mut agent = Agent::shared(model, args.model.clone().unwrap_or(default_model))
        .max_turns(args.max_turns)
        .configure(|r| {
            r.max_tokens = args.max_tokens;
            r.temperature = args.temperature;
            r.tool_choice = tool_choice;
        });
    if let Some(system) = &args.system {
        agent = agent.system(system.clone());
    }
    if args.tools || !args.tool.is_empty() {
        let cwd = std::env::current_dir()
            .map_err(|e| Error::Config(format!("cannot find the working directory: {e}")))?;
        let tools = builtin::all(&cwd)
            .map_err(|e| Error::Config(format!("cannot set up the file tools: {e}")))?;
        for t in tools {
            if args.tools || args.tool.iter().any(|n| n == &t.spec().name) {
                agent.tools().add_arc(t);
            }
        }
    }

    let mut stream = agent.run_stream((), vec![Message::user(prompt)]);
    let interrupted = tokio::signal::ctrl_c();
    tokio::pin!(interrupted);
    loop {
        tokio::select! {
            event = stream.next() => match event {
                Some(Ok(AgentEvent::Done(run))) => {
                    out.done(&run);
                    return Ok(());
                }
                Some(Ok(e)) => out.event(&e),
                Some(Err(e)) => return Err(e),
                None => return Ok(()),
            },
            _ = &mut interrupted => return Err(Error::Cancelled.into()),
        }
    }
}

/// The model to ask and its default model name: a named provider, a compatible server, the
/// first provider whose key is set, or else the embedded local model.
fn choose_model(args: &AskArgs) -> Result<(Arc<dyn Model>, String), Error> {
    let base_url = args.base_url.as_deref();
    if args.local {
        return local(args);
    }
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
        return Ok((Arc::new(m), "default".to_owned()));
    }
    match Provider::detect() {
        Some(p) => Ok((p.from_env()?, p.default_model().to_owned())),
        None => local(args),
    }
}

/// The embedded model, loaded with a progress line on a terminal.
fn local(args: &AskArgs) -> Result<(Arc<dyn Model>, String), Error> {
    let path = kite::local::find_model()?;
    let mut config = LocalConfig::default();
    if let Some(t) = args.threads {
        config.threads = t.max(1);
    }
    if let Some(c) = args.context_size {
        config.context_size = c.max(256);
    }
    let show = std::io::stderr().is_terminal();
    let mut shown = None;
    let model = LocalModel::load_with_progress(&path, config, move |p| {
        let percent = (p * 100.0) as u32;
        if show && shown != Some(percent) {
            shown = Some(percent);
            eprint!("\rkite: loading the local model {percent:>3}%");
            let _ = std::io::stderr().flush();
        }
    })?;
    if show {
        eprint!("\r\x1b[K");
    }
    let why = if args.local {
        ""
    } else {
        "no provider key is set; "
    };
    eprintln!(
        "kite: {why}using the local model {} ({})",
        model.name(),
        path.display()
    );
    Ok((Arc::new(model), "local".to_owned()))
}
