//! `kite serve`: an OpenAI- and Anthropic-compatible gateway in front of any kite model.
//!
//! `POST /v1/chat/completions` (whole and streamed, tools, tool choice, structured output,
//! `stream_options.include_usage`), `POST /v1/responses` (stored with a store), `POST /v1/messages`,
//! `GET /v1/models`, `GET /v1/usage` (what the caller's key has used) and `GET /health`,
//! on axum (`handlers.rs`), and a web chat at `/` (`web.rs`). A client's request is decoded with kite-wire's
//! codecs run the other way (`openai_chat::serve`, `openai_responses::serve`,
//! `anthropic::serve`), answered by a kite
//! [`Model`] on the route its model names (or that route's fallbacks), and encoded back in
//! the client's format; errors come back in the client's API's shape with the upstream's
//! status, never a provider key (`errors.rs`).
//!
//! Client keys are kept as SHA-256 digests and compared in constant time, each with its
//! limits (`keys.rs`), and checked before a body is read (`middleware.rs`); with none, the
//! gateway must listen on loopback only ([`Gateway::check_addr`]) and asks every caller
//! for a token of its own ([`Gateway::token`], [`new_token`]), unless told not to.
//!
//! A route may carry its own tools (built-in, MCP servers', skills'): for clients that send
//! none, the gateway runs the tool loop itself and answers with the text of each step,
//! never a tool call (`agentic.rs`).
//!
//! Replicas share what must be shared ([`Gateway::fleet`], [`Gateway::redis`]): keys and
//! teams made without a restart (`registry.rs`, `admin.rs`), the spend ledger
//! (`ledger.rs`), stored Responses (`stored.rs`) in the store; limits (`limits.rs`) and the
//! response cache (`cache.rs`) in Redis.
//!
//! This file runs a little past 450 lines: a third of it is this documentation, with the
//! crate's example.
//!
//! The gateway's routes answer in process too: here one route over
//! `kite_testkit::ScriptedModel`, one client key, and a Chat Completions request sent
//! straight to the router:
//!
//! ```
//! use axum::{body::Body, http::{Request, StatusCode}};
//! use kite_serve::{Gateway, Route, router};
//! use kite_testkit::ScriptedModel;
//! use std::sync::Arc;
//! use tower::ServiceExt;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let model = ScriptedModel::new().text("Hello from kite.");
//! let route = Route::new("assistant", Arc::new(model.clone()), "small-model");
//! let gateway = Arc::new(Gateway::new(vec![route], false).key("sk-client-key"));
//! let request = Request::post("/v1/chat/completions")
//!     .header("authorization", "Bearer sk-client-key")
//!     .header("content-type", "application/json")
//!     .body(Body::from(r#"{"model": "assistant", "messages": [{"role": "user", "content": "Hi"}]}"#))?;
//! let response = router(gateway.clone()).oneshot(request).await?;
//! assert_eq!(response.status(), StatusCode::OK);
//! let body = axum::body::to_bytes(response.into_body(), usize::MAX).await?;
//! let answer: serde_json::Value = serde_json::from_slice(&body)?;
//! assert_eq!(answer["choices"][0]["message"]["content"], "Hello from kite.");
//! assert_eq!(model.requests()[0].model, "small-model"); // the route's upstream name
//! assert_eq!(gateway.key_usage(0).map(|u| (u.requests, u.tokens)), Some((1, 15)));
//! # Ok(()) }
//! ```

mod admin;
mod admission;
mod agentic;
mod allowance;
mod answer;
mod cache;
mod count;
mod encoders;
mod errors;
mod fleet;
mod handlers;
mod hosted;
mod ids;
mod keys;
mod ledger;
mod limits;
mod listen;
mod meter;
mod metrics;
mod middleware;
mod models;
mod ops;
mod pending;
mod registry;
mod stored;
mod text;
mod web;

pub use admin::{Admin, AdminError, KEY_PREFIX, KeyView, NewKey, NewTeam, period};
pub use agentic::{KitMaker, RequestKit};
pub use allowance::{MAX_DECODING, MAX_STORED, Sizes};
pub use cache::{CacheSettings, Scope as CacheScope};
pub use hosted::HostedTools;
pub use ids::new_token;
pub use keys::KeyUsage;
use keys::{Caller, Keys};
pub use kite_agent::{Pricer, ToolSet};
pub use kite_store::Store;

/// Makes the store of one owner's (a client key's) conversations.
pub type Conversations = Arc<dyn Fn(&str) -> Arc<dyn Store> + Send + Sync>;
pub use ledger::FLUSH as LEDGER_FLUSH;
pub use limits::{Limits, Unavailable};
pub use listen::{MAX_PER_ADDRESS, MAX_STREAMS, allow_all_files, bind, max_connections};

use axum::Router;
use axum::http::StatusCode;
use axum::routing::{get, post};
use errors::{Api, Kind, error};
use handlers::{anthropic, chat};
use kite_core::Model;
use middleware::{gate, log_request};
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// The largest request body read (16 MiB).
pub const MAX_BODY: usize = 16 * 1024 * 1024;

/// A model served under a public name.
pub struct Route {
    /// The name clients ask for.
    pub name: String,
    /// The model that answers.
    pub model: Arc<dyn Model>,
    /// The name the model is asked for upstream.
    pub upstream: String,
    /// Routes tried in turn when this one fails before answering (by name).
    pub fallbacks: Vec<String>,
    /// Tools the gateway runs itself for clients that send none of their own (built-in,
    /// MCP servers'): such clients never see a tool call.
    pub tools: ToolSet,
    /// Said to the model before the client's own system prompt when the gateway runs the
    /// route's tools.
    pub instructions: Option<String>,
    /// Tools made afresh for each request that runs the route's tools (skills, whose
    /// workspace is the request's own).
    pub kit: Option<KitMaker>,
    /// How many model calls one request may make when the gateway runs the route's tools.
    pub max_turns: u32,
    /// The tool choice when the gateway runs the route's tools and the client sets none
    /// (the small local model is asked to call one first, or it answers from guesswork).
    pub tool_choice: Option<kite_core::ToolChoice>,
}

impl Route {
    /// `model` served as `name`, asked for as `upstream`, with no fallbacks or tools.
    pub fn new(
        name: impl Into<String>,
        model: Arc<dyn Model>,
        upstream: impl Into<String>,
    ) -> Self {
        Self {
            name: name.into(),
            model,
            upstream: upstream.into(),
            fallbacks: Vec::new(),
            tools: ToolSet::new(),
            instructions: None,
            kit: None,
            max_turns: agentic::MAX_TURNS,
            tool_choice: None,
        }
    }

    /// Whether the gateway runs tools of its own on this route.
    fn has_tools(&self) -> bool {
        self.kit.is_some() || !self.tools.names().is_empty()
    }
}

/// What the gateway serves, and to whom.
pub struct Gateway {
    pub(crate) routes: Vec<Route>,
    /// With `catch_all`, a model name no route names goes to the first route, under the
    /// client's own name.
    catch_all: bool,
    pub(crate) keys: Keys,
    ids: AtomicU64,
    pub(crate) pricer: Option<Pricer>,
    /// Where the web chat keeps its conversations when no key is set (none: the chat
    /// keeps none).
    store: Option<Arc<dyn Store>>,
    /// How long a client may take to send a request's headers, and its body.
    pub(crate) deadlines: Deadlines,
    /// How many connections are served at once.
    connections: usize,
    /// The web chat's runs under way, and what ends them and every stream early.
    pub(crate) runs: tokio_util::task::TaskTracker,
    pub(crate) stop: tokio_util::sync::CancellationToken,
    /// Set once asked to stop: new requests are refused with 503.
    pub(crate) draining: std::sync::atomic::AtomicBool,
    /// What no answer, tool result or stored turn may carry (the upstreams' keys, tokens
    /// as they are refreshed): hidden as it streams.
    pub(crate) secrets: kite_core::redact::Secrets,
    /// With `catch_all`, the names `GET /v1/models` lists (the upstream's own), when known.
    pub(crate) listed: Vec<String>,
    /// What becomes of hosted tools a route's provider cannot run.
    hosted: HostedTools,
    /// What it has served, for `GET /metrics`.
    pub(crate) metrics: metrics::Metrics,
    /// Where rate limits are held: here, or in Redis for a fleet.
    pub(crate) limiter: limits::Limiter,
    /// Where answered requests are written down, with a store.
    pub(crate) ledger: Option<ledger::Ledger>,
    pub(crate) ledger_task: std::sync::Mutex<Option<tokio::task::JoinHandle<()>>>,
    /// Key and team management, with a store.
    pub(crate) admin: Option<Admin>,
    /// The digests of the keys that may manage keys and teams (`/v1/admin`).
    pub(crate) admin_keys: Vec<[u8; 32]>,
    /// Ends the tasks that read and write the store, once serving is over.
    pub(crate) background: tokio_util::sync::CancellationToken,
    /// The background responses this replica runs.
    pub(crate) background_runs: Arc<stored::Runs>,
    /// The Redis the fleet shares, when set.
    pub(crate) redis_url: Option<String>,
    /// The response cache, when on.
    pub(crate) cache: Option<Arc<cache::Cache>>,
    /// What a key that sets none may send and keep.
    pub(crate) sizes: Sizes,
    /// The bytes of request bodies decoded at once.
    pub(crate) decoding: allowance::Decoding,
}

/// How long a client may take to send its request: a client that sends it a byte at a
/// time holds a connection no longer than this.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Deadlines {
    /// For a new connection's first byte (default 5 s).
    pub first_byte: std::time::Duration,
    /// For the headers, and for a kept-alive connection's next request (default 30 s).
    pub headers: std::time::Duration,
    /// For the body, once the headers are in (default 60 s).
    pub body: std::time::Duration,
    /// Of silence in a streamed answer before it says it is alive (default 15 s): a
    /// thought or a large call held until whole can take minutes, and a proxy between
    /// may give up first.
    pub keep_alive: std::time::Duration,
}

impl Default for Deadlines {
    fn default() -> Self {
        Self {
            first_byte: std::time::Duration::from_secs(5),
            headers: std::time::Duration::from_secs(30),
            body: std::time::Duration::from_secs(60),
            keep_alive: std::time::Duration::from_secs(15),
        }
    }
}

impl Gateway {
    /// A gateway serving `routes`; with `catch_all`, any other model name goes to the first
    /// route (as `kite serve` does with no routes configured).
    pub fn new(routes: Vec<Route>, catch_all: bool) -> Self {
        Self {
            routes,
            catch_all,
            keys: Keys::default(),
            ids: AtomicU64::new(0),
            pricer: None,
            store: None,
            deadlines: Deadlines::default(),
            connections: listen::max_connections(),
            runs: tokio_util::task::TaskTracker::new(),
            stop: tokio_util::sync::CancellationToken::new(),
            draining: std::sync::atomic::AtomicBool::new(false),
            secrets: kite_core::redact::Secrets::new(),
            listed: Vec::new(),
            hosted: HostedTools::default(),
            metrics: metrics::Metrics::default(),
            limiter: limits::Limiter::default(),
            ledger: None,
            ledger_task: std::sync::Mutex::new(None),
            admin: None,
            admin_keys: Vec::new(),
            background: tokio_util::sync::CancellationToken::new(),
            background_runs: Arc::default(),
            redis_url: None,
            cache: None,
            sizes: Sizes {
                max_body: None,
                max_stored: Some(allowance::MAX_STORED),
            },
            decoding: allowance::Decoding::new(MAX_DECODING),
        }
    }

    /// What a key that sets none of its own may send (its largest body, at most
    /// [`MAX_BODY`]) and keep (its stored responses' bytes together).
    pub fn sizes(mut self, sizes: Sizes) -> Self {
        self.sizes = sizes.or(self.sizes);
        self
    }

    /// The most bytes of request bodies decoded at once (default [`MAX_DECODING`]).
    pub fn max_decoding(mut self, bytes: usize) -> Self {
        self.decoding = allowance::Decoding::new(bytes);
        self
    }

    /// The model names `GET /v1/models` lists when every name goes to the first route (the
    /// upstream's own list, say), in place of the route's name.
    pub fn listed(mut self, names: Vec<String>) -> Self {
        self.listed = names;
        self
    }

    /// Hides `secrets` (the upstreams' own keys, say, and every one added to the list
    /// later) in every answer before it reaches a client, even one a model splits between
    /// two deltas, and in what routes' tools give back before the model sees it.
    pub fn secrets(mut self, secrets: kite_core::redact::Secrets) -> Self {
        self.secrets = secrets;
        self
    }

    /// Ends every answer under way: streams with an error event in their API's shape (and
    /// the stream's proper end), the web chat's as if their pages had stopped them (each
    /// keeps what it said); waits until the web chat's are kept. For a server that cannot
    /// wait longer.
    pub async fn wind_down(&self) {
        self.stop.cancel();
        self.runs.close();
        self.runs.wait().await;
    }

    /// Gives clients `deadlines` to send their requests in.
    pub fn deadlines(mut self, deadlines: Deadlines) -> Self {
        self.deadlines = deadlines;
        self
    }

    /// Serves at most `n` connections at once (default: [`max_connections`]); past them,
    /// the idlest goes to make room for a new one.
    pub fn connections(mut self, n: usize) -> Self {
        self.connections = n;
        self
    }

    /// Prices answers whose provider does not say what they cost, for per-key usage.
    pub fn pricer(mut self, pricer: Pricer) -> Self {
        self.pricer = Some(pricer);
        self
    }

    /// Keeps the web chat's conversations in `store` when no key is set (one user, on
    /// loopback).
    pub fn store(mut self, store: Arc<dyn Store>) -> Self {
        self.store = Some(store);
        self
    }

    /// Keeps the web chat's conversations of `key` (given before) in `store`: each key sees
    /// its own conversations and no other's. False when `key` is not one of the gateway's.
    pub fn key_store(&mut self, key: &str, store: Arc<dyn Store>) -> bool {
        self.keys.set_store(key, store)
    }

    /// Where the web chat keeps `caller`'s conversations.
    pub(crate) fn store_for(&self, caller: &Caller) -> Option<Arc<dyn Store>> {
        match caller {
            Caller::Anyone => self.store.clone(),
            Caller::Key(k) => k.store.clone(),
        }
    }

    /// While no key is set, asks every caller for `token` (as its API key, or in the cookie
    /// that visiting `/?token=TOKEN` sets), as Jupyter does: without it, any local user
    /// could read the conversations and spend the provider's key.
    pub fn token(mut self, token: &str) -> Self {
        self.keys.set_token(token);
        self
    }

    /// Accepts `key` from clients, with no limits (kept as its SHA-256 digest only).
    pub fn key(self, key: &str) -> Self {
        self.key_with(key, Limits::default())
    }

    /// Accepts `key` from clients, within `limits`.
    pub fn key_with(mut self, key: &str, limits: Limits) -> Self {
        self.keys.add(key, limits);
        self
    }

    /// What the `n`th key given has used so far.
    pub fn key_usage(&self, n: usize) -> Option<KeyUsage> {
        self.keys.usage(n)
    }

    /// Whether callers must give a key: one is set in kite.toml, or the store holds keys.
    pub fn has_keys(&self) -> bool {
        !self.keys.is_empty()
    }

    /// The routes' names, as clients ask for them.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.routes.iter().map(|r| r.name.as_str())
    }

    /// Refuses an address off loopback when no client key is set.
    pub fn check_addr(&self, addr: &SocketAddr) -> Result<(), String> {
        match (self.keys.is_empty(), addr.ip().is_loopback()) {
            (true, false) => Err(format!(
                "{addr} is reachable from other machines: set a client key \
                 (KITE_SERVE_API_KEY or [serve] keys), or listen on 127.0.0.1"
            )),
            _ => Ok(()),
        }
    }

    pub(crate) fn route(&self, name: &str) -> Option<(&Route, String)> {
        match self.routes.iter().find(|r| r.name == name) {
            Some(r) => Some((r, r.upstream.clone())),
            None if self.catch_all => self.routes.first().map(|r| (r, name.to_owned())),
            None => None,
        }
    }

    /// A new answer's id: `prefix` (the client API's own), then random hex, unique across
    /// replicas and restarts (stored responses are found by it), and a count.
    pub(crate) fn next_id(&self, prefix: &str) -> String {
        let random = ids::random_hex(12).unwrap_or_else(|_| format!("{:x}", handlers::now()));
        format!(
            "{prefix}{random}{}",
            self.ids.fetch_add(1, Ordering::Relaxed) + 1
        )
    }
}

/// The gateway's routes.
pub fn router(gateway: Arc<Gateway>) -> Router {
    Router::new()
        .route("/health", get(ops::health))
        .route("/ready", get(ops::ready))
        .route("/metrics", get(ops::metrics))
        .route("/v1/models", get(models::models))
        .route("/v1/models/{id}", get(models::model))
        .route("/v1/usage", get(ops::usage))
        .route("/v1/chat/completions", post(chat))
        .merge(stored::routes())
        .route("/v1/messages", post(anthropic))
        .route("/v1/messages/count_tokens", post(count::count_tokens))
        .merge(admin::http::routes())
        .merge(web::routes())
        .fallback(|| async {
            error(
                Api::Chat,
                StatusCode::NOT_FOUND,
                "no such endpoint",
                Kind::Missing,
            )
        })
        .method_not_allowed_fallback(|uri: axum::http::Uri| async move {
            let api = match uri.path().starts_with("/v1/messages") {
                true => Api::Messages,
                false => Api::Chat,
            };
            error(
                api,
                StatusCode::METHOD_NOT_ALLOWED,
                "this endpoint does not take that method",
                Kind::Invalid,
            )
        })
        .layer(axum::extract::DefaultBodyLimit::max(MAX_BODY))
        .layer(axum::middleware::from_fn_with_state(gateway.clone(), gate))
        .layer(axum::middleware::from_fn_with_state(
            gateway.clone(),
            log_request,
        ))
        .with_state(gateway)
}

/// Serves `gateway` on `listener` until `shutdown` resolves, then refuses new requests
/// with 503 (and `Retry-After`) until the requests under way have finished, and returns.
/// [`Gateway::wind_down`] ends those that take too long.
pub async fn serve(
    listener: tokio::net::TcpListener,
    gateway: Arc<Gateway>,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let (deadlines, connections) = (gateway.deadlines, gateway.connections);
    let gw = gateway.clone();
    let shutdown = async move {
        shutdown.await;
        gw.draining.store(true, Ordering::Relaxed);
    };
    listen::serve(listener, router(gateway), deadlines, connections, shutdown).await
}

/// Whole seconds, rounded up: a client that waits that long is not refused again.
fn seconds(wait: std::time::Duration) -> u64 {
    wait.as_secs() + u64::from(wait.subsec_nanos() > 0)
}
