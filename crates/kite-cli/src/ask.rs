//! `kite ask`: one question, answered by the tool-calling loop, streamed as it happens.

use crate::choices::{ApiChoice, ProviderChoice};
use crate::endpoint::{EndpointArgs, compatible};
use crate::output::{Output, error_line};
use crate::output::{err, errln, outln};
use crate::waiting::Waiting;
use clap::Args;
use kite::agent::builtin;
use kite::local::{LocalConfig, LocalModel};
use kite::wire::openai_chat::Dialect;
use kite::{
    Agent, AgentError, AgentEvent, Error, Message, Model, OpenAiCompatible, Provider,
    ReasoningConfig, Request, StreamExt, ToolChoice,
};
use std::io::{IsTerminal, Read, Write};
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

#[derive(Args)]
pub(crate) struct AskArgs {
    /// The provider. Default: the first whose API key is set, else the embedded local
    /// model.
    #[arg(long, env = "KITE_PROVIDER", ignore_case = true)]
    provider: Option<ProviderChoice>,
    /// OpenAI's API to use. Default: chat, except for deep-research models, which only
    /// Responses serves.
    #[arg(long, ignore_case = true)]
    api: Option<ApiChoice>,
    /// The model. Default: the provider's inexpensive default.
    #[arg(long, short, env = "KITE_MODEL")]
    model: Option<String>,
    #[command(flatten)]
    at: EndpointArgs,
    /// System instructions.
    #[arg(long, short = 's')]
    system: Option<String>,
    /// Limit each answer's length in tokens (at least 1).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    max_tokens: Option<u32>,
    /// Sampling temperature (a finite number, 0 or more).
    #[arg(long, value_parser = temperature)]
    temperature: Option<f64>,
    /// How hard a reasoning model thinks: minimal, low, medium or high (a thinking budget
    /// on Anthropic).
    #[arg(long, value_name = "EFFORT")]
    reasoning: Option<String>,
    /// Start the question as an OpenAI background run, print its id and return; follow it
    /// with `kite responses wait ID`.
    #[arg(long)]
    background: bool,
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
    /// Leave out the MCP servers configured in kite.toml.
    #[arg(long)]
    no_mcp: bool,
    /// Model calls allowed before giving up (at least 1).
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..))]
    max_turns: u32,
    /// Use the embedded local model even when a provider key is set.
    #[arg(long)]
    local: bool,
    /// Local model: threads for generating (default 1; at most the machine's cores).
    #[arg(long, env = "KITE_LOCAL_THREADS", value_parser = clap::value_parser!(i32).range(1..=1024))]
    threads: Option<i32>,
    /// Local model: most tokens a call may hold, prompt and answer (default 4096; at
    /// least 256).
    #[arg(long, env = "KITE_LOCAL_CONTEXT", value_parser = clap::value_parser!(u32).range(256..=1_048_576))]
    context_size: Option<u32>,
    /// Print one JSON object per event, one per line, for scripts.
    #[arg(long)]
    json: bool,
    /// The question; `-` reads it from standard input.
    /// Attach a file to the question: an image (png, jpeg, gif, webp) as an image, any
    /// other file as its text.
    #[arg(long = "attach", short = 'a', value_name = "FILE")]
    attach: Vec<std::path::PathBuf>,
    /// Continue the last conversation.
    #[arg(long = "continue", short = 'c')]
    continue_last: bool,
    /// Continue the stored conversation ID.
    #[arg(long, value_name = "ID", conflicts_with = "continue_last")]
    conversation: Option<String>,
    /// Do not store this question and its answer.
    #[arg(long, conflicts_with_all = ["continue_last", "conversation"])]
    no_store: bool,
    #[arg(required = true, num_args = 1..)]
    prompt: Vec<String>,
}

/// `--temperature`: a finite number, 0 or more (`nan` would be sent as `null`).
fn temperature(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(t) if t.is_finite() && t >= 0.0 => Ok(t),
        _ => Err(format!(
            "{s:?} is not a temperature (a finite number, 0 or more)"
        )),
    }
}

pub(crate) async fn run(args: AskArgs, config: Option<&Path>) -> Result<(), ExitCode> {
    let mut out = Output::new(args.json);
    match ask(&args, config, &mut out).await {
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

/// Asks; true when the model answered, false when the run stopped short of an answer.
async fn ask(args: &AskArgs, config: Option<&Path>, out: &mut Output) -> Result<bool, AgentError> {
    let mut prompt = args.prompt.join(" ");
    if prompt == "-" {
        prompt.clear();
        std::io::stdin()
            .read_to_string(&mut prompt)
            .map_err(|e| Error::Config(format!("cannot read the question from stdin: {e}")))?;
    }
    if prompt.trim().is_empty() {
        return Err(Error::Config("the question is empty".into()).into());
    }
    let loaded = crate::config::load(config)?;
    if args.background {
        background(args, prompt, &loaded.config.http).await?;
        return Ok(true);
    }
    let (model, model_name) = choose_model(args, &loaded.config.http)?;
    let answered_by = model_name.clone();
    let tool_choice = args.tool_choice.as_deref().map(|c| match c {
        "auto" => ToolChoice::Auto,
        "required" => ToolChoice::Required,
        "none" => ToolChoice::None,
        name => ToolChoice::Tool(name.to_owned()),
    });
    // Configured MCP servers: their tools join the agent's, their sampling requests go to
    // the same model.
    let hub = match args.no_mcp {
        true => None,
        false => Some(
            crate::mcp::connect(&loaded, None, Some((model.clone(), model_name.clone()))).await?,
        ),
    };
    let mut agent = Agent::shared(model, model_name)
        .max_turns(args.max_turns)
        .configure(|r| {
            r.max_tokens = args.max_tokens;
            r.temperature = args.temperature;
            r.tool_choice = tool_choice.clone();
            r.reasoning = args.reasoning.clone().map(ReasoningConfig::effort);
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

    if let Some(hub) = &hub {
        hub.bind(agent.tools());
        let servers = hub.servers();
        if !servers.is_empty() {
            let tools: usize = servers.iter().map(|s| s.tools.len()).sum();
            let up = servers
                .iter()
                .filter(|s| matches!(s.status, kite::mcp::ServerStatus::Up { .. }))
                .count();
            errln!(
                "kite: {tools} tools from {up} of {} MCP servers in kite.toml (--no-mcp leaves \
                 them out)",
                servers.len()
            );
        }
    }
    if tool_choice == Some(ToolChoice::Required) && agent.tools().specs().is_empty() {
        return Err(Error::Config(
            "--tool-choice required, but no tool is on offer; offer one with --tool, --tools \
             or kite.toml"
                .into(),
        )
        .into());
    }
    if let Some(ToolChoice::Tool(name)) = &tool_choice {
        let offered = agent.tools().specs();
        if !offered.iter().any(|t| &t.name == name) {
            let names: Vec<&str> = offered.iter().map(|t| t.name.as_str()).collect();
            return Err(Error::Config(format!(
                "--tool-choice {name:?} names no tool on offer ({}); offer it with --tool or \
                 kite.toml, or choose auto, required or none",
                if names.is_empty() {
                    "none are".to_owned()
                } else {
                    names.join(", ")
                }
            ))
            .into());
        }
    }
    let limit = loaded
        .config
        .http
        .timeouts(args.at.timeout, args.at.idle_timeout)
        .response;
    let mut thread = match args.no_store {
        true => None,
        false => {
            let store = crate::history::open(&loaded.config.store).await?;
            let id = args.conversation.as_deref();
            Some(crate::history::Thread::begin(store, args.continue_last, id).await?)
        }
    };
    let question = crate::attach::question(prompt, &args.attach)?;
    let mut history = thread.as_ref().map_or_else(Vec::new, |t| t.history.clone());
    history.push(question.clone());
    let result = converse(&agent, history, out, limit).await;
    if let Some(hub) = hub {
        hub.close().await;
    }
    let (answered, run) = result?;
    if let (Some(thread), Some(run)) = (&mut thread, &run) {
        thread
            .save(question, run.new_messages(), run.usage(), &answered_by)
            .await?;
    }
    Ok(answered)
}

/// Runs the loop on `history`, printing as it goes, until it ends or stdout's reader goes
/// away; true when the model answered, with the run. On a terminal, a wait for the model of more than a moment is
/// shown with its length; a model that says nothing for `limit` (a stream of keep-alive
/// comments, say) is given up on.
async fn converse(
    agent: &Agent,
    history: Vec<Message>,
    out: &mut Output,
    limit: std::time::Duration,
) -> Result<(bool, Option<kite::Run>), AgentError> {
    let mut stream = agent.run_stream((), history);
    let mut waiting = Waiting::new(std::io::stderr().is_terminal(), limit);
    let mut ticks = tokio::time::interval(std::time::Duration::from_millis(250));
    loop {
        tokio::select! {
            event = stream.next() => {
                waiting.event(event.as_ref().and_then(|e| e.as_ref().ok()));
                match event {
                    Some(Ok(AgentEvent::Done(run))) => return Ok((out.done(&run), Some(*run))),
                    Some(Ok(e)) => out.event(&e),
                    Some(Err(e)) => return Err(e),
                    None => return Ok((false, None)),
                }
                if crate::output::stdout_closed() {
                    // Dropping the stream cancels the model call.
                    return Err(Error::Cancelled.into());
                }
            }
            _ = ticks.tick() => waiting.tick(out.mid_line())?,
        }
    }
}

/// Starts a background run and prints its id.
async fn background(
    args: &AskArgs,
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
    if args.json {
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

/// The model to ask and the model's name: a named provider, a compatible server, the first
/// provider whose key is set, or else the embedded local model.
fn choose_model(
    args: &AskArgs,
    http: &crate::config::HttpConfig,
) -> Result<(Arc<dyn Model>, String), Error> {
    let api = args.api.map(|a| a.0);
    let endpoint = args.at.endpoint(http)?;
    let open = |p: Provider| -> Result<(Arc<dyn Model>, String), Error> {
        let name = args
            .model
            .clone()
            .unwrap_or_else(|| p.default_model().to_owned());
        Ok((p.for_model(&name, api)?.model(&name, &endpoint)?, name))
    };
    let cassette_needs_a_provider = || {
        Error::Config(
            "--cassette records HTTP traffic, and the embedded model makes none; name the \
             provider (--provider) or the server (--base-url)"
                .into(),
        )
    };
    if args.local {
        return match args.at.cassette {
            Some(_) => Err(cassette_needs_a_provider()),
            None => local(args),
        };
    }
    if let Some(p) = args.provider {
        return open(p.0);
    }
    if api.is_some() {
        // Choosing between OpenAI's APIs names OpenAI.
        return open(Provider::OpenAi);
    }
    if let Some(url) = &args.at.base_url {
        let m = compatible(OpenAiCompatible::new(url, Dialect::Compatible), &endpoint)?;
        let name = args.model.clone().unwrap_or_else(|| "default".to_owned());
        return Ok((Arc::new(m), name));
    }
    match Provider::detect() {
        Some(p) => open(p),
        None if args.at.cassette.is_some() => Err(cassette_needs_a_provider()),
        None => local(args),
    }
}

/// The embedded model, loaded with a progress line on a terminal.
fn local(args: &AskArgs) -> Result<(Arc<dyn Model>, String), Error> {
    let path = kite::local::find_model()?;
    let mut config = LocalConfig::default();
    if let Some(t) = args.threads {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as i32;
        if t > cores {
            errln!("kite: --threads {t} is more than this machine's {cores} cores; using {cores}");
        }
        config.threads = t.min(cores);
    }
    if let Some(c) = args.context_size {
        config.context_size = c;
    }
    let show = std::io::stderr().is_terminal();
    let mut shown = None;
    let model = LocalModel::load_with_progress(&path, config, move |p| {
        let percent = (p * 100.0) as u32;
        if show && shown != Some(percent) {
            shown = Some(percent);
            err!("\rkite: loading the local model {percent:>3}%");
            let _ = std::io::stderr().flush();
        }
    })?;
    if show {
        err!("\r\x1b[K");
    }
    let why = if args.local {
        ""
    } else {
        "no provider key is set; "
    };
    errln!(
        "kite: {why}using the local model {} ({})",
        model.name(),
        path.display()
    );
    let name = args.model.clone().unwrap_or_else(|| "local".to_owned());
    Ok((Arc::new(model), name))
}
