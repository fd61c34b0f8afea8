//! The client side of a session: what kite answers when a server asks (roots, sampling,
//! elicitation), and the notifications it passes on to the hub.
//!
//! kite speaks protocol 2025-11-25, where roots, sampling and logging are current; rmcp marks
//! them deprecated for the 2026 protocol.
#![allow(deprecated)]

use crate::server_requests::{ElicitAnswer, Elicitation, Elicitor, Sampler, with_defaults};
use crate::session::PROTOCOL;
use rmcp::ClientHandler;
use rmcp::model::{
    ClientCapabilities, ClientConfig, CreateMessageRequestParams, CreateMessageResult,
    ElicitRequestParams, ElicitResult, ElicitationAction, Implementation, ListRootsResult,
    LoggingMessageNotificationParam, Root,
};
use rmcp::service::{NotificationContext, RequestContext, RoleClient};
use serde_json::Value;
use std::future::Future;
use std::sync::Arc;
use tokio::sync::mpsc;

/// What a session tells the hub, tagged with the server and the session's generation.
#[derive(Debug)]
pub(crate) enum Notice {
    /// `notifications/tools/list_changed`.
    ToolsChanged,
    /// The session ended (the process exited, the connection closed), and why.
    Closed(String),
}

pub(crate) type Notices = mpsc::UnboundedSender<(String, u64, Notice)>;

/// rmcp's client handler for one session: answers the server's requests and passes its
/// notifications on to the hub.
#[derive(Clone)]
pub(crate) struct Handler {
    pub server: String,
    pub generation: u64,
    pub notices: Notices,
    pub answerers: Answerers,
}

/// What the hub gives each session to answer servers' requests with.
#[derive(Clone, Default)]
pub(crate) struct Answerers {
    pub roots: Arc<Vec<Root>>,
    pub sampler: Option<Arc<crate::sampling::Limited>>,
    pub elicitor: Option<Arc<dyn Elicitor>>,
    /// The logins of HTTP servers that ask for OAuth.
    pub logins: Arc<crate::oauth::Logins>,
}

impl ClientHandler for Handler {
    fn get_info(&self) -> ClientConfig {
        let mut capabilities = serde_json::json!({"roots": {"listChanged": false}});
        if self.answerers.sampler.is_some() {
            capabilities["sampling"] = serde_json::json!({});
        }
        if self.answerers.elicitor.is_some() {
            capabilities["elicitation"] = serde_json::json!({"form": {}});
        }
        let capabilities: ClientCapabilities =
            serde_json::from_value(capabilities).unwrap_or_default();
        ClientConfig::new(
            capabilities,
            Implementation::new("kite", env!("CARGO_PKG_VERSION")),
        )
        .with_protocol_version(PROTOCOL)
    }

    fn list_roots(
        &self,
        _context: RequestContext<RoleClient>,
    ) -> impl Future<Output = Result<ListRootsResult, rmcp::ErrorData>> + Send + '_ {
        std::future::ready(Ok(ListRootsResult::new(
            self.answerers.roots.as_ref().clone(),
        )))
    }

    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, rmcp::ErrorData> {
        let Some(sampler) = &self.answerers.sampler else {
            return Err(rmcp::ErrorData::method_not_found::<
                rmcp::model::CreateMessageRequestMethod,
            >());
        };
        let params = serde_json::to_value(&params).unwrap_or_default();
        let request = crate::server_requests::sampling_request(&params);
        let response = sampler
            .sample(&self.server, request)
            .await
            .map_err(|e| rmcp::ErrorData::internal_error(format!("sampling failed: {e}"), None))?;
        serde_json::from_value(crate::server_requests::sampling_result(&response))
            .map_err(|e| rmcp::ErrorData::internal_error(e.to_string(), None))
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, rmcp::ErrorData> {
        let decline = || ElicitResult::new(ElicitationAction::Decline);
        let Some(elicitor) = &self.answerers.elicitor else {
            return Ok(decline());
        };
        let ElicitRequestParams::FormElicitationParams {
            message,
            requested_schema,
            ..
        } = request
        else {
            // kite does not offer URL mode; a server that asks anyway is declined.
            return Ok(decline());
        };
        let schema = serde_json::to_value(&requested_schema).unwrap_or_default();
        let asked = Elicitation {
            message,
            schema: schema.clone(),
        };
        Ok(match elicitor.elicit(&self.server, asked).await {
            ElicitAnswer::Accept(content) => ElicitResult::new(ElicitationAction::Accept)
                .with_content(Value::Object(with_defaults(&schema, content))),
            ElicitAnswer::Decline => decline(),
            ElicitAnswer::Cancel => ElicitResult::new(ElicitationAction::Cancel),
        })
    }

    fn on_tool_list_changed(
        &self,
        _context: NotificationContext<RoleClient>,
    ) -> impl Future<Output = ()> + Send + '_ {
        let _ = self
            .notices
            .send((self.server.clone(), self.generation, Notice::ToolsChanged));
        std::future::ready(())
    }

    fn on_logging_message(
        &self,
        params: LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) -> impl Future<Output = ()> + Send + '_ {
        tracing::info!(server = %self.server, logger = ?params.logger, "{}", params.data);
        std::future::ready(())
    }
}
