//! The hub: many servers at once, their tools under one set of names, kept alive. This
//! file is its public face and options; the [supervisor](crate::supervisor) keeps the
//! servers alive and [naming](crate::naming) names their tools.
//!
//! Each server has an id and a slot holding its live session (if any) and the tools it last
//! listed. A session that ends (the process exits, the connection drops, a ping goes
//! unanswered) retires the server's tools at once and starts reconnecting with backoff; a
//! call that finds its server gone reconnects and is retried once.

use crate::catalog::{Prompt, PromptMessages, Resource, ResourceContent};
use crate::config::ServerConfig;
use crate::error::Error;
use crate::handler::Answerers;
pub use crate::naming::Prefixing;
pub use crate::options::HubOptions;
use crate::session::{CallResult, RemoteTool, Session};
use crate::supervisor::{Inner, Slot};
use crate::tool::{Caller, McpTool};
use kite_agent::{Tool, ToolSet};
#[allow(deprecated)] // current in protocol 2025-11-25, which kite speaks
use rmcp::model::Root;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex, Weak};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// A server's state, as [`Hub::servers`] reports it.
#[derive(Clone, Debug, PartialEq)]
pub enum ServerStatus {
    /// Connected, speaking `protocol`, to the server that calls itself `name` (a stdio
    /// server runs as process `pid`).
    Up {
        /// The MCP protocol version agreed in the handshake.
        protocol: String,
        /// The name the server gives itself.
        name: String,
        /// The process id of a stdio server.
        pid: Option<u32>,
    },
    /// Being connected for the first time, its tools offered as known from before
    /// ([`Hub::add_known`]).
    Starting,
    /// Not connected; `error` says why. The hub keeps trying.
    Down {
        /// Why the server is not connected.
        error: String,
    },
}

/// One server as [`Hub::servers`] reports it.
#[derive(Clone, Debug)]
pub struct ServerReport {
    /// The id the server was added under.
    pub id: String,
    /// Whether it is connected, and to what.
    pub status: ServerStatus,
    /// The names the model sees, with the server's own name of each.
    pub tools: Vec<(String, String)>,
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

impl Hub {
    /// A hub with default options.
    pub fn new() -> Self {
        Self::with_options(HubOptions::default())
    }

    /// A hub with `options`.
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
                answerers: Answerers {
                    roots: Arc::new(roots),
                    sampler: options
                        .sampler
                        .clone()
                        .map(|s| Arc::new(crate::sampling::Limited::new(s, options.sampling))),
                    elicitor: options.elicitor.clone(),
                    logins: Arc::new(crate::oauth::Logins::new(options.oauth.clone())),
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
                    known: false,
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

    /// Adds server `id` with the tools it listed before (kept by the program from an earlier
    /// [`listed`](Self::listed)), and connects to it in the background: its tools are
    /// offered at once, and a call to one waits for the connection. Once connected, the
    /// server's own list replaces the one given; if connecting fails its tools are retired
    /// and the hub keeps trying, as [`add`](Self::add) does.
    pub fn add_known(&self, id: impl Into<String>, config: ServerConfig, tools: Vec<RemoteTool>) {
        let id = id.into();
        self.inner.start();
        self.inner.lock().insert(
            id.clone(),
            Slot {
                config,
                generation: 0,
                session: None,
                tools,
                known: true,
                error: None,
                connecting: Arc::new(tokio::sync::Mutex::new(())),
            },
        );
        self.inner.publish();
        let weak = Arc::downgrade(&self.inner);
        let stop = self.inner.stop.clone();
        tokio::spawn(async move {
            let Some(inner) = weak.upgrade() else { return };
            let connected = tokio::select! {
                c = inner.reconnect(&id, 0) => c,
                // Closing the hub drops a connection under way (a child is killed).
                _ = stop.cancelled() => return,
            };
            if let Err(e) = connected {
                tracing::debug!(server = %id, error = %e, "first connection failed");
                inner.keep_trying(id, 0);
            }
        });
    }

    /// The tools server `id` lists, as it listed them, while it is connected: what a
    /// program may keep to give [`add_known`](Self::add_known) next time.
    pub fn listed(&self, id: &str) -> Option<Vec<RemoteTool>> {
        let slots = self.inner.lock();
        let slot = slots.get(id)?;
        slot.session.as_ref().map(|_| slot.tools.clone())
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
        let exposed = self.inner.exposed(&HashSet::new());
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
                    (None, _) if slot.known => ServerStatus::Starting,
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
            .exposed(&HashSet::new())
            .into_iter()
            .map(|e| Arc::new(McpTool::new(self.caller(), e)) as Arc<dyn Tool<C>>)
            .collect()
    }

    /// What a tool holds to call through the hub without keeping it alive.
    fn caller(&self) -> Weak<dyn Caller> {
        let weak: Weak<Inner> = Arc::downgrade(&self.inner);
        weak
    }

    /// Keeps `set` in step with the servers: their tools are added now, replaced when a
    /// server's list changes, and retired while a server is down. A server's tool named
    /// like one the set already holds (a built-in tool, say) never replaces it: the clash
    /// is settled by the [`Prefixing`] policy, as between servers.
    ///
    /// The tools do not keep the hub alive: when its last handle is dropped, every session
    /// ends and the tools answer the model that their server is gone.
    pub fn bind<C: Send + Sync + 'static>(&self, set: &ToolSet<C>) {
        let set = set.clone();
        let caller = self.caller();
        // The tools this binding put in the set, by name: a tool of the same name that is
        // not one of these is the set's own, and is never replaced or removed.
        let added: Mutex<HashMap<String, Arc<dyn Tool<C>>>> = Mutex::new(HashMap::new());
        let listener = move |inner: &Inner| {
            let mut added = added.lock().unwrap_or_else(|e| e.into_inner());
            let ours = |name: &str| {
                let (Some(mine), Some(now)) = (added.get(name), set.get(name)) else {
                    return false;
                };
                Arc::ptr_eq(mine, &now)
            };
            let reserved: HashSet<String> = set.names().into_iter().filter(|n| !ours(n)).collect();
            let exposed = inner.exposed(&reserved);
            let now: HashSet<&str> = exposed.iter().map(|e| e.name.as_str()).collect();
            for gone in added.keys().filter(|n| !now.contains(n.as_str())) {
                if ours(gone) {
                    set.remove(gone);
                }
            }
            let mut next = HashMap::new();
            for e in exposed {
                let name = e.name.clone();
                let tool: Arc<dyn Tool<C>> = Arc::new(McpTool::new(caller.clone(), e));
                set.add_arc(tool.clone());
                next.insert(name, tool);
            }
            *added = next;
        };
        listener(&self.inner);
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
        let cancel = CancellationToken::new();
        Caller::call(
            self.inner.clone(),
            server,
            tool,
            arguments,
            timeout,
            &cancel,
        )
        .await
    }

    /// The resources server `server` offers.
    pub async fn resources(&self, server: &str) -> Result<Vec<Resource>, Error> {
        self.inner
            .with_session(server, |s| async move { s.resources().await })
            .await
    }

    /// Reads resource `uri` from server `server`.
    pub async fn read_resource(
        &self,
        server: &str,
        uri: &str,
    ) -> Result<Vec<ResourceContent>, Error> {
        self.inner
            .with_session(server, |s| async move { s.read_resource(uri).await })
            .await
    }

    /// The prompts server `server` offers.
    pub async fn prompts(&self, server: &str) -> Result<Vec<Prompt>, Error> {
        self.inner
            .with_session(server, |s| async move { s.prompts().await })
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
            .with_session(server, |s| async move { s.prompt(name, arguments).await })
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
