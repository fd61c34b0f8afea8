//! The hub: many servers at once, their tools under one set of names, kept alive.
//!
//! Each server has an id and a slot holding its live session (if any) and the tools it last
//! listed. A session that ends (the process exits, the connection drops, a ping goes
//! unanswered) retires the server's tools at once and starts reconnecting with backoff; a
//! call that finds its server gone reconnects and is retried once.

use crate::catalog::{Prompt, PromptMessages, Resource, ResourceContent};
use crate::config::ServerConfig;
use crate::error::Error;
use crate::hooks::{Elicitor, Sampler};
use crate::session::{CallResult, Hooks, Notice, RemoteTool, Session};
use crate::tool::McpTool;
use kite_agent::{Tool, ToolSet};
#[allow(deprecated)] // current in protocol 2025-11-25, which kite speaks
use rmcp::model::Root;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// When tool names get their server's prefix (`prefix_name`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Prefixing {
    /// Only names offered by more than one server.
    #[default]
    OnClash,
    /// Every name.
    Always,
    /// Never (a clash leaves the first server's tool).
    Never,
}

/// How the hub behaves.
#[derive(Clone)]
pub struct HubOptions {
    /// How often each live server is pinged (default 5 minutes).
    pub ping_interval: Duration,
    /// How long a ping may take before the server counts as gone (default 10 s).
    pub ping_timeout: Duration,
    /// The first wait before reconnecting to a lost server; it doubles up to
    /// `reconnect_max` (defaults 500 ms and 30 s).
    pub reconnect_initial: Duration,
    pub reconnect_max: Duration,
    /// Tool call deadline when the server's config names none (default 60 s), renewed by
    /// each progress notification.
    pub call_timeout: Duration,
    /// How long starting a server may take when its config names no deadline: the process
    /// (or connection), the handshake and the first tool list (default 10 s, room for a
    /// package runner's first start).
    pub startup_timeout: Duration,
    pub prefixing: Prefixing,
    /// The roots given to servers that ask (`roots/list`): `file://` URIs and names.
    pub roots: Vec<(String, Option<String>)>,
    /// Answers servers' `sampling/createMessage`; without it servers are told kite does
    /// not sample.
    pub sampler: Option<Arc<dyn Sampler>>,
    /// Asks the user for servers' `elicitation/create`; without it servers are told kite
    /// does not elicit.
    pub elicitor: Option<Arc<dyn Elicitor>>,
}

impl std::fmt::Debug for HubOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HubOptions")
            .field("ping_interval", &self.ping_interval)
            .field("ping_timeout", &self.ping_timeout)
            .field("reconnect_initial", &self.reconnect_initial)
            .field("reconnect_max", &self.reconnect_max)
            .field("call_timeout", &self.call_timeout)
            .field("startup_timeout", &self.startup_timeout)
            .field("prefixing", &self.prefixing)
            .field("roots", &self.roots)
            .field("sampler", &self.sampler.is_some())
            .field("elicitor", &self.elicitor.is_some())
            .finish()
    }
}

impl Default for HubOptions {
    fn default() -> Self {
        Self {
            ping_interval: Duration::from_secs(300),
            ping_timeout: Duration::from_secs(10),
            reconnect_initial: Duration::from_millis(500),
            reconnect_max: Duration::from_secs(30),
            call_timeout: Duration::from_secs(60),
            startup_timeout: Duration::from_secs(10),
            prefixing: Prefixing::OnClash,
            roots: Vec::new(),
            sampler: None,
            elicitor: None,
        }
    }
}

/// A server's state, as [`Hub::servers`] reports it.
#[derive(Clone, Debug, PartialEq)]
pub enum ServerStatus {
    /// Connected, speaking `protocol`, to the server that calls itself `name` (a stdio
    /// server runs as process `pid`).
    Up {
        protocol: String,
        name: String,
        pid: Option<u32>,
    },
    /// Not connected; `error` says why. The hub keeps trying.
    Down { error: String },
}

/// One server as [`Hub::servers`] reports it.
#[derive(Clone, Debug)]
pub struct ServerReport {
    pub id: String,
    pub status: ServerStatus,
    /// The names the model sees, with the server's own name of each.
    pub tools: Vec<(String, String)>,
}

struct Slot {
    config: ServerConfig,
    generation: u64,
    session: Option<Arc<Session>>,
    tools: Vec<RemoteTool>,
    error: Option<String>,
    /// Held while connecting, so that one connection is made at a time.
    connecting: Arc<tokio::sync::Mutex<()>>,
}

type Listener = Box<dyn Fn(&[Exposed]) + Send + Sync>;

/// A tool as the model sees it.
#[derive(Clone)]
pub(crate) struct Exposed {
    pub name: String,
    pub server: String,
    pub remote: RemoteTool,
    pub timeout: Duration,
}

#[allow(deprecated)]
pub(crate) struct Inner {
    options: HubOptions,
    hooks: Hooks,
    slots: Mutex<BTreeMap<String, Slot>>,
    listeners: Mutex<Vec<Listener>>,
    notices: mpsc::UnboundedSender<(String, u64, Notice)>,
    receiver: Mutex<Option<mpsc::UnboundedReceiver<(String, u64, Notice)>>>,
    started: AtomicBool,
    stop: CancellationToken,
}

/// MCP servers as one source of tools.
///
/// ```no_run
/// # async fn demo(model: std::sync::Arc<dyn kite_core::Model>) -> Result<(), kite_mcp::Error> {
/// use kite_mcp::{Hub, HubOptions, ModelSampler, ServerConfig};
/// use std::sync::Arc;
/// let hub = Hub::with_options(HubOptions {
///     // Servers' sampling requests go to the agent's own model.
///     sampler: Some(Arc::new(ModelSampler::new(model.clone(), "gpt-5-nano"))),
///     ..HubOptions::default()
/// });
/// hub.add("files", ServerConfig::stdio("npx", ["-y", "@modelcontextprotocol/server-filesystem", "."])).await?;
/// hub.add("search", ServerConfig::http("https://mcp.example.com/mcp").bearer_token_env("SEARCH_TOKEN")).await?;
/// let agent: kite_agent::Agent = kite_agent::Agent::shared(model, "gpt-5-nano");
/// hub.bind(agent.tools()); // the agent's tools follow the servers' from now on
/// let docs = hub.read_resource("files", "file:///srv/docs/README.md").await?;
/// let prompt = hub.prompt("search", "summarize", Default::default()).await?;
/// # let _ = (docs, prompt); Ok(()) }
/// ```
#[derive(Clone)]
pub struct Hub {
    inner: Arc<Inner>,
}

impl Default for Hub {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

impl Hub {
    /// A hub with default options.
    pub fn new() -> Self {
        Self::with_options(HubOptions::default())
    }

    #[allow(deprecated)]
    pub fn with_options(options: HubOptions) -> Self {
        let (tx, rx) = mpsc::unbounded_channel();
        let roots = options
            .roots
            .iter()
            .map(|(uri, name)| {
                let mut r = Root::new(uri.clone());
                r.name = name.clone();
                r
            })
            .collect();
        Self {
            inner: Arc::new(Inner {
                hooks: Hooks {
                    roots: Arc::new(roots),
                    sampler: options.sampler.clone(),
                    elicitor: options.elicitor.clone(),
                },
                options,
                slots: Mutex::new(BTreeMap::new()),
                listeners: Mutex::new(Vec::new()),
                notices: tx,
                receiver: Mutex::new(Some(rx)),
                started: AtomicBool::new(false),
                stop: CancellationToken::new(),
            }),
        }
    }

    /// Adds server `id` and connects to it. When the first connection fails the error is
    /// returned, and the server stays in the hub, down, while the hub keeps trying.
    pub async fn add(&self, id: impl Into<String>, config: ServerConfig) -> Result<(), Error> {
        let id = id.into();
        self.inner.start();
        {
            let mut slots = self.inner.lock();
            slots.insert(
                id.clone(),
                Slot {
                    config,
                    generation: 0,
                    session: None,
                    tools: Vec::new(),
                    error: Some("connecting".into()),
                    connecting: Arc::new(tokio::sync::Mutex::new(())),
                },
            );
        }
        match self.inner.reconnect(&id, 0).await {
            Ok(_) => Ok(()),
            Err(e) => {
                self.inner.clone().keep_trying(id, 0);
                Err(e)
            }
        }
    }

    /// Removes server `id`, ending its session; its tools are retired.
    pub fn remove(&self, id: &str) -> bool {
        let removed = self.inner.lock().remove(id).is_some();
        if removed {
            self.inner.publish();
        }
        removed
    }

    /// Every server with its status and tools, by id.
    pub fn servers(&self) -> Vec<ServerReport> {
        let exposed = self.inner.exposed();
        let slots = self.inner.lock();
        slots
            .iter()
            .map(|(id, slot)| ServerReport {
                id: id.clone(),
                status: match (&slot.session, &slot.error) {
                    (Some(s), _) => ServerStatus::Up {
                        protocol: s.protocol.clone(),
                        name: s.server_name.clone(),
                        pid: s.pid,
                    },
                    (None, e) => ServerStatus::Down {
                        error: e.clone().unwrap_or_default(),
                    },
                },
                tools: exposed
                    .iter()
                    .filter(|t| &t.server == id)
                    .map(|t| (t.name.clone(), t.remote.name.clone()))
                    .collect(),
            })
            .collect()
    }

    /// The tools of every live server, as kite tools, under the names the model sees.
    pub fn tools<C: Send + Sync + 'static>(&self) -> Vec<Arc<dyn Tool<C>>> {
        self.inner
            .exposed()
            .into_iter()
            .map(|e| Arc::new(McpTool::new(Arc::downgrade(&self.inner), e)) as Arc<dyn Tool<C>>)
            .collect()
    }

    /// Keeps `set` in step with the servers: their tools are added now, replaced when a
    /// server's list changes, and retired while a server is down.
    ///
    /// The tools do not keep the hub alive: when its last handle is dropped, every session
    /// ends and the tools answer the model that their server is gone.
    pub fn bind<C: Send + Sync + 'static>(&self, set: &ToolSet<C>) {
        let set = set.clone();
        let weak = Arc::downgrade(&self.inner);
        let added: Mutex<HashSet<String>> = Mutex::new(HashSet::new());
        let listener = move |exposed: &[Exposed]| {
            let mut added = added.lock().unwrap_or_else(|e| e.into_inner());
            let now: HashSet<String> = exposed.iter().map(|e| e.name.clone()).collect();
            for gone in added.difference(&now) {
                set.remove(gone);
            }
            for e in exposed {
                set.add_arc(Arc::new(McpTool::new(weak.clone(), e.clone())));
            }
            *added = now;
        };
        listener(&self.inner.exposed());
        self.inner
            .listeners
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(Box::new(listener));
    }

    /// Calls tool `tool` (the server's own name) on server `server` with `arguments`:
    /// reconnects and retries once when the server was lost. The allow and reject lists
    /// shape what the model is offered, not what the program may call.
    pub async fn call(
        &self,
        server: &str,
        tool: &str,
        arguments: serde_json::Value,
    ) -> Result<CallResult, Error> {
        let timeout = self.inner.timeout_of(server)?;
        self.inner
            .call(server, tool, arguments, timeout, &CancellationToken::new())
            .await
    }

    /// The resources server `server` offers.
    pub async fn resources(&self, server: &str) -> Result<Vec<Resource>, Error> {
        self.inner
            .with_session(server, |s| async move { s.resources(server).await })
            .await
    }

    /// Reads resource `uri` from server `server`.
    pub async fn read_resource(
        &self,
        server: &str,
        uri: &str,
    ) -> Result<Vec<ResourceContent>, Error> {
        self.inner
            .with_session(
                server,
                |s| async move { s.read_resource(server, uri).await },
            )
            .await
    }

    /// The prompts server `server` offers.
    pub async fn prompts(&self, server: &str) -> Result<Vec<Prompt>, Error> {
        self.inner
            .with_session(server, |s| async move { s.prompts(server).await })
            .await
    }

    /// Prompt `name` of server `server`, filled in with `arguments` (strings by name).
    pub async fn prompt(
        &self,
        server: &str,
        name: &str,
        arguments: serde_json::Map<String, serde_json::Value>,
    ) -> Result<PromptMessages, Error> {
        let arguments = &arguments;
        self.inner
            .with_session(server, |s| async move {
                s.prompt(server, name, arguments).await
            })
            .await
    }

    /// Ends every session and waits until the servers have gone: each is given a few
    /// seconds to exit by itself (its stdin closed, then SIGTERM), then what is left of a
    /// stdio server's process group is killed. Prefer it to [`shutdown`](Self::shutdown)
    /// before a program exits.
    pub async fn close(&self) {
        let sessions: Vec<Arc<Session>> = self
            .inner
            .lock()
            .values()
            .filter_map(|s| s.session.clone())
            .collect();
        self.shutdown();
        futures_util::future::join_all(sessions.iter().map(|s| s.close())).await;
    }

    /// Ends every session at once, without waiting for the servers to go.
    pub fn shutdown(&self) {
        self.inner.stop.cancel();
        for slot in self.inner.lock().values_mut() {
            slot.session = None;
            slot.error = Some("shut down".into());
        }
    }
}

impl Inner {
    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, Slot>> {
        self.slots.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn timeout_of(&self, server: &str) -> Result<Duration, Error> {
        let slots = self.lock();
        let slot = slots
            .get(server)
            .ok_or_else(|| Error::UnknownServer(server.to_owned()))?;
        Ok(slot.config.timeout.unwrap_or(self.options.call_timeout))
    }

    /// Starts the loops that follow notices and ping servers, once.
    fn start(self: &Arc<Self>) {
        if self.started.swap(true, Ordering::SeqCst) {
            return;
        }
        let Some(mut rx) = self
            .receiver
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
        else {
            return;
        };
        let weak = Arc::downgrade(self);
        let stop = self.stop.clone();
        tokio::spawn(async move {
            loop {
                let (server, generation, notice) = tokio::select! {
                    n = rx.recv() => match n { Some(n) => n, None => return },
                    _ = stop.cancelled() => return,
                };
                let Some(inner) = weak.upgrade() else { return };
                inner.notice(server, generation, notice).await;
            }
        });
        let weak = Arc::downgrade(self);
        let stop = self.stop.clone();
        let every = self.options.ping_interval;
        tokio::spawn(async move {
            let mut ticks = tokio::time::interval(every);
            ticks.tick().await;
            loop {
                tokio::select! {
                    _ = ticks.tick() => {}
                    _ = stop.cancelled() => return,
                }
                let Some(inner) = weak.upgrade() else { return };
                inner.ping_all().await;
            }
        });
    }

    async fn notice(self: &Arc<Self>, server: String, generation: u64, notice: Notice) {
        let current = {
            let slots = self.lock();
            match slots.get(&server) {
                Some(s) if s.generation == generation => s.session.clone(),
                _ => return,
            }
        };
        match notice {
            Notice::ToolsChanged => {
                let Some(session) = current else { return };
                let listed =
                    tokio::time::timeout(self.options.call_timeout, session.tools(&server));
                match listed.await.unwrap_or_else(|_| {
                    Err(Error::Timeout {
                        server: server.clone(),
                        what: "tools/list".into(),
                        seconds: self.options.call_timeout.as_secs(),
                    })
                }) {
                    Ok(tools) => {
                        if let Some(slot) = self.lock().get_mut(&server)
                            && slot.generation == generation
                        {
                            slot.tools = tools;
                        }
                        self.publish();
                    }
                    Err(e) => tracing::warn!(server, error = %e, "cannot list tools again"),
                }
            }
            Notice::Closed(why) => {
                self.lost(&server, generation, format!("the session ended: {why}"))
            }
        }
    }

    /// Server `server` (session `generation`) is gone: retire its tools, try again later.
    fn lost(self: &Arc<Self>, server: &str, generation: u64, why: String) {
        {
            let mut slots = self.lock();
            let Some(slot) = slots.get_mut(server) else {
                return;
            };
            if slot.generation != generation || slot.session.is_none() {
                return;
            }
            slot.session = None;
            slot.error = Some(why);
        }
        self.publish();
        self.clone().keep_trying(server.to_owned(), generation);
    }

    async fn ping_all(self: &Arc<Self>) {
        let live: Vec<(String, u64, Arc<Session>)> = self
            .lock()
            .iter()
            .filter_map(|(id, s)| Some((id.clone(), s.generation, s.session.clone()?)))
            .collect();
        for (id, generation, session) in live {
            if let Err(e) = session.ping(&id, self.options.ping_timeout).await {
                tracing::warn!(server = %id, error = %e, "ping failed");
                self.lost(&id, generation, format!("ping failed: {e}"));
            }
        }
    }

    /// Reconnects in the background with backoff until it works, the server is removed or
    /// the hub is gone.
    fn keep_trying(self: Arc<Self>, server: String, generation: u64) {
        let weak = Arc::downgrade(&self);
        let stop = self.stop.clone();
        let (mut delay, max) = (self.options.reconnect_initial, self.options.reconnect_max);
        drop(self);
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    _ = tokio::time::sleep(delay) => {}
                    _ = stop.cancelled() => return,
                }
                let Some(inner) = weak.upgrade() else { return };
                let seen = match inner.lock().get(&server) {
                    None => return,
                    Some(s) if s.session.is_some() => return,
                    Some(s) => s.generation.max(generation),
                };
                match inner.reconnect(&server, seen).await {
                    Ok(_) => return,
                    Err(e) => {
                        tracing::debug!(server, error = %e, ?delay, "reconnect failed");
                        delay = (delay * 2).min(max);
                    }
                }
            }
        });
    }

    /// A live session with `server`: a new one unless someone made one after `seen`.
    async fn reconnect(self: &Arc<Self>, server: &str, seen: u64) -> Result<Arc<Session>, Error> {
        let lock = {
            let slots = self.lock();
            let slot = slots
                .get(server)
                .ok_or_else(|| Error::UnknownServer(server.to_owned()))?;
            slot.connecting.clone()
        };
        let _held = lock.lock().await;
        let (config, generation) = {
            let mut slots = self.lock();
            let slot = slots
                .get_mut(server)
                .ok_or_else(|| Error::UnknownServer(server.to_owned()))?;
            if slot.generation > seen
                && let Some(s) = &slot.session
            {
                return Ok(s.clone());
            }
            slot.session = None;
            slot.generation += 1;
            (slot.config.clone(), slot.generation)
        };
        let result = Session::connect(
            server,
            &config,
            generation,
            self.hooks.clone(),
            self.notices.clone(),
            config
                .startup_timeout
                .unwrap_or(self.options.startup_timeout),
        )
        .await;
        let session = {
            let mut slots = self.lock();
            let slot = slots
                .get_mut(server)
                .ok_or_else(|| Error::UnknownServer(server.to_owned()))?;
            match result {
                Ok((session, tools)) => {
                    tracing::info!(server, protocol = %session.protocol, tools = tools.len(), "MCP server connected");
                    let session = Arc::new(session);
                    slot.session = Some(session.clone());
                    slot.tools = tools;
                    slot.error = None;
                    session
                }
                Err(e) => {
                    slot.error = Some(e.to_string());
                    return Err(e);
                }
            }
        };
        self.publish();
        Ok(session)
    }

    /// Runs `op` on `server`'s session; when the server was lost, reconnects and runs it
    /// once more.
    async fn with_session<T, F, Fut>(self: &Arc<Self>, server: &str, op: F) -> Result<T, Error>
    where
        F: Fn(Arc<Session>) -> Fut,
        Fut: std::future::Future<Output = Result<T, Error>>,
    {
        let (session, generation) = {
            let slots = self.lock();
            let slot = slots
                .get(server)
                .ok_or_else(|| Error::UnknownServer(server.to_owned()))?;
            (slot.session.clone(), slot.generation)
        };
        let session = match session {
            Some(s) => s,
            None => self.reconnect(server, generation).await?,
        };
        match op(session).await {
            Err(e) if e.is_disconnect() => {
                tracing::warn!(server, error = %e, "lost the connection; reconnecting");
                let generation = self.lock().get(server).map_or(0, |s| s.generation);
                op(self.reconnect(server, generation).await?).await
            }
            other => other,
        }
    }

    /// Calls a tool; when the server was lost, reconnects and retries once.
    pub(crate) async fn call(
        self: &Arc<Self>,
        server: &str,
        tool: &str,
        arguments: serde_json::Value,
        timeout: Duration,
        cancel: &CancellationToken,
    ) -> Result<CallResult, Error> {
        self.with_session(server, |s| {
            let arguments = arguments.clone();
            async move { s.call(server, tool, arguments, timeout, cancel).await }
        })
        .await
    }

    /// The tools of live servers under the names the model sees.
    fn exposed(&self) -> Vec<Exposed> {
        let slots = self.lock();
        let mut offered: Vec<(String, &ServerConfig, &RemoteTool, String)> = Vec::new();
        for (id, slot) in slots.iter().filter(|(_, s)| s.session.is_some()) {
            for t in slot.tools.iter().filter(|t| slot.config.offers(&t.name)) {
                offered.push((id.clone(), &slot.config, t, sanitize(&t.name)));
            }
        }
        let mut count: HashMap<&str, usize> = HashMap::new();
        for o in &offered {
            *count.entry(o.3.as_str()).or_default() += 1;
        }
        let mut taken = HashSet::new();
        let mut out = Vec::new();
        for (id, config, remote, base) in &offered {
            let prefixed = match self.options.prefixing {
                Prefixing::Always => true,
                Prefixing::OnClash => count[base.as_str()] > 1,
                Prefixing::Never => false,
            };
            let name = if prefixed {
                let prefix = config.prefix.as_deref().unwrap_or(id);
                sanitize(&format!("{prefix}_{base}"))
            } else {
                base.clone()
            };
            if !taken.insert(name.clone()) {
                tracing::warn!(server = %id, tool = %remote.name, "tool name taken; not offered");
                continue;
            }
            out.push(Exposed {
                name,
                server: id.clone(),
                remote: (*remote).clone(),
                timeout: config.timeout.unwrap_or(self.options.call_timeout),
            });
        }
        out
    }

    /// Tells every bound tool set what the tools are now.
    fn publish(&self) {
        let exposed = self.exposed();
        for l in self
            .listeners
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
        {
            l(&exposed);
        }
    }
}

/// A name every provider accepts: letters, digits, `_` and `-`, at most 64 characters.
fn sanitize(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(64)
        .collect()
}

pub(crate) type WeakInner = Weak<Inner>;
