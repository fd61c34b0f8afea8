//! `kite serve`: the gateway and web chat (`kite-serve`) in front of the routes of
//! `[serve]` in kite.toml, or, with none, of the model the same flags as `kite ask` choose
//! (the local model when no key is set), which then answers every model name. Routes get
//! their own tools (built-in, MCP servers', skills'); the web chat's conversations are the
//! user's store with no key, and each key's own with keys.

mod routes;
mod shared;

use crate::config::choose::{SessionArgs, choose_model};

/// Conversations the local model answers at once behind the gateway.
const LOCAL_PARALLEL: u32 = 8;
use crate::terminal::output::errln;
use clap::Args;
use kite::serve::{Gateway, Route};
use routes::{
    Kept, Upstreams, add_builtin, check_routes, route, skills_kit, tools, upstream_models,
};
use std::net::SocketAddr;
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

#[derive(Args)]
pub(crate) struct ServeArgs {
    #[command(flatten)]
    session: SessionArgs,
    /// Where to listen, as HOST:PORT, the host an address or a name (default: [serve]
    /// addr, else 127.0.0.1:8080).
    #[arg(long, value_name = "HOST:PORT", overrides_with = "addr")]
    addr: Option<String>,
    /// A key clients must send (`Authorization: Bearer KEY`); repeatable. Prefer
    /// KITE_SERVE_API_KEY or [serve] keys: a key on the command line shows in `ps`. With
    /// none, the gateway listens on loopback only and asks for a token it makes at start
    /// and prints (none at all with --no-auth).
    #[arg(
        long = "api-key",
        value_name = "KEY",
        env = "KITE_SERVE_API_KEY",
        hide_env_values = true
    )]
    api_keys: Vec<String>,
    /// Requests per minute each key may make (answered with 429 and Retry-After past it).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    rpm: Option<u32>,
    /// Tokens (in and out) per minute each key may use.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    tpm: Option<u64>,
    /// Requests each key may have under way at once.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    max_parallel: Option<u32>,
    /// The Redis (or Valkey) that holds the limits every replica shares, as
    /// redis://HOST:PORT (default: [serve] redis_url; none: limits hold per process).
    #[arg(
        long,
        value_name = "URL",
        env = "KITE_REDIS_URL",
        hide_env_values = true
    )]
    redis_url: Option<String>,
    /// Seconds the requests under way may take to finish once kite is asked to stop (by
    /// Ctrl-C or SIGTERM); new ones get 503 meanwhile.
    #[arg(long, value_name = "SECS", value_parser = crate::config::seconds, default_value = "30")]
    grace: std::time::Duration,
    /// With no key, ask callers for nothing (by default they must give a token kite makes
    /// at start): any user of this machine may then read your conversations and spend
    /// your provider's key.
    #[arg(long)]
    no_auth: bool,
}

/// The fewest characters an admin key may have.
const MIN_ADMIN_KEY: usize = 24;

pub(crate) async fn run(args: ServeArgs, config: Option<&Path>) -> Result<(), ExitCode> {
    let fail = |e: String| {
        errln!("kite: {e}");
        ExitCode::FAILURE
    };
    // Thousands of clients hold thousands of connections, and as many to the upstreams.
    kite::serve::allow_all_files();
    let loaded = crate::config::load(config).map_err(|e| fail(e.to_string()))?;
    let settings = &loaded.config.serve;
    let mut keys: Vec<String> = args.api_keys.clone();
    for key in &settings.keys {
        keys.push(kite::mcp::expand_env(key).map_err(|e| fail(format!("[serve] keys names {e}")))?);
    }
    if keys.iter().any(|k| k.trim().is_empty()) {
        errln!("kite: an empty client key is no key; it is ignored");
        keys.retain(|k| !k.trim().is_empty());
    }
    // A key given twice (flag and kite.toml) is one key, with one store and one count.
    let mut seen = std::collections::HashSet::new();
    keys = keys
        .into_iter()
        .map(|k| k.trim().to_owned())
        .filter(|k| seen.insert(k.clone()))
        .collect();
    if settings.requests_per_minute == Some(0)
        || settings.tokens_per_minute == Some(0)
        || settings.max_parallel == Some(0)
    {
        return Err(fail(
            "[serve] requests_per_minute, tokens_per_minute and max_parallel must be at least 1"
                .into(),
        ));
    }
    let mut admin_keys = Vec::new();
    for key in &settings.admin_keys {
        let key = kite::mcp::expand_env(key)
            .map_err(|e| fail(format!("[serve] admin_keys names {e}")))?;
        let key = key.trim();
        if key.is_empty() {
            continue;
        }
        crate::terminal::secrets::secret(key);
        // An admin key makes and revokes every other: one short enough to guess is none.
        if key.chars().count() < MIN_ADMIN_KEY {
            return Err(fail(format!(
                "[serve] admin_keys: an admin key must be at least {MIN_ADMIN_KEY} characters \
                 long (`openssl rand -hex 24` makes one)"
            )));
        }
        admin_keys.push(key.to_owned());
    }
    let redis_url = match args.redis_url.as_deref().filter(|u| !u.trim().is_empty()) {
        Some(u) => Some(u.to_owned()),
        None => settings
            .redis_url
            .as_deref()
            .map(kite::mcp::expand_env)
            .transpose()
            .map_err(|e| fail(format!("[serve] redis_url names {e}")))?,
    };
    if let Some(url) = &redis_url {
        kite::mcp::url_secrets(url)
            .into_iter()
            .for_each(|v| crate::terminal::secrets::secret(&v));
    }
    for key in &keys {
        crate::terminal::secrets::secret(key);
    }
    let on_command_line = std::env::args_os().any(|a| {
        a.to_str()
            .is_some_and(|a| a == "--api-key" || a.starts_with("--api-key="))
    });
    if on_command_line && others_see_processes() {
        errln!(
            "kite: --api-key shows the key to every user of this machine (in `ps`); set \
             KITE_SERVE_API_KEY or [serve] keys in kite.toml instead"
        );
    }
    if args.no_auth && !keys.is_empty() {
        return Err(fail(
            "--no-auth is for a gateway with no client key, and this one has keys".into(),
        ));
    }
    // With no key, a token of this run's own, asked of every caller.
    let mut token = match keys.is_empty() && !args.no_auth {
        true => {
            Some(kite::serve::new_token().map_err(|e| fail(format!("cannot make a token: {e}")))?)
        }
        false => None,
    };
    // Tools only when asked for here: `[defaults] tools` is for `kite ask` and `kite chat`,
    // not for whoever may reach the gateway.
    refuse_unused(&args.session, !settings.routes.is_empty()).map_err(fail)?;
    // Taken from the flags alone: `[defaults]` is for `kite ask` and `kite chat`.
    let max_turns = args.session.max_turns;
    let explicit_system = args.session.system.is_some() || args.session.role.is_some();
    let skill_dirs = args.session.skills.dirs.clone();
    let named: Vec<String> = match args.session.tools {
        true => kite::agent::builtin::NAMES.map(String::from).to_vec(),
        false => args.session.tool.clone(),
    };
    let mut session = args
        .session
        .with_defaults(&loaded.config)
        .map_err(|e| fail(e.to_string()))?;
    // A gateway's clients wait for the answer: past a minute with nothing, a fallback is
    // tried while they still wait (unless the flags or [http] say otherwise).
    if loaded.config.http.timeout.is_none() {
        session.at.timeout = session.at.timeout.or(Some(FIRST_BYTE));
    }
    // Its clients ask at once: the local model answers them together.
    session.parallel = session.parallel.or(Some(LOCAL_PARALLEL));
    let mut kept = Kept::default();
    let (routes, catch_all, shown) = match settings.routes.is_empty() {
        // No routes: every name goes to the model the flags choose, with the built-in tools
        // they name.
        true => {
            let chosen =
                choose_model(&session, &loaded.config.http).map_err(|e| fail(e.to_string()))?;
            let mut route = Route::new(&chosen.name, chosen.model.clone(), &chosen.name);
            add_builtin(&route.tools, &named, &loaded).map_err(fail)?;
            route.kit = skills_kit(&skill_dirs, &loaded)
                .await
                .map_err(|e| fail(e.to_string()))?;
            (vec![route], true, chosen.name)
        }
        false => {
            check_routes(&settings.routes).map_err(fail)?;
            let mut routes = Vec::new();
            for r in &settings.routes {
                let mut made = route(r, &session, &loaded.config, &mut kept).map_err(fail)?;
                tools(&mut made, r, &loaded, &mut kept)
                    .await
                    .map_err(fail)?;
                routes.push(made);
            }
            let names: Vec<&str> = routes.iter().map(|r| r.name.as_str()).collect();
            let shown = names.join(", ");
            (routes, false, shown)
        }
    };
    let mut routes = routes;
    for route in &mut routes {
        // `--system` (or `--role`) and `--max-turns` hold for every route: the system prompt
        // comes first in the web chat and wherever the gateway runs a route's tools.
        if explicit_system {
            route.instructions = session.system.clone();
        }
        if let Some(turns) = max_turns {
            route.max_turns = turns;
        }
    }
    let limits = kite::serve::Limits {
        requests_per_minute: args.rpm.or(settings.requests_per_minute),
        tokens_per_minute: args.tpm.or(settings.tokens_per_minute),
        max_parallel: args.max_parallel.or(settings.max_parallel),
    };
    if keys.is_empty() && limits != kite::serve::Limits::default() {
        errln!("kite: the rate limits hold for each client key; with no key they limit nothing");
    }
    let upstreams = Upstreams::of(&routes);
    // Every key kite knows of (providers', MCP servers', clients') is hidden in answers.
    let mut gateway = Gateway::new(routes, catch_all)
        .pricer(crate::commands::prices::pricer(&loaded.config.prices))
        .secrets(crate::terminal::secrets::known().clone())
        .hosted_tools(match settings.hosted_tools {
            crate::config::settings::HostedTools::Drop => kite::serve::HostedTools::Drop,
            crate::config::settings::HostedTools::Refuse => kite::serve::HostedTools::Refuse,
        })
        .sizes(kite::serve::Sizes {
            max_body: settings.max_body,
            max_stored: settings.max_stored,
        });
    if let Some(bytes) = settings.max_decoding {
        gateway = gateway.max_decoding(bytes);
    }
    // A server named by --base-url alone: every name goes to it, and its own list is what
    // clients see of them.
    if let (true, Some(url), None, None) = (
        catch_all,
        &session.at.base_url,
        &session.model,
        &session.provider,
    ) && !session.local
    {
        gateway = gateway.listed(upstream_models(url, &session, &loaded.config.http).await);
    }
    if let Some(token) = &token {
        gateway = gateway.token(token);
    }
    for key in &keys {
        gateway = gateway.key_with(key.trim(), limits);
    }
    for key in &admin_keys {
        gateway = gateway.admin_key(key);
    }
    let sharing = shared::Sharing {
        settings,
        store: &loaded.config.store,
        no_store: session.no_store,
        kite_toml_keys: !keys.is_empty(),
        admin_keys: !admin_keys.is_empty(),
        no_auth: args.no_auth,
        redis_url: redis_url.as_deref(),
    };
    let (shared_gateway, store_keys) = shared::share(gateway, sharing).await.map_err(fail)?;
    gateway = shared_gateway;
    // Keys made by `kite keys create`: callers give those, and no token.
    if store_keys {
        token = None;
    }
    let addr = match args.addr.as_deref().or(settings.addr.as_deref()) {
        Some(given) => resolve(given).await.map_err(fail)?,
        None => SocketAddr::from(([127, 0, 0, 1], 8080)),
    };
    gateway.check_addr(&addr).map_err(fail)?;
    upstreams.check_not(&addr).map_err(fail)?;
    let listener = kite::serve::bind(addr)
        .await
        .map_err(|e| fail(format!("cannot listen on {addr}: {e}")))?;
    let addr = listener.local_addr().map_err(|e| fail(e.to_string()))?;
    match &token {
        Some(token) => {
            errln!(
                "kite: open the web chat at http://{addr}/?token={token} ; clients give the \
                 same token as their API key (it changes at every start; --no-auth asks for \
                 none)"
            );
            // Shown once, here; never in a log or an error after.
            crate::terminal::secrets::secret(token);
        }
        None if store_keys => errln!(
            "kite: this gateway asks for the keys `kite keys create` made (kite keys list), \
             not a token of its own: clients give one as their API key, and the web chat asks \
             for one"
        ),
        None if args.no_auth => errln!(
            "kite: --no-auth: every user of this machine can reach this gateway, read your \
             conversations through it and spend your provider's key"
        ),
        None => {}
    }
    errln!(
        "kite: serving {shown} on http://{addr}/v1 (chat/completions, responses, messages, \
         models, usage; /health), and a web chat on http://{addr}/"
    );
    // Ctrl-C or SIGTERM refuses new requests (503) and lets those under way finish, for at most
    // --grace; a second signal ends kite at once.
    let grace = args.grace;
    let claim = Arc::new(crate::terminal::signals::Claim::new());
    let (stopping, mut stopped) = tokio::sync::watch::channel(None::<std::time::Instant>);
    let watcher = claim.clone();
    let shutdown = async move {
        watcher.interrupted().await;
        errln!(
            "kite: stopping: requests under way may finish (at most {} s; a second signal \
             stops at once)",
            grace.as_secs_f64()
        );
        let _ = stopping.send(Some(std::time::Instant::now()));
    };
    let gateway = Arc::new(gateway);
    let serving = kite::serve::serve(listener, gateway.clone(), shutdown);
    tokio::pin!(serving);
    let (result, cut_off) = tokio::select! {
        r = &mut serving => (r.map_err(|e| fail(e.to_string())), false),
        _ = async {
            let _ = stopped.wait_for(|s| s.is_some()).await;
            tokio::time::sleep(grace).await;
        } => {
            errln!("kite: requests still under way after {} s are cut off", grace.as_secs_f64());
            // Every answer under way ends in its API's way, with an error; the web chat's
            // keep what they said.
            let ended = async {
                gateway.wind_down().await;
                let _ = (&mut serving).await;
            };
            let _ = tokio::time::timeout(WIND_DOWN, ended).await;
            (Ok(()), true)
        }
    };
    // Background responses may finish within what is left of the grace; the ledger's last
    // rows are written.
    let stopped_at = *stopped.borrow();
    let left = match stopped_at {
        Some(at) => grace.saturating_sub(at.elapsed()),
        None => std::time::Duration::ZERO,
    };
    gateway.finish(left).await;
    for hub in kept.hubs {
        hub.close().await;
    }
    let signal = Arc::try_unwrap(claim).ok().and_then(|c| c.finish());
    match (result, signal) {
        (Err(code), _) => Err(code),
        // Cut off: as a process ended by the signal.
        (Ok(()), Some(signal)) if cut_off => {
            errln!("kite: {}; stopped serving", signal.what());
            Err(ExitCode::from(signal.status()))
        }
        // Drained: a clean stop, as service managers expect of a server.
        (Ok(()), Some(signal)) => {
            errln!(
                "kite: {}; every request was answered, stopped serving",
                signal.what()
            );
            Ok(())
        }
        (Ok(()), None) => Ok(()),
    }
}

/// Refuses the flags of `kite ask` that a gateway has no use for: each client sets them
/// in its own requests; and, with `routes`, those that only shape the model the flags
/// choose, which the routes replace.
fn refuse_unused(args: &SessionArgs, routes: bool) -> Result<(), String> {
    if routes {
        let replaced = [
            ("--tool", !args.tool.is_empty()),
            ("--tools", args.tools),
            ("--skills", !args.skills.dirs.is_empty()),
        ];
        if let Some((flag, _)) = replaced.iter().find(|(_, set)| *set) {
            return Err(format!(
                "kite serve takes {flag} only with no [[serve.routes]]: give each route its \
                 own tools and skills"
            ));
        }
    }
    let given = [
        ("--max-tokens", args.max_tokens.is_some()),
        ("--temperature", args.temperature.is_some()),
        ("--reasoning", args.reasoning.is_some()),
        ("--tool-choice", args.tool_choice.is_some()),
        ("--continue", args.continue_last),
        ("--conversation", args.conversation.is_some()),
        // Scripts run for any client of the gateway: always in the sandbox.
        (
            "--dangerously-run-scripts-unsandboxed",
            args.skills.dangerously_run_scripts_unsandboxed,
        ),
    ];
    match given.iter().find(|(_, set)| *set) {
        Some((flag, _)) => Err(format!(
            "kite serve does not take {flag}: each client sets it in its own requests"
        )),
        None => Ok(()),
    }
}

/// Whether other users of this machine can read kite's command line: `/proc` is not
/// mounted with `hidepid`.
fn others_see_processes() -> bool {
    let mounts = std::fs::read_to_string("/proc/self/mounts").unwrap_or_default();
    !mounts
        .lines()
        .filter(|l| l.split_whitespace().nth(1) == Some("/proc"))
        .any(|l| l.contains("hidepid=2") || l.contains("hidepid=invisible"))
}

/// How long the gateway waits for an upstream's answer to start, unless told otherwise.
const FIRST_BYTE: std::time::Duration = std::time::Duration::from_secs(60);

/// How long the web chat's answers cut off at the end may take to be kept.
const WIND_DOWN: std::time::Duration = std::time::Duration::from_secs(5);

/// `HOST:PORT` as an address to listen on: as it is, or with its host name looked up (an
/// IPv4 address first, as `localhost` is most often reached).
async fn resolve(given: &str) -> Result<SocketAddr, String> {
    if let Ok(addr) = given.parse() {
        return Ok(addr);
    }
    let found: Vec<SocketAddr> = tokio::net::lookup_host(given)
        .await
        .map_err(|e| format!("cannot listen on {given}: give HOST:PORT ({e})"))?
        .collect();
    found
        .iter()
        .find(|a| a.is_ipv4())
        .or(found.first())
        .copied()
        .ok_or_else(|| format!("cannot listen on {given}: the name has no address"))
}
