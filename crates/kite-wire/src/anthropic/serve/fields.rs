//! The fields of a Messages request the gateway takes, and those it refuses unless they ask
//! for nothing.

use crate::client::{Unserved, default_tier, nothing};

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
];

/// The fields refused unless they ask for nothing.
pub(super) const UNSERVED: &[Unserved] = &[
    Unserved {
        name: "metadata",
        accepts: |v| {
            v.as_object()
                .is_some_and(|m| m.keys().all(|k| k == "user_id"))
        },
        why: "only `metadata.user_id` is passed on",
    },
    Unserved {
        name: "service_tier",
        accepts: default_tier,
        why: "requests go at the provider's default tier",
    },
    Unserved {
        name: "container",
        accepts: nothing,
        why: "code execution containers are not served",
    },
    Unserved {
        name: "mcp_servers",
        accepts: nothing,
        why: "give the gateway's routes their MCP servers instead",
    },
    Unserved {
        name: "context_management",
        accepts: nothing,
        why: "the conversation is not edited on the server",
    },
    Unserved {
        name: "inference_geo",
        accepts: nothing,
        why: "where the answer is made is the route's to choose",
    },
    Unserved {
        name: "output_config",
        accepts: nothing,
        why: "give the format as a forced tool instead",
    },
];
