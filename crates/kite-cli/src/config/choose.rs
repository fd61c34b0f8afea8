//! Which model a session talks to, and with what: the flags `kite ask` and `kite chat`
//! share, kite.toml's `[defaults]`, `[providers.NAME]` and `[prompts]` under them, and the
//! model they choose (a named provider, a compatible server, the first provider whose key
//! is set, or else the embedded local model).

use crate::config::choices::{ApiChoice, ProviderChoice, SessionProvider};
use crate::config::endpoint::{EndpointArgs, compatible};
use crate::config::settings::ProviderDefaults;
use crate::config::{Config, HttpConfig};
use crate::terminal::output::{err, errln};
use clap::Args;
use kite::agent::builtin;
use kite::local::{LocalConfig, LocalModel};
use kite::store::TokenCounter;
use kite::wire::openai_chat::Dialect;
use kite::{Error, Model, OpenAiCompatible, Provider};
use std::io::{IsTerminal, Write};
use std::sync::Arc;

#[derive(Args, Clone)]
pub(crate) struct SessionArgs {
    /// The provider (openai, openai-responses, anthropic, mistral, openrouter, groq, or one
    /// of yours from kite.toml's [providers.NAME]), or `local` for the embedded model (as
    /// --local). Default: `provider` in kite.toml's [defaults], else the first whose API key
    /// is set, else the embedded local model.
    #[arg(
        long = "provider",
        value_name = "PROVIDER",
        env = "KITE_PROVIDER",
        value_parser = SessionProvider::parse
    )]
    pub named: Option<SessionProvider>,
    /// The provider, once [`with_defaults`](Self::with_defaults) has read `named` and
    /// kite.toml.
    #[arg(skip)]
    pub provider: Option<ProviderChoice>,
    /// Or a provider of the user's own, by name, with its table.
    #[arg(skip)]
    pub own: Option<(String, ProviderDefaults)>,
    /// OpenAI's API to use. Default: chat, except for deep-research models, which only
    /// Responses serves.
    #[arg(long, ignore_case = true)]
    pub api: Option<ApiChoice>,
    /// The model. Default: kite.toml's, else the provider's inexpensive default.
    #[arg(long, short, env = "KITE_MODEL")]
    pub model: Option<String>,
    #[command(flatten)]
    pub at: EndpointArgs,
    /// System instructions (default: kite.toml's [defaults] or [prompts]).
    #[arg(long, short = 's')]
    pub system: Option<String>,
    /// Use the system prompt named NAME in the prompts' [roles].
    #[arg(long, value_name = "NAME", conflicts_with = "system")]
    pub role: Option<String>,
    /// Limit each answer's length in tokens (at least 1).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_tokens: Option<u32>,
    /// Sampling temperature (a finite number, 0 or more).
    #[arg(long, value_parser = temperature)]
    pub temperature: Option<f64>,
    /// How hard a reasoning model thinks: minimal, low, medium or high (a thinking budget
    /// on Anthropic).
    #[arg(long, value_name = "EFFORT")]
    pub reasoning: Option<String>,
    /// Let the model use every built-in tool: now, calculate, read_file, list_files (files
    /// only under the working directory).
    #[arg(long)]
    pub tools: bool,
    /// Let the model use this built-in tool (repeatable).
    #[arg(long = "tool", value_name = "NAME", value_parser = clap::builder::PossibleValuesParser::new(builtin::NAMES))]
    pub tool: Vec<String>,
    /// auto, required, none, or a tool's name (that tool must be called). A forced choice
    /// holds until tools have run once.
    #[arg(long, value_name = "CHOICE")]
    pub tool_choice: Option<String>,
    /// Leave out the MCP servers configured in kite.toml.
    #[arg(long)]
    pub no_mcp: bool,
    #[command(flatten)]
    pub skills: crate::commands::skills::SkillArgs,
    /// Model calls allowed per question before giving up (at least 1; default 10).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_turns: Option<u32>,
    /// Use the embedded local model even when a provider key is set.
    #[arg(long)]
    pub local: bool,
    /// Local model: threads for generating (default 1; at most the machine's cores).
    #[arg(long, env = "KITE_LOCAL_THREADS", value_parser = clap::value_parser!(i32).range(1..=1024))]
    pub threads: Option<i32>,
    /// Local model: most tokens a call may hold, prompt and answer (default 4096; at
    /// least 256).
    #[arg(long, env = "KITE_LOCAL_CONTEXT", value_parser = clap::value_parser!(u32).range(256..=1_048_576))]
    pub context_size: Option<u32>,
    /// Local model: conversations answered at once, batched in one context (default 1, and
    /// 8 for `kite serve`, whose clients ask at once).
    #[arg(long, env = "KITE_LOCAL_PARALLEL", value_parser = clap::value_parser!(u32).range(1..=64))]
    pub parallel: Option<u32>,
    /// Continue the last conversation.
    #[arg(long = "continue", short = 'c')]
    pub continue_last: bool,
    /// Continue the stored conversation ID.
    #[arg(long, value_name = "ID", conflicts_with = "continue_last")]
    pub conversation: Option<String>,
    /// Do not store the conversation.
    #[arg(long, conflicts_with_all = ["continue_last", "conversation"])]
    pub no_store: bool,
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

impl SessionArgs {
    /// Fills what the flags left open from kite.toml: `[defaults]`, the chosen provider's
    /// `[providers.NAME]`, and the system prompt (`--role`, `[defaults]`, `[prompts]`).
    pub(crate) fn with_defaults(mut self, config: &Config) -> Result<Self, Error> {
        let d = &config.defaults;
        match self.named.take() {
            Some(SessionProvider::Named(p)) => self.provider = Some(ProviderChoice(p)),
            Some(SessionProvider::Local) => self.local = true,
            Some(SessionProvider::Own(name)) => self.own = Some(own_table(config, &name)?),
            None => {}
        }
        let chosen = self.provider.is_some() || self.own.is_some();
        let compatible = self.at.base_url.is_some() && !chosen;
        if !chosen && !self.local && !compatible {
            // The provider as `choose_model` would pick it, so that its `[providers.NAME]`
            // applies: `--api` names OpenAI, then `[defaults]`, then the first key set.
            // `[defaults] provider = "local"` is `--local`, as in a route.
            self.local = self.api.is_none()
                && d.provider
                    .as_deref()
                    .is_some_and(|p| p.eq_ignore_ascii_case("local"));
            self.provider = match (&self.api, &d.provider) {
                _ if self.local => None,
                (Some(_), _) => Some(Provider::OpenAi),
                (None, Some(name)) => match Provider::parse(name) {
                    Ok(p) => Some(p),
                    Err(_) => {
                        let name = name.to_ascii_lowercase();
                        self.own = Some(
                            own_table(config, &name)
                                .map_err(|e| Error::Config(format!("[defaults] provider: {e}")))?,
                        );
                        None
                    }
                },
                (None, None) => Provider::detect(),
            }
            .map(ProviderChoice);
        }
        if d.system.is_some() && d.role.is_some() {
            return Err(Error::Config(
                "[defaults] has both `system` and `role`; keep one".into(),
            ));
        }
        if d.max_turns == Some(0) {
            return Err(Error::Config(
                "[defaults] max_turns must be 1 or more".into(),
            ));
        }
        let named = match (&self.own, self.provider) {
            (Some((name, _)), _) => Some(name.as_str()),
            (None, Some(p)) => Some(p.0.name()),
            (None, None) => None,
        };
        let own = named.and_then(|p| config.providers.get(p));
        if self.at.base_url.is_none() {
            self.at.base_url = own.and_then(|o| o.base_url.clone());
        }
        let defaults_fit = match (&d.provider, named) {
            (Some(dp), Some(p)) => dp.eq_ignore_ascii_case(p),
            (Some(_), None) => false,
            (None, _) => true,
        };
        if self.model.is_none() {
            self.model = own
                .and_then(|o| o.model.clone())
                .or_else(|| d.model.clone().filter(|_| defaults_fit && !self.local));
        }
        let role = |name: &str| {
            config.prompts.roles.get(name).cloned().ok_or_else(|| {
                let known: Vec<&str> = config.prompts.roles.keys().map(String::as_str).collect();
                Error::Config(format!(
                    "no role {name:?} in the prompts' [roles] ({})",
                    if known.is_empty() {
                        "there are none".to_owned()
                    } else {
                        format!("known: {}", known.join(", "))
                    }
                ))
            })
        };
        self.system = match (self.system.take(), &self.role) {
            (Some(s), _) => Some(s),
            (None, Some(name)) => Some(role(name)?),
            (None, None) => match (&d.system, &d.role) {
                (Some(s), _) => Some(s.clone()),
                (None, Some(name)) => Some(role(name)?),
                (None, None) => config.prompts.system.clone(),
            },
        };
        self.system = self.system.filter(|s| !s.trim().is_empty());
        if !self.tools && self.tool.is_empty() {
            match &d.tools {
                Some(crate::config::settings::ToolsDefault::All(all)) => self.tools = *all,
                Some(crate::config::settings::ToolsDefault::Named(names)) => {
                    if let Some(bad) = names.iter().find(|n| !builtin::NAMES.contains(&n.as_str()))
                    {
                        return Err(Error::Config(format!(
                            "[defaults] tools: no built-in tool {bad:?} (known: {})",
                            builtin::NAMES.join(", ")
                        )));
                    }
                    self.tool = names.clone();
                }
                None => {}
            }
        }
        self.max_turns = self.max_turns.or(d.max_turns).or(Some(10));
        Ok(self)
    }
}

/// The user's own provider `name` from kite.toml, with its table.
fn own_table(config: &Config, name: &str) -> Result<(String, ProviderDefaults), Error> {
    match config.providers.get(name) {
        Some(table) => Ok((name.to_owned(), table.clone())),
        None => Err(Error::Config(format!(
            "no provider {name:?}: kite knows {}, and kite.toml has no [providers.{name}] \
             (with the base_url of an OpenAI-compatible server)",
            Provider::ALL.map(|p| p.name()).join(", ")
        ))),
    }
}

/// `text` with `{date}` replaced by today's date (`2026-11-23`, local time): the system
/// prompt is given on every call, so it may carry the day.
pub(crate) fn with_date(text: &str) -> String {
    match text.contains("{date}") {
        true => text.replace(
            "{date}",
            &chrono::Local::now().format("%Y-%m-%d").to_string(),
        ),
        false => text.to_owned(),
    }
}

/// The model a session talks to.
pub(crate) struct Chosen {
    pub model: Arc<dyn Model>,
    /// Its name in requests.
    pub name: String,
    /// How many tokens a call may hold, where known.
    pub window: Option<u32>,
    /// Counts tokens as the model does: the local model's own tokenizer, else OpenAI's.
    pub tokens: Arc<dyn TokenCounter>,
    /// Whether it is the embedded local model.
    pub local: bool,
}

/// The model the (defaulted) flags name.
pub(crate) fn choose_model(args: &SessionArgs, http: &HttpConfig) -> Result<Chosen, Error> {
    let api = args.api.map(|a| a.0);
    let endpoint = args.at.endpoint(http)?;
    let remote = |model: Arc<dyn Model>, name: String| Chosen {
        window: kite::context_window(&name),
        tokens: Arc::new(kite::store::Tiktoken::for_model(&name)),
        model,
        name,
        local: false,
    };
    let open = |p: Provider| -> Result<Chosen, Error> {
        let name = args
            .model
            .clone()
            .unwrap_or_else(|| p.default_model().to_owned());
        let p = p.for_model(&name, api)?;
        // As the library and the providers' SDKs do: OPENAI_BASE_URL or ANTHROPIC_BASE_URL
        // sends the provider's requests elsewhere, unless --base-url says where.
        let mut endpoint = endpoint.clone();
        if endpoint.base_url.is_none() {
            endpoint.base_url = p.base_url_from_env()?;
        }
        Ok(remote(p.model(&name, &endpoint)?, name))
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
    if let Some((name, table)) = &args.own {
        let m = crate::config::own::model(name, table, &endpoint)?;
        let model = args.model.clone().unwrap_or_else(|| "default".to_owned());
        return Ok(remote(Arc::new(m), model));
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
        return Ok(remote(Arc::new(m), name));
    }
    match Provider::detect() {
        Some(p) => open(p),
        None if args.at.cassette.is_some() => Err(cassette_needs_a_provider()),
        // A model named, and no key for it: said, not answered by another model.
        None => match &args.model {
            Some(name) => Err(missing_key(name)),
            None => local(args),
        },
    }
}

/// Why `model` cannot be asked: no provider's key is set; names the key it needs.
fn missing_key(model: &str) -> Error {
    let how = "or --local for the embedded model (which answers as itself)";
    Error::Config(match Provider::serving(model) {
        Some(p) => format!(
            "the model {model:?} is {}'s, and {} is not set: set it, {how}",
            p.name(),
            p.key_var()
        ),
        None => format!(
            "no provider's key is set for the model {model:?} (OPENAI_API_KEY, \
             ANTHROPIC_API_KEY, MISTRAL_API_KEY, OPENROUTER_API_KEY, GROQ_API_KEY): set one, \
             name the server with --base-url, {how}"
        ),
    })
}

/// The embedded model, loaded with a progress line on a terminal.
fn local(args: &SessionArgs) -> Result<Chosen, Error> {
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
    config.parallel = args.parallel.unwrap_or(1);
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
    if let Some(asked) = args.context_size.filter(|c| *c > model.context_window()) {
        errln!(
            "kite: --context-size {asked} is more than the local model was trained with; \
             using {}",
            model.context_window()
        );
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
    let counter = model.clone();
    Ok(Chosen {
        window: Some(model.context_window()),
        tokens: Arc::new(move |text: &str| counter.count_tokens(text) as u64),
        name: args.model.clone().unwrap_or_else(|| "local".to_owned()),
        model: Arc::new(model),
        local: true,
    })
}
