//! The fields of a Responses request the gateway takes, and those it refuses unless they
//! ask for nothing.

use crate::client::{Passed, Shape, Unserved, default_tier, nothing};

/// The fields taken: read, or taken and left (`store`, cache hints).
pub(super) const TAKEN: &[&str] = &[
    "model",
    "input",
    "instructions",
    "tools",
    "tool_choice",
    "parallel_tool_calls",
    "temperature",
    "top_p",
    "max_output_tokens",
    "safety_identifier",
    "user",
    "reasoning",
    "text",
    "stream",
    "stream_options",
    "store",
    "previous_response_id",
    "conversation",
    "prompt_cache_key",
    "prompt_cache_retention",
    "client_metadata",
    "metadata",
    "service_tier",
];

/// The fields passed on to an OpenAI Responses provider (which takes them), and refused by
/// a route to any other, unless they ask for nothing.
pub(super) const PASSED: &[Passed] = &[
    Passed {
        name: "metadata",
        shape: Shape::Object,
        asks_nothing: nothing,
    },
    Passed {
        name: "service_tier",
        shape: Shape::Text,
        asks_nothing: default_tier,
    },
];

/// The fields refused unless they ask for nothing.
pub(super) const UNSERVED: &[Unserved] = &[
    Unserved {
        name: "include",
        shape: Shape::Array,
        accepts: |v| {
            v.as_array()
                .is_some_and(|all| all.iter().all(|x| x == "reasoning.encrypted_content"))
        },
        why: "only `reasoning.encrypted_content` can be included (and always is)",
    },
    Unserved {
        name: "background",
        shape: Shape::Bool,
        accepts: nothing,
        why: "no response is kept to be polled",
    },
    Unserved {
        name: "max_tool_calls",
        shape: Shape::Number,
        accepts: nothing,
        why: "the gateway runs no hosted tools to count",
    },
    Unserved {
        name: "prompt",
        shape: Shape::Object,
        accepts: nothing,
        why: "stored prompts are not served",
    },
    Unserved {
        name: "top_logprobs",
        shape: Shape::Number,
        accepts: nothing,
        why: "log probabilities are not returned",
    },
    Unserved {
        name: "truncation",
        shape: Shape::Text,
        accepts: |v| v == "disabled",
        why: "the gateway does not drop input to make it fit",
    },
    Unserved {
        name: "context_management",
        shape: Shape::Any,
        accepts: nothing,
        why: "the conversation is not compacted on the server",
    },
];

/// The fields of each kind of input item: those read, and, taken and left, what a client
/// sends back of output items it was given (`id`, `status`).
pub(super) const MESSAGE: &[&str] = &["type", "role", "content", "id", "status"];
pub(super) const FUNCTION_CALL: &[&str] = &[
    "type",
    "call_id",
    "name",
    "namespace",
    "arguments",
    "id",
    "status",
];
pub(super) const CUSTOM_CALL: &[&str] = &[
    "type",
    "call_id",
    "name",
    "namespace",
    "input",
    "id",
    "status",
];
pub(super) const LOCAL_SHELL_CALL: &[&str] = &["type", "call_id", "action", "id", "status"];
pub(super) const APPLY_PATCH_CALL: &[&str] = &["type", "call_id", "operation", "id", "status"];
/// The fields of any call's output item.
pub(super) const CALL_OUTPUT: &[&str] = &["type", "call_id", "output", "id", "status"];
/// An `additional_tools` item: tools given among the input (`role` is always `developer`).
pub(super) const ADDITIONAL_TOOLS: &[&str] = &["type", "id", "role", "tools"];
pub(super) const REASONING: &[&str] = &[
    "type",
    "id",
    "summary",
    "encrypted_content",
    "content",
    "status",
];
/// The fields of a text part (with what an output text brings back: `annotations`,
/// `logprobs`), a refusal, and an image.
pub(super) const TEXT_PART: &[&str] = &["type", "text", "annotations", "logprobs"];
pub(super) const REFUSAL_PART: &[&str] = &["type", "refusal"];
pub(super) const IMAGE_PART: &[&str] = &["type", "image_url", "detail"];
pub(super) const FILE_PART: &[&str] = &["type", "file_data", "file_id", "file_url", "filename"];
/// The fields of a function tool, and of a `tool_choice` naming one.
pub(super) const TOOL: &[&str] = &["type", "name", "description", "parameters", "strict"];
pub(super) const CHOICE: &[&str] = &["type", "name", "namespace"];
/// The fields of a namespace of tools, of a custom (free-form) tool, and of its format.
pub(super) const NAMESPACE_TOOL: &[&str] = &["type", "name", "description", "tools"];
pub(super) const CUSTOM_TOOL: &[&str] = &["type", "name", "description", "format"];
pub(super) const CUSTOM_FORMAT: &[&str] = &["type", "syntax", "definition"];
/// The fields of `text.format`.
pub(super) const FORMAT: &[&str] = &["type", "name", "schema", "description", "strict"];
