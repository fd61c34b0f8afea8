//! What `kite serve` serves: each route's model and tools (built-in, MCP servers',
//! skills'), the web chat's stores, and what a server named by `--base-url` lists.

use crate::config::choose::{SessionArgs, choose_model};
use crate::terminal::output::errln;
use kite::serve::Route;
use std::sync::Arc;

/// A `[[serve.routes]]` entry's model: a provider's (its key from the environment), one of
/// the user's own (`[providers.NAME]`), or the local model.
pub(super) fn route(
    r: &crate::config::settings::RouteConfig,
    session: &SessionArgs,
    config: &crate::config::Config,
    kept: &mut Kept,
) -> Result<Route, String> {
    let http = &config.http;
    let context = |e: kite::Error| format!("[serve] route {:?}: {e}", r.name);
    let (model, upstream) = match r.provider.to_ascii_lowercase().as_str() {
        "local" if r.timeout_secs.is_some() || r.idle_timeout_secs.is_some() => {
            return Err(format!(
                "[serve] route {:?}: the local model runs in kite; it takes no timeout_secs \
                 or idle_timeout_secs",
                r.name
            ));
        }
        // Loaded once, for every route that names it: each load is a copy of its weights
        // and a context for `--parallel` conversations.
        "local" => match &kept.local {
            Some((model, name)) => (model.clone(), name.clone()),
            None => {
                let mut local = session.clone();
                local.local = true;
                let chosen = choose_model(&local, http).map_err(context)?;
                kept.local = Some((chosen.model.clone(), chosen.name.clone()));
                (chosen.model, chosen.name)
            }
        },
        name => {
            let provider = kite::Provider::parse(name);
            let own = match &provider {
                Ok(_) => None,
                Err(e) => Some(config.providers.get(name).ok_or_else(|| {
                    format!(
                        "[serve] route {:?}: {e}, and kite.toml has no [providers.{name}] of \
                         your own",
                        r.name
                    )
                })?),
            };
            let upstream = match (&r.model, &provider, own) {
                (Some(m), _, _) => m.clone(),
                (None, Ok(p), _) => p.default_model().to_owned(),
                (None, Err(_), Some(own)) => own.model.clone().unwrap_or_else(|| "default".into()),
                (None, Err(_), None) => "default".into(),
            };
            // The route's own address, with its own timeouts over those of the flags and
            // `[http]`.
            let mut endpoint = session.at.endpoint(http).map_err(context)?;
            endpoint.base_url = r.base_url.clone();
            if let Some(timeouts) = endpoint.timeouts.as_mut() {
                let secs = |what: &str, s: Option<f64>| {
                    s.map(|s| kite::duration_from_secs(what, s))
                        .transpose()
                        .map_err(|e| format!("[serve] route {:?}: {e}", r.name))
                };
                if let Some(t) = secs("`timeout_secs`", r.timeout_secs)? {
                    timeouts.response = t;
                }
                if let Some(t) = secs("`idle_timeout_secs`", r.idle_timeout_secs)? {
                    timeouts.idle = t;
                }
            }
            let model: Arc<dyn kite::Model> = match (provider, own) {
                (Ok(p), _) => p.model(&upstream, &endpoint).map_err(context)?,
                (Err(_), Some(own)) => {
                    Arc::new(crate::config::own::model(name, own, &endpoint).map_err(context)?)
                }
                (Err(e), None) => return Err(context(e)),
            };
            (model, upstream)
        }
    };
    let mut made = Route::new(&r.name, model, upstream);
    made.fallbacks = r.fallbacks.clone();
    Ok(made)
}

/// How many fallbacks a route may list: each is tried in turn while the ones before it fail,
/// so a long list only makes a client wait longer for the same error.
const MAX_FALLBACKS: usize = 8;

/// Refuses routes the gateway could not serve as written: a name that is empty or taken
/// twice (the second would never be reached), and a fallback that names no route (it would
/// be passed over without a word), the route itself, or a route already listed, or one
/// past [`MAX_FALLBACKS`].
pub(super) fn check_routes(routes: &[crate::config::settings::RouteConfig]) -> Result<(), String> {
    let named = |n: &String| routes.iter().any(|o| &o.name == n);
    for (i, r) in routes.iter().enumerate() {
        let name = &r.name;
        if name.trim().is_empty() {
            return Err(format!("[serve] route {}: its name is empty", i + 1));
        }
        if name.trim() != name {
            return Err(format!(
                "[serve] route {name:?}: its name begins or ends with a space"
            ));
        }
        if routes[..i].iter().any(|o| &o.name == name) {
            return Err(format!("[serve] route {name:?} is defined twice"));
        }
        if let Some(missing) = r.fallbacks.iter().find(|f| !named(f)) {
            let known: Vec<&str> = routes.iter().map(|o| o.name.as_str()).collect();
            return Err(format!(
                "[serve] route {name:?}: its fallback {missing:?} names no route (the routes: {})",
                known.join(", ")
            ));
        }
        if r.fallbacks.contains(name) {
            return Err(format!("[serve] route {name:?} names itself as a fallback"));
        }
        let repeated = (r.fallbacks.iter().enumerate())
            .find(|(k, f)| r.fallbacks[..*k].contains(f))
            .map(|(_, f)| f);
        if let Some(twice) = repeated {
            return Err(format!(
                "[serve] route {name:?}: its fallback {twice:?} is listed twice"
            ));
        }
        if r.fallbacks.len() > MAX_FALLBACKS {
            return Err(format!(
                "[serve] route {name:?}: {} fallbacks, more than {MAX_FALLBACKS}",
                r.fallbacks.len()
            ));
        }
    }
    Ok(())
}

/// What routes share and keep for as long as kite serves: MCP connections, and the local
/// model once loaded.
#[derive(Default)]
pub(super) struct Kept {
    pub(super) hubs: Vec<kite::mcp::Hub>,
    pub(super) local: Option<(Arc<dyn kite::Model>, String)>,
}

/// Gives `route` the tools `r` names: built-in ones, configured MCP servers', skills'.
pub(super) async fn tools(
    route: &mut Route,
    r: &crate::config::settings::RouteConfig,
    loaded: &crate::config::Loaded,
    kept: &mut Kept,
) -> Result<(), String> {
    let context = |e: kite::Error| format!("[serve] route {:?}: {e}", r.name);
    add_builtin(&route.tools, &r.tools, loaded)
        .map_err(|e| format!("[serve] route {:?}: {e}", r.name))?;
    for name in &r.mcp {
        let hub = crate::commands::mcp::connect(loaded, Some(name), None, false)
            .await
            .map_err(context)?;
        hub.bind(&route.tools);
        kept.hubs.push(hub);
    }
    route.kit = skills_kit(&r.skills, loaded).await.map_err(context)?;
    Ok(())
}

/// The skills of `dirs`, made afresh for each request: its own workspace, nothing loaded.
pub(super) async fn skills_kit(
    dirs: &[std::path::PathBuf],
    loaded: &crate::config::Loaded,
) -> Result<Option<kite::serve::KitMaker>, kite::Error> {
    if dirs.is_empty() {
        return Ok(None);
    }
    let Some(skills) = crate::commands::skills::from_dirs(dirs, loaded).await? else {
        return Ok(None);
    };
    Ok(Some(Arc::new(move || {
        skills
            .fresh()
            .map(|run| Box::new(run) as Box<dyn kite::serve::RequestKit>)
            .map_err(|e| format!("cannot set up the skills' workspace: {e}"))
    })))
}

/// Adds the built-in tools `names` names to `tools` (the file tools read under the working
/// directory, never kite's own files).
pub(super) fn add_builtin(
    tools: &kite::agent::ToolSet,
    names: &[String],
    loaded: &crate::config::Loaded,
) -> Result<(), String> {
    if names.is_empty() {
        return Ok(());
    }
    if let Some(unknown) = names
        .iter()
        .find(|n| !kite::agent::builtin::NAMES.contains(&n.as_str()))
    {
        return Err(format!(
            "no built-in tool {unknown:?} (there are {:?})",
            kite::agent::builtin::NAMES
        ));
    }
    let cwd =
        std::env::current_dir().map_err(|e| format!("cannot find the working directory: {e}"))?;
    let all = kite::agent::builtin::all(&cwd, &crate::config::own_paths(loaded))
        .map_err(|e| format!("cannot set up the file tools: {e}"))?;
    for tool in all {
        if names.iter().any(|n| n == &tool.spec().name) {
            tools.add_arc(tool);
        }
    }
    Ok(())
}

/// The models the server at `url` lists, for `GET /v1/models`; none (said on stderr) when
/// it lists none, so the route's name is listed instead.
pub(super) async fn upstream_models(
    url: &str,
    session: &SessionArgs,
    http: &crate::config::HttpConfig,
) -> Vec<String> {
    let listing = async {
        let endpoint = session.at.endpoint(http)?;
        let m = kite::OpenAiCompatible::new(url, kite::wire::openai_chat::Dialect::Compatible);
        crate::config::endpoint::compatible(m, &endpoint)?
            .list_models()
            .await
    };
    let listed = tokio::time::timeout(std::time::Duration::from_secs(10), listing)
        .await
        .unwrap_or_else(|_| Err(kite::Error::Config("no answer within 10 s".into())));
    match listed {
        Ok(names) if !names.is_empty() => {
            errln!(
                "kite: every model name goes to {url}; /v1/models lists its {}",
                names.len()
            );
            names
        }
        Ok(_) | Err(_) => {
            let why = listed.err().map(|e| e.to_string());
            errln!(
                "kite: every model name goes to {url} as the client gives it; /v1/models lists \
                 only `default` ({})",
                why.as_deref().unwrap_or("the server lists no models")
            );
            Vec::new()
        }
    }
}

/// Where each route's provider is, to refuse a route whose provider is this gateway itself.
pub(super) struct Upstreams(Vec<(String, kite::trace::Origin)>);

impl Upstreams {
    pub(super) fn of(routes: &[Route]) -> Self {
        Self(
            routes
                .iter()
                .map(|r| (r.name.clone(), r.model.origin()))
                .collect(),
        )
    }

    /// Refuses a route that would send its requests to the gateway listening at `addr`.
    pub(super) fn check_not(&self, addr: &std::net::SocketAddr) -> Result<(), String> {
        match self.0.iter().find(|(_, o)| is_here(o, addr)) {
            Some((route, _)) => Err(format!(
                "route {route:?} would send its requests to this gateway itself ({addr}), and \
                 they would come back for ever: name its provider's server (--base-url, a \
                 route's base_url), or unset OPENAI_BASE_URL and ANTHROPIC_BASE_URL if they \
                 are set for this gateway's clients"
            )),
            None => Ok(()),
        }
    }
}

/// Whether a provider at `origin` is this machine at the port the gateway listens on.
fn is_here(origin: &kite::trace::Origin, addr: &std::net::SocketAddr) -> bool {
    let Some(host) = origin.address.as_deref() else {
        return false;
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let local = host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback() || ip.is_unspecified() || ip == addr.ip());
    local && origin.port == Some(addr.port())
}
