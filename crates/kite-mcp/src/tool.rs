//! An MCP server's tool as a kite tool.

use crate::error::Error;
use crate::naming::Exposed;
use crate::session::CallResult;
use kite_agent::{Tool, ToolContext, ToolError, ToolFuture, ToolOutput};
use kite_core::{Part, ToolSpec};
use serde_json::Value;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Weak};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// A call's answer, on its way.
pub(crate) type CallFuture<'a> =
    Pin<Box<dyn Future<Output = Result<CallResult, Error>> + Send + 'a>>;

/// What a tool needs of the hub: a way to call a server's tool (reconnecting a lost server
/// and retrying once), and nothing else.
pub(crate) trait Caller: Send + Sync {
    /// Calls `tool` on `server`.
    fn call<'a>(
        self: Arc<Self>,
        server: &'a str,
        tool: &'a str,
        arguments: Value,
        timeout: Duration,
        cancel: &'a CancellationToken,
    ) -> CallFuture<'a>;
}

/// One tool of one server, called through the hub (so a lost server is reconnected).
pub(crate) struct McpTool {
    hub: Weak<dyn Caller>,
    exposed: Exposed,
    spec: ToolSpec,
}

impl McpTool {
    pub(crate) fn new(hub: Weak<dyn Caller>, exposed: Exposed) -> Self {
        let mut parameters = exposed.remote.input_schema.clone();
        if parameters.get("type").is_none()
            && let Value::Object(m) = &mut parameters
        {
            m.insert("type".into(), "object".into());
        }
        let spec = ToolSpec {
            name: exposed.name.clone(),
            description: exposed.remote.description.clone(),
            parameters: parameters.into(),
            strict: None,
        };
        Self { hub, exposed, spec }
    }
}

impl<C: Send + Sync + 'static> Tool<C> for McpTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn call(&self, args: Value, ctx: ToolContext<C>) -> ToolFuture<C> {
        let hub = self.hub.clone();
        let e = self.exposed.clone();
        Box::pin(async move {
            let Some(hub) = hub.upgrade() else {
                return Err(ToolError::model(format!(
                    "the MCP server {:?} is no longer available",
                    e.server
                )));
            };
            match hub
                .call(&e.server, &e.remote.name, args, e.timeout, &ctx.cancel)
                .await
            {
                Ok(result) => Ok(output(result)),
                Err(err) => Err(ToolError::model(err.to_string())),
            }
        })
    }
}

/// A call's answer for the model: text and images as they are, other blocks (resources,
/// links, audio) as JSON text; structured content as JSON text only when no text came with
/// it (servers are asked to repeat it as text, and the model needs it once). `isError`
/// makes it a tool error.
pub(crate) fn output<C>(result: CallResult) -> ToolOutput<C> {
    let mut parts: Vec<Part> = result.content.iter().map(part).collect();
    let has_text = parts.iter().any(|p| matches!(p, Part::Text { .. }));
    if let Some(structured) = &result.structured
        && !has_text
        && !structured.is_null()
    {
        parts.push(Part::text(structured.to_string()));
    }
    ToolOutput {
        content: parts,
        is_error: result.is_error,
        patch: None,
    }
}

/// An MCP content block as a kite part: text and images as they are, other blocks as
/// their JSON.
pub(crate) fn part(block: &Value) -> Part {
    match block["type"].as_str() {
        Some("text") => Part::text(block["text"].as_str().unwrap_or_default()),
        Some("image") => Part::image_base64(
            block["mimeType"].as_str().unwrap_or("image/png"),
            block["data"].as_str().unwrap_or_default(),
        ),
        _ => Part::text(block.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn texts(result: CallResult) -> Vec<String> {
        output::<()>(result)
            .content
            .into_iter()
            .map(|p| match p {
                Part::Text { text } => text,
                other => format!("{other:?}"),
            })
            .collect()
    }

    #[test]
    fn structured_content_is_given_once() {
        let with_text = CallResult {
            content: vec![json!({"type": "text", "text": "42"})],
            structured: Some(json!({"result": 42})),
            is_error: false,
        };
        assert_eq!(texts(with_text), ["42"]);
        let alone = CallResult {
            content: vec![],
            structured: Some(json!({"result": 42})),
            is_error: false,
        };
        assert_eq!(texts(alone), [r#"{"result":42}"#]);
        let link = CallResult {
            content: vec![json!({"type": "resource_link", "uri": "a://b", "name": "b"})],
            structured: None,
            is_error: true,
        };
        let out = output::<()>(link);
        assert!(out.is_error);
        assert!(matches!(&out.content[0], Part::Text { text } if text.contains("a://b")));
    }
}
