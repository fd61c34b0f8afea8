//! The fields of a Messages request the gateway takes, and those it refuses unless they ask
//! for nothing.

use crate::client::{Shape, Unserved, default_tier, nothing};

/// The fields taken: read, or (`cache_control`, a cache breakpoint) taken and left.
pub(super) const TAKEN: &[&str] = &[
    "model",
    "max_tokens",
    "system",
    "messages",
    "tools",
    "tool_choice",
    "temperature",
    "top_p",
    "top_k",
    "stop_sequences",
    "stream",
    "thinking",
    "cache_control",
    "output_config",
    "context_management",
];

/// The fields refused unless they ask for nothing.
pub(super) const UNSERVED: &[Unserved] = &[
    Unserved {
        name: "metadata",
        shape: Shape::Object,
        accepts: |v| {
            v.as_object()
                .is_some_and(|m| m.keys().all(|k| k == "user_id"))
        },
        why: "only `metadata.user_id` is passed on",
    },
    Unserved {
        name: "service_tier",
        shape: Shape::Text,
        accepts: default_tier,
        why: "requests go at the provider's default tier",
    },
    Unserved {
        name: "container",
        shape: Shape::Any,
        accepts: nothing,
        why: "code execution containers are not served",
    },
    Unserved {
        name: "mcp_servers",
        shape: Shape::Array,
        accepts: nothing,
        why: "give the gateway's routes their MCP servers instead",
    },
    Unserved {
        name: "inference_geo",
        shape: Shape::Text,
        accepts: nothing,
        why: "where the answer is made is the route's to choose",
    },
];

/// The fields of a message, and of each kind of content block: those read, and, taken and
/// left, `cache_control` (a cache hint) and a text's `citations` (sent back as given).
/// A message's own `output_config` (Claude Code's per-turn effort) is taken and left: the
/// request's is what the answer is made with.
pub(super) const MESSAGE: &[&str] = &["role", "content", "output_config"];
pub(super) const TEXT: &[&str] = &["type", "text", "cache_control", "citations"];
pub(super) const IMAGE: &[&str] = &["type", "source", "cache_control"];
pub(super) const IMAGE_SOURCE: &[&str] = &["type", "media_type", "data", "url"];
pub(super) const DOCUMENT: &[&str] = &[
    "type",
    "source",
    "title",
    "context",
    "citations",
    "cache_control",
];
pub(super) const DOCUMENT_SOURCE: &[&str] = &["type", "media_type", "data", "url", "content"];
pub(super) const TOOL_USE: &[&str] = &["type", "id", "name", "input", "cache_control"];
pub(super) const TOOL_RESULT: &[&str] = &[
    "type",
    "tool_use_id",
    "content",
    "is_error",
    "cache_control",
];
pub(super) const THINKING: &[&str] = &["type", "thinking", "signature"];
pub(super) const REDACTED_THINKING: &[&str] = &["type", "data"];
/// The fields of a client tool (taken and left: `cache_control`, and what changes only how
/// its call is streamed or loaded, `eager_input_streaming` and `defer_loading`, or only
/// illustrates it, `input_examples`), `tool_choice` and `thinking`.
pub(super) const TOOL: &[&str] = &[
    "type",
    "name",
    "description",
    "input_schema",
    "cache_control",
    "strict",
    "eager_input_streaming",
    "defer_loading",
    "input_examples",
];
pub(super) const CHOICE: &[&str] = &["type", "name", "disable_parallel_tool_use"];
pub(super) const THINKING_SETTING: &[&str] = &["type", "budget_tokens", "display"];
pub(super) const OUTPUT_CONFIG: &[&str] = &["effort", "format"];
pub(super) const FORMAT: &[&str] = &["type", "schema"];
