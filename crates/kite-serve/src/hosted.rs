//! What becomes of the web search only OpenAI runs (`web_search`) when a Responses client
//! sends it: passed on where a route's provider is OpenAI Responses, and elsewhere dropped
//! (said once in the log) or refused, as `[serve] hosted_tools` says. (The hosted tools
//! that would reach the gateway's own OpenAI account, `file_search` and the like, are
//! refused by the decoder.)

use crate::Gateway;
use kite_wire::openai_responses::{NAMESPACE, serve::ClientRequest};
use serde_json::Value;

/// The policy for hosted tools a route's provider cannot run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum HostedTools {
    /// Left out, the model answering without them (the default: coding agents send them
    /// by default, and work without).
    #[default]
    Drop,
    /// The request is refused with 400, naming them.
    Refuse,
}

impl Gateway {
    /// Sets what becomes of hosted tools a route's provider cannot run.
    pub fn hosted_tools(mut self, policy: HostedTools) -> Self {
        self.hosted = policy;
        self
    }

    /// Puts `client`'s hosted tools where its policy says: offered to OpenAI Responses
    /// alone (dropped by the other encoders), or asked of it (refused by them).
    pub(crate) fn place_hosted_tools(&self, client: &mut ClientRequest) {
        if client.hosted.is_empty() {
            return;
        }
        let tools = Value::Array(std::mem::take(&mut client.hosted));
        let request = &mut client.request;
        match self.hosted {
            HostedTools::Drop => {
                static SAID: std::sync::Once = std::sync::Once::new();
                SAID.call_once(|| {
                    tracing::info!(
                        "hosted web search is passed on to OpenAI \
                         Responses and left out for other providers ([serve] hosted_tools)"
                    );
                });
                request.provider_hints.insert(NAMESPACE, "tools", tools);
            }
            HostedTools::Refuse => request.provider_options.insert(NAMESPACE, "tools", tools),
        }
    }
}
