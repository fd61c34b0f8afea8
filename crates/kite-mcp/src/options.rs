//! How a [`Hub`](crate::Hub) behaves: its deadlines, naming, and who answers servers'
//! requests.

use crate::naming::Prefixing;
use crate::sampling::SamplingLimits;
use crate::server_requests::{Elicitor, Sampler};
use std::sync::Arc;
use std::time::Duration;

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
    /// The longest wait between reconnection attempts.
    pub reconnect_max: Duration,
    /// Tool call deadline when the server's config names none (default 60 s), renewed by
    /// each progress notification.
    pub call_timeout: Duration,
    /// How long starting a server may take when its config names no deadline: the process
    /// (or connection), the handshake and the first tool list (default 10 s, room for a
    /// package runner's first start).
    pub startup_timeout: Duration,
    /// When tool names get their server's prefix (default: only on a clash).
    pub prefixing: Prefixing,
    /// The roots given to servers that ask (`roots/list`): `file://` URIs and names.
    pub roots: Vec<(String, Option<String>)>,
    /// Answers servers' `sampling/createMessage`; without it servers are told kite does
    /// not sample.
    pub sampler: Option<Arc<dyn Sampler>>,
    /// What servers may ask of the sampler: how long an answer, how many a tool call, and
    /// what cost in all.
    pub sampling: SamplingLimits,
    /// Asks the user for servers' `elicitation/create`; without it servers are told kite
    /// does not elicit.
    pub elicitor: Option<Arc<dyn Elicitor>>,
    /// How tokens are got for HTTP servers that ask for OAuth.
    pub oauth: crate::OAuthOptions,
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
            .field("sampling", &self.sampling)
            .field("elicitor", &self.elicitor.is_some())
            .field("oauth", &self.oauth.authorizer.is_some())
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
            sampling: SamplingLimits::default(),
            elicitor: None,
            oauth: crate::OAuthOptions::default(),
        }
    }
}
