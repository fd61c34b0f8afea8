//! The spans around model calls: a tool call's, an MCP call's, an agent run's.

use super::{TARGET, capture_content, fail};
use tracing::field::Empty;

/// The span of one tool call, `execute_tool {name}`; content (the arguments) only when
/// captured. Record the result with [`tool_result`].
pub fn tool_span(name: &str, call_id: &str, arguments: &str) -> tracing::Span {
    let span = tracing::info_span!(
        target: TARGET,
        "execute_tool",
        otel.name = %format_args!("execute_tool {name}"),
        otel.kind = "internal",
        otel.status_code = Empty,
        otel.status_description = Empty,
        gen_ai.operation.name = "execute_tool",
        gen_ai.tool.name = name,
        gen_ai.tool.call.id = call_id,
        "gen_ai.tool.type" = "function",
        gen_ai.tool.call.arguments = Empty,
        gen_ai.tool.call.result = Empty,
        "error.type" = Empty,
    );
    if !span.is_disabled() && capture_content() {
        span.record("gen_ai.tool.call.arguments", arguments);
    }
    span
}

/// Records a tool's outcome on its span: its result's text when content is captured, and
/// whether it failed (`error_kind`, e.g. `tool_error`, `refused`).
pub fn tool_result(
    span: &tracing::Span,
    result: Option<&crate::ToolResult>,
    error_kind: Option<&str>,
) {
    if span.is_disabled() {
        return;
    }
    if let Some(result) = result.filter(|_| capture_content()) {
        span.record("gen_ai.tool.call.result", result.text_content().as_str());
    }
    if let Some(kind) = error_kind {
        fail(span, kind, "the tool call did not succeed");
    }
}

/// The span of one MCP tool call on `server` (one per attempt), `tools/call {tool}`, a
/// client span under the tool's own.
pub fn mcp_span(server: &str, tool: &str) -> tracing::Span {
    tracing::info_span!(
        target: TARGET,
        "mcp.call",
        otel.name = %format_args!("tools/call {tool}"),
        otel.kind = "client",
        otel.status_code = Empty,
        otel.status_description = Empty,
        gen_ai.operation.name = "execute_tool",
        mcp.method.name = "tools/call",
        mcp.server.name = server,
        gen_ai.tool.name = tool,
        "error.type" = Empty,
    )
}

/// The span of one agent run, `invoke_agent` (with the agent's name when it has one),
/// around its model and tool calls. Record its total usage with
/// [`record_usage`](crate::trace::record_usage).
pub fn agent_span(name: Option<&str>, provider: &str, model: &str) -> tracing::Span {
    let span = tracing::info_span!(
        target: TARGET,
        "invoke_agent",
        otel.name = %match name {
            Some(n) => format!("invoke_agent {n}"),
            None => "invoke_agent".to_owned(),
        },
        otel.kind = "internal",
        otel.status_code = Empty,
        otel.status_description = Empty,
        gen_ai.operation.name = "invoke_agent",
        gen_ai.provider.name = provider,
        gen_ai.agent.name = Empty,
        gen_ai.request.model = model,
        gen_ai.usage.input_tokens = Empty,
        gen_ai.usage.output_tokens = Empty,
        gen_ai.usage.cache_read.input_tokens = Empty,
        gen_ai.usage.cache_creation.input_tokens = Empty,
        gen_ai.usage.reasoning.output_tokens = Empty,
        kite.usage.cost = Empty,
        "error.type" = Empty,
    );
    if let Some(n) = name {
        span.record("gen_ai.agent.name", n);
    }
    span
}
