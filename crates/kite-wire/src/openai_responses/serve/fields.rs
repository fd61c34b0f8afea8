//! The fields of a Responses request the gateway takes, and those it refuses unless they
//! ask for nothing.

use crate::client::{Unserved, default_tier, nothing};

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
        accepts: |v| {
            v.as_array()
                .is_some_and(|all| all.iter().all(|x| x == "reasoning.encrypted_content"))
        },
        why: "only `reasoning.encrypted_content` can be included (and always is)",
    },
    Unserved {
        name: "background",
        accepts: nothing,
        why: "no response is kept to be polled",
    },
    Unserved {
        name: "metadata",
        accepts: nothing,
        why: "responses are not stored, so there is nothing to tag",
    },
    Unserved {
        name: "max_tool_calls",
        accepts: nothing,
        why: "the gateway runs no hosted tools to count",
    },
    Unserved {
        name: "prompt",
        accepts: nothing,
        why: "stored prompts are not served",
    },
    Unserved {
        name: "service_tier",
        accepts: default_tier,
        why: "requests go at the provider's default tier",
    },
    Unserved {
        name: "top_logprobs",
        accepts: nothing,
        why: "log probabilities are not returned",
    },
    Unserved {
        name: "truncation",
        accepts: |v| v == "disabled",
        why: "the gateway does not drop input to make it fit",
    },
    Unserved {
        name: "context_management",
        accepts: nothing,
        why: "the conversation is not compacted on the server",
    },
];
