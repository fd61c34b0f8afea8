//! An MCP server's tool as a kite tool.

use crate::hub::{Exposed, WeakInner};
use crate::session::CallResult;
use kite_agent::{Tool, ToolContext, ToolError, ToolFuture, ToolOutput};
use kite_core::{Part, ToolSpec};
use serde_json::Value;

/// One tool of one server, called through the hub (so a lost server is reconnected).
pub(crate) struct McpTool {
    hub: WeakInner,
    exposed: Exposed,
    spec: ToolSpec,
}

impl McpTool {
    pub fn new(hub: WeakInner, exposed: Exposed) -> Self {
        let mut parameters = exposed.remote.input_schema.clone();
        if parameters.get("type").is_none()
            && let Value::Object(m) = &mut parameters
        {
            m.insert("type".into(), "object".into());
        }
        let spec = ToolSpec {
            name: exposed.name.clone(),
            description: exposed.remote.description.clone(),
            parameters,
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
/// links, audio) and structured content as JSON text; `isError` makes it a tool error.
pub(crate) fn output<C>(result: CallResult) -> ToolOutput<C> {
    let mut parts: Vec<Part> = result.content.iter().map(part).collect();
    if let Some(structured) = &result.structured {
        let json = structured.to_string();
        let already = parts
            .iter()
            .any(|p| matches!(p, Part::Text { text } if text.trim() == json));
        if !already && !structured.is_null() {
            parts.push(Part::text(structured.to_string()));
        }
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
