//! The supervisor: what keeps a hub's servers alive. It follows each session's notices (a
//! changed tool list, a closed session), pings live servers, reconnects lost ones with
//! backoff, and retries a call once when its server was lost on the way.

use crate::config::ServerConfig;
use crate::error::Error;
use crate::handler::{Answerers, Notice};
use crate::naming::{self, Exposed, Offered};
use crate::options::HubOptions;
use crate::session::{RemoteTool, Session};
use crate::tool::{CallFuture, Caller};
use std::collections::{BTreeMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// One server: its config, and its live session and tools, if any.
pub(crate) struct Slot {
    pub config: ServerConfig,
    /// Counts sessions: a notice from an older one is stale.
    pub generation: u64,
    pub session: Option<Arc<Session>>,
    pub tools: Vec<RemoteTool>,
    /// Its tools are those a program kept from an earlier run, offered while its first
    /// connection is under way (the first call waits for it).
    pub known: bool,
    pub error: Option<String>,
    /// Held while connecting, so that one connection is made at a time.
    pub connecting: Arc<tokio::sync::Mutex<()>>,
}

/// A bound tool set, told when the tools change.
pub(crate) type Listener = Box<dyn Fn(&Inner) + Send + Sync>;

/// What the hub's handles share: the servers' slots, and the supervisor's state.
pub(crate) struct Inner {
    pub options: HubOptions,
    pub answerers: Answerers,
    pub slots: Mutex<BTreeMap<String, Slot>>,
    pub listeners: Mutex<Vec<Listener>>,
    pub notices: mpsc::UnboundedSender<(String, u64, Notice)>,
    pub receiver: Mutex<Option<mpsc::UnboundedReceiver<(String, u64, Notice)>>>,
    pub started: AtomicBool,
    pub stop: CancellationToken,
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

impl Inner {
    pub(crate) fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, Slot>> {
        self.slots.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn timeout_of(&self, server: &str) -> Result<Duration, Error> {
        let slots = self.lock();
        let slot = slots
            .get(server)
            .ok_or_else(|| Error::UnknownServer(server.to_owned()))?;
        Ok(slot.config.timeout.unwrap_or(self.options.call_timeout))
    }

    /// Starts the loops that follow notices and ping servers, once.
    pub(crate) fn start(self: &Arc<Self>) {
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
                let listed = tokio::time::timeout(self.options.call_timeout, session.tools());
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
            if let Err(e) = session.ping(self.options.ping_timeout).await {
                tracing::warn!(server = %id, error = %e, "ping failed");
                self.lost(&id, generation, format!("ping failed: {e}"));
            }
        }
    }

    /// Reconnects in the background with backoff until it works, the server is removed or
    /// the hub is gone.
    pub(crate) fn keep_trying(self: Arc<Self>, server: String, generation: u64) {
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
    pub(crate) async fn reconnect(
        self: &Arc<Self>,
        server: &str,
        seen: u64,
    ) -> Result<Arc<Session>, Error> {
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
            self.answerers.clone(),
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
                    slot.known = false;
                    slot.error = None;
                    session
                }
                Err(e) => {
                    slot.error = Some(e.to_string());
                    // Tools known from before are no longer offered: the server is down.
                    if std::mem::take(&mut slot.known) {
                        drop(slots);
                        self.publish();
                    }
                    return Err(e);
                }
            }
        };
        self.publish();
        Ok(session)
    }

    /// Runs `op` on `server`'s session; when the server was lost, reconnects and runs it
    /// once more.
    pub(crate) async fn with_session<T, F, Fut>(
        self: &Arc<Self>,
        server: &str,
        op: F,
    ) -> Result<T, Error>
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

    /// The tools of live servers under the names the model sees, beside tools already
    /// named `reserved` (a tool set's own tools).
    pub(crate) fn exposed(&self, reserved: &HashSet<String>) -> Vec<Exposed> {
        let slots = self.lock();
        let offered = slots
            .iter()
            .filter(|(_, s)| s.session.is_some() || s.known)
            .flat_map(|(id, slot)| {
                let timeout = slot.config.timeout.unwrap_or(self.options.call_timeout);
                let prefix = slot.config.prefix.as_deref().unwrap_or(id);
                slot.tools
                    .iter()
                    .filter(|t| slot.config.offers(&t.name))
                    .map(move |t| Offered {
                        server: id,
                        prefix,
                        remote: t,
                        timeout,
                    })
            })
            .collect();
        naming::expose(offered, self.options.prefixing, reserved)
    }

    /// Tells every bound tool set what the tools are now.
    pub(crate) fn publish(&self) {
        for l in self
            .listeners
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
        {
            l(self);
        }
    }
}

impl Caller for Inner {
    fn call<'a>(
        self: Arc<Self>,
        server: &'a str,
        tool: &'a str,
        arguments: serde_json::Value,
        timeout: Duration,
        cancel: &'a CancellationToken,
    ) -> CallFuture<'a> {
        Box::pin(async move {
            if let Some(sampler) = &self.answerers.sampler {
                sampler.call_begins(server);
            }
            self.with_session(server, |s| {
                let arguments = arguments.clone();
                async move { s.call(tool, arguments, timeout, cancel).await }
            })
            .await
        })
    }
}
