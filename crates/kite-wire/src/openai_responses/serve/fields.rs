//! The fields of a Responses request the gateway takes, and those it refuses unless they
//! ask for nothing.

use crate::client::{Shape, Unserved, default_tier, nothing};

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
        name: "metadata",
        shape: Shape::Object,
        accepts: nothing,
        why: "responses are not stored, so there is nothing to tag",
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
        name: "service_tier",
        shape: Shape::Text,
        accepts: default_tier,
        why: "requests go at the provider's default tier",
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
pub(super) const FUNCTION_CALL: &[&str] = &["type", "call_id", "name", "arguments", "id", "status"];
pub(super) const FUNCTION_OUTPUT: &[&str] = &["type", "call_id", "output", "id", "status"];
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
/// The fields of a function tool, and of a `tool_choice` naming one.
pub(super) const TOOL: &[&str] = &["type", "name", "description", "parameters", "strict"];
pub(super) const CHOICE: &[&str] = &["type", "name"];
/// The fields of `text.format`.
pub(super) const FORMAT: &[&str] = &["type", "name", "schema", "description", "strict"];
