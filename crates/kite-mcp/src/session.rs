//! One live session with one server over rmcp: started, handshaken, and watched until it
//! ends. The client handler that answers the server is in [`handler`](crate::handler), the
//! HTTP client beneath it in [`http_client`](crate::http_client). A session's whole life
//! (start, handshake, calls, health) is kept here in one piece, which runs a little past
//! 450 lines.

use crate::catalog::{Prompt, PromptMessages, Resource, ResourceContent};
use crate::child;
use crate::config::{ServerConfig, TransportConfig};
use crate::error::Error;
use crate::handler::{Answerers, Handler, Notice, Notices};
use crate::http_client::{http_transport, speaks_old_sse, transport_message};
use crate::secrets::{bearer_token, secrets_of, stderr_end};
use kite_http::redact_all as redact;
use rmcp::ServiceExt;
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, ClientRequest, PingRequest, ProtocolVersion,
    ReadResourceRequestParams, ServerResult,
};
use rmcp::service::{Peer, PeerRequestOptions, RoleClient, ServiceError};
use serde_json::Value;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// The protocol version kite asks for; a server may answer with an older one kite knows.
pub(crate) const PROTOCOL: ProtocolVersion = ProtocolVersion::V_2025_11_25;

/// The versions kite accepts in a server's answer, newest first.
const SPOKEN: [ProtocolVersion; 4] = [
    ProtocolVersion::V_2025_11_25,
    ProtocolVersion::V_2025_06_18,
    ProtocolVersion::V_2025_03_26,
    ProtocolVersion::V_2024_11_05,
];

/// A tool as the server lists it: what [`Hub::listed`](crate::Hub::listed) gives, and
/// [`Hub::add_known`](crate::Hub::add_known) takes back from a program that kept it.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct RemoteTool {
    /// Its name on the server.
    pub name: String,
    /// What it does, as the server says.
    pub description: String,
    /// The JSON Schema of its arguments.
    pub input_schema: Value,
}

/// A tool's answer: MCP content blocks and structured content, as JSON, and whether the
/// tool failed (`isError`).
#[derive(Clone, Debug, PartialEq)]
pub struct CallResult {
    /// The MCP content blocks (text, images, resources, ...), as JSON.
    pub content: Vec<Value>,
    /// The structured content, when the tool gave any.
    pub structured: Option<Value>,
    /// Whether the tool failed (`isError`).
    pub is_error: bool,
}

/// A live session with one server.
pub(crate) struct Session {
    /// The server's id in the hub.
    server: String,
    peer: Peer<RoleClient>,
    /// Ends the session (and the stdio child) when cancelled or dropped.
    stop: CancellationToken,
    pub protocol: String,
    pub server_name: String,
    /// The process id of a stdio server.
    pub pid: Option<u32>,
    /// Header values and tokens this session sends, kept out of every error.
    secrets: Vec<String>,
    /// The task that watches the session; it ends once the session has closed.
    watcher: std::sync::Mutex<Option<tokio::task::JoinHandle<()>>>,
}

/// How long a closing server is given to exit by itself (its stdin closed, then SIGTERM)
/// before what is left of its process group is killed.
const CLOSE: Duration = Duration::from_secs(5);

impl Drop for Session {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

impl Session {
    /// Starts or reaches the server, negotiates the protocol and lists its tools, all
    /// within `startup`; then watches the session: when it ends, `notices` hears `Closed`
    /// at once. A stdio server that fails to start is reported with the end of its stderr.
    pub(crate) async fn connect(
        server: &str,
        config: &ServerConfig,
        generation: u64,
        answerers: Answerers,
        notices: Notices,
        startup: Duration,
    ) -> Result<(Self, Vec<RemoteTool>), Error> {
        let secrets = secrets_of(config);
        let connect_error = |message: String| Error::Connect {
            server: server.to_owned(),
            message: redact(&message, &secrets),
        };
        let handler = Handler {
            server: server.to_owned(),
            generation,
            notices: notices.clone(),
            answerers,
        };
        let mut child = None;
        let started = tokio::time::Instant::now();
        let handshake = async {
            let service = match &config.transport {
                TransportConfig::Stdio {
                    command,
                    args,
                    env,
                    cwd,
                } => {
                    let env = child::environment(env).map_err(&connect_error)?;
                    if let Some(dir) = cwd.as_ref().filter(|d| !d.is_dir()) {
                        return Err(connect_error(format!(
                            "its working directory {} is not a folder",
                            dir.display()
                        )));
                    }
                    let spawned = child::spawn(server, command, args, env, cwd.as_ref())
                        .map_err(|e| connect_error(format!("cannot start {command:?}: {e}")))?;
                    let process = spawned.process;
                    child = Some((spawned.pid, spawned.guard, spawned.stderr));
                    handler.serve(process).await
                }
                TransportConfig::Http {
                    url,
                    headers,
                    oauth,
                    ..
                } => {
                    let token = bearer_token(config).map_err(&connect_error)?;
                    // A server given a token is sent that one; any other may ask for OAuth.
                    let login = match token {
                        Some(_) => None,
                        None => Some(handler.answerers.logins.of(server, url, oauth.as_ref())),
                    };
                    let transport =
                        http_transport(url, headers, token, login).map_err(&connect_error)?;
                    let served = handler.serve(transport).await;
                    if served.is_err() && speaks_old_sse(url, headers).await {
                        return Err(connect_error(
                            "it speaks only the 2024-11-05 HTTP+SSE transport, which kite does \
                             not: give its Streamable HTTP endpoint if it has one (often /mcp), \
                             or run it through a stdio bridge (`npx mcp-remote URL \
                             --transport sse-only` as the server's command)"
                                .into(),
                        ));
                    }
                    served
                }
            };
            let service = service.map_err(|e| {
                connect_error(match e {
                    rmcp::service::ClientInitializeError::TransportError { error, context } => {
                        format!("{} ({context})", transport_message(&error))
                    }
                    other => other.to_string(),
                })
            })?;
            Ok::<_, Error>(service)
        };
        let outcome = tokio::time::timeout(startup, handshake).await;
        let stderr = child.as_ref().map(|(_, _, tail)| tail.clone());
        let tail = || stderr_end(stderr.clone(), secrets.clone());
        let service = match outcome {
            Ok(Ok(service)) => service,
            Ok(Err(Error::Connect { server, message })) => {
                return Err(Error::Connect {
                    server,
                    message: format!("{message}{}", tail().await),
                });
            }
            Ok(Err(e)) => return Err(e),
            Err(_) => {
                return Err(connect_error(format!(
                    "no answer to initialize within {:.1} s (raise startup_timeout_secs){}",
                    startup.as_secs_f64(),
                    tail().await
                )));
            }
        };
        let peer = service.peer().clone();
        let info = peer.peer_info();
        let protocol = info
            .as_ref()
            .map(|i| i.protocol_version.to_string())
            .unwrap_or_default();
        if !SPOKEN.iter().any(|v| v.to_string() == protocol) {
            let _ = service.cancel().await;
            return Err(connect_error(format!(
                "the server answered with protocol {protocol:?}; kite speaks {}",
                SPOKEN.map(|v| v.to_string()).join(", ")
            )));
        }
        let server_name = info
            .as_ref()
            .and_then(|i| i.server_info.as_ref().map(|s| s.name.clone()))
            .unwrap_or_default();
        let (pid, guard) = match child {
            Some((pid, guard, _)) => (pid, Some(guard)),
            None => (None, None),
        };
        let stop = CancellationToken::new();
        let session = Self {
            server: server.to_owned(),
            peer,
            stop: stop.clone(),
            protocol,
            server_name,
            pid,
            secrets: secrets.clone(),
            watcher: std::sync::Mutex::new(None),
        };
        let left = startup.saturating_sub(started.elapsed());
        let tools = match tokio::time::timeout(left, session.tools()).await {
            Ok(Ok(tools)) => tools,
            Ok(Err(e)) => {
                return Err(connect_error(format!(
                    "its tool list failed ({e}){}",
                    tail().await
                )));
            }
            Err(_) => {
                return Err(connect_error(format!(
                    "no answer to tools/list within {:.1} s (raise startup_timeout_secs){}",
                    startup.as_secs_f64(),
                    tail().await
                )));
            }
        };
        let id = server.to_owned();
        let ending = stderr_end(stderr, secrets.clone());
        let watcher = tokio::spawn(async move {
            // The guard lives as long as this task: when the session has closed, or the
            // runtime drops the task on its way out, what is left of the server's process
            // group goes with it.
            let _guard = guard;
            let cancel = service.cancellation_token();
            let waiting = service.waiting();
            tokio::pin!(waiting);
            let reason = tokio::select! {
                r = &mut waiting => format!("{r:?}"),
                _ = stop.cancelled() => {
                    // rmcp closes the transport: a stdio server's stdin, then SIGTERM.
                    cancel.cancel();
                    let _ = tokio::time::timeout(CLOSE, &mut waiting).await;
                    return;
                }
            };
            let reason = format!("{}{}", redact(&reason, &secrets), ending.await);
            tracing::warn!(server = %id, reason, "MCP session ended");
            let _ = notices.send((id, generation, Notice::Closed(reason)));
        });
        *session.watcher.lock().unwrap_or_else(|e| e.into_inner()) = Some(watcher);
        Ok((session, tools))
    }

    /// Ends the session and waits (a few seconds at most) until the server has gone.
    pub(crate) async fn close(&self) {
        self.stop.cancel();
        let watcher = self
            .watcher
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        if let Some(w) = watcher {
            let _ = tokio::time::timeout(CLOSE + Duration::from_secs(1), w).await;
        }
    }

    fn error(&self, what: &str, e: ServiceError) -> Error {
        let server = self.server.clone();
        let redact = |m: String| redact(&m, &self.secrets);
        match e {
            ServiceError::McpError(data) => Error::Server {
                server,
                code: data.code.0,
                message: redact(data.message.to_string()),
            },
            ServiceError::Timeout { timeout } => Error::Timeout {
                server,
                what: what.to_owned(),
                seconds: timeout.as_secs(),
            },
            ServiceError::Cancelled { .. } => Error::Cancelled {
                server,
                what: what.to_owned(),
            },
            ServiceError::TransportSend(error) => Error::Disconnected {
                server,
                message: redact(transport_message(&error)),
            },
            other => Error::Disconnected {
                server,
                message: redact(other.to_string()),
            },
        }
    }

    /// Every tool the server offers (all pages).
    pub(crate) async fn tools(&self) -> Result<Vec<RemoteTool>, Error> {
        let tools = self
            .peer
            .list_all_tools()
            .await
            .map_err(|e| self.error("tools/list", e))?;
        Ok(tools
            .into_iter()
            .map(|t| RemoteTool {
                name: t.name.to_string(),
                description: t.description.map(|d| d.to_string()).unwrap_or_default(),
                input_schema: Value::Object(t.input_schema.as_ref().clone()),
            })
            .collect())
    }

    /// Every resource the server offers (all pages).
    pub(crate) async fn resources(&self) -> Result<Vec<Resource>, Error> {
        let all = self
            .peer
            .list_all_resources()
            .await
            .map_err(|e| self.error("resources/list", e))?;
        Ok(all
            .iter()
            .map(|r| Resource::from_json(&serde_json::to_value(r).unwrap_or_default()))
            .collect())
    }

    /// Reads resource `uri`.
    pub(crate) async fn read_resource(&self, uri: &str) -> Result<Vec<ResourceContent>, Error> {
        let what = format!("resources/read {uri}");
        let result = self
            .peer
            .read_resource(ReadResourceRequestParams::new(uri))
            .await
            .map_err(|e| self.error(&what, e))?;
        ResourceContent::all_from_json(&serde_json::to_value(&result).unwrap_or_default()).map_err(
            |message| Error::Malformed {
                server: self.server.clone(),
                message,
            },
        )
    }

    /// Every prompt the server offers (all pages).
    pub(crate) async fn prompts(&self) -> Result<Vec<Prompt>, Error> {
        let all = self
            .peer
            .list_all_prompts()
            .await
            .map_err(|e| self.error("prompts/list", e))?;
        Ok(all
            .iter()
            .map(|p| Prompt::from_json(&serde_json::to_value(p).unwrap_or_default()))
            .collect())
    }

    /// Prompt `name` filled in with `arguments`.
    pub(crate) async fn prompt(
        &self,
        name: &str,
        arguments: &serde_json::Map<String, Value>,
    ) -> Result<PromptMessages, Error> {
        let what = format!("prompts/get {name}");
        let params =
            serde_json::from_value(serde_json::json!({"name": name, "arguments": arguments}))
                .map_err(|e| Error::Server {
                    server: self.server.clone(),
                    code: -32602,
                    message: format!("{what}: {e}"),
                })?;
        let result = self
            .peer
            .get_prompt(params)
            .await
            .map_err(|e| self.error(&what, e))?;
        Ok(PromptMessages::from_json(
            &serde_json::to_value(&result).unwrap_or_default(),
        ))
    }

    /// `ping`, with a deadline.
    pub(crate) async fn ping(&self, timeout: Duration) -> Result<(), Error> {
        let request = ClientRequest::PingRequest(PingRequest::default());
        let handle = self
            .peer
            .send_request_with_option(request, PeerRequestOptions::with_timeout(timeout))
            .await
            .map_err(|e| self.error("ping", e))?;
        handle
            .await_response()
            .await
            .map(|_| ())
            .map_err(|e| self.error("ping", e))
    }

    /// Calls tool `name`, in a `tools/call {name}` client span (each attempt its own). The
    /// deadline `timeout` starts again on each progress notification; when `cancel` fires
    /// first, the server is sent `notifications/cancelled`.
    pub(crate) async fn call(
        &self,
        name: &str,
        arguments: Value,
        timeout: Duration,
        cancel: &CancellationToken,
    ) -> Result<CallResult, Error> {
        use tracing::Instrument as _;
        let span = kite_core::trace::mcp_span(&self.server, name);
        let pending = kite_core::trace::Pending::new(span.clone());
        let result = self
            .call_untraced(name, arguments, timeout, cancel)
            .instrument(span.clone())
            .await;
        match &result {
            Err(_) => kite_core::trace::fail(&span, "mcp_error", "the MCP call failed"),
            Ok(r) if r.is_error => kite_core::trace::fail(&span, "tool_error", "isError"),
            Ok(_) => {}
        }
        pending.finish();
        result
    }

    async fn call_untraced(
        &self,
        name: &str,
        arguments: Value,
        timeout: Duration,
        cancel: &CancellationToken,
    ) -> Result<CallResult, Error> {
        let what = format!("tools/call {name}");
        let mut params = CallToolRequestParams::new(name.to_owned());
        if let Value::Object(args) = arguments {
            params = params.with_arguments(args);
        }
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
        let options = PeerRequestOptions::with_timeout(timeout).reset_timeout_on_progress();
        let handle = self
            .peer
            .send_cancellable_request(request, options)
            .await
            .map_err(|e| self.error(&what, e))?;
        let peer = handle.peer.clone();
        let id = handle.id.clone();
        let answer = tokio::select! {
            r = handle.await_response() => r,
            _ = cancel.cancelled() => {
                let note = rmcp::model::CancelledNotificationParam::new(
                    Some(id),
                    Some("cancelled by the caller".into()),
                );
                let _ = peer.notify_cancelled(note).await;
                return Err(Error::Cancelled { server: self.server.clone(), what });
            }
        };
        match answer.map_err(|e| self.error(&what, e))? {
            ServerResult::CallToolResult(r) => {
                let v = serde_json::to_value(&r).unwrap_or(Value::Null);
                Ok(CallResult {
                    content: v["content"].as_array().cloned().unwrap_or_default(),
                    structured: v.get("structuredContent").cloned(),
                    is_error: v["isError"].as_bool().unwrap_or(false),
                })
            }
            other => Err(Error::Malformed {
                server: self.server.clone(),
                message: format!("tools/call answered with {other:?}"),
            }),
        }
    }
}
