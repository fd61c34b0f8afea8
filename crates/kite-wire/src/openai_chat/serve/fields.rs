//! The fields of a Chat Completions request the gateway takes, and those it refuses unless
//! they ask for nothing.

use crate::client::{Unserved, default_tier, nothing};

/// The fields taken: read, or hints that cannot change the answer (`prompt_cache_*`).
pub(super) const TAKEN: &[&str] = &[
    "model",
    "messages",
    "tools",
    "tool_choice",
    "parallel_tool_calls",
    "temperature",
    "top_p",
    "seed",
    "max_completion_tokens",
    "max_tokens",
    "stop",
    "user",
    "safety_identifier",
    "response_format",
    "reasoning_effort",
    "stream",
    "stream_options",
    "frequency_penalty",
    "presence_penalty",
    "verbosity",
    "prompt_cache_key",
    "prompt_cache_retention",
];

/// The fields refused unless they ask for nothing.
pub(super) const UNSERVED: &[Unserved] = &[
    Unserved {
        name: "n",
        accepts: |v| v.as_u64() == Some(1),
        why: "only one choice is answered",
    },
    Unserved {
        name: "logprobs",
        accepts: nothing,
        why: "log probabilities are not returned",
    },
    Unserved {
        name: "top_logprobs",
        accepts: nothing,
        why: "log probabilities are not returned",
    },
    Unserved {
        name: "logit_bias",
        accepts: nothing,
        why: "token ids differ between the models a name may reach",
    },
    Unserved {
        name: "modalities",
        accepts: |v| v.as_array().is_some_and(|m| m.iter().all(|x| x == "text")),
        why: "answers are text only",
    },
    Unserved {
        name: "audio",
        accepts: nothing,
        why: "answers are text only",
    },
    Unserved {
        name: "service_tier",
        accepts: default_tier,
        why: "requests go at the provider's default tier",
    },
    Unserved {
        name: "prediction",
        accepts: nothing,
        why: "predicted outputs are not passed on",
    },
    Unserved {
        name: "metadata",
        accepts: nothing,
        why: "completions are not stored, so there is nothing to tag",
    },
    Unserved {
        name: "store",
        accepts: nothing,
        why: "completions are not stored",
    },
    Unserved {
        name: "functions",
        accepts: nothing,
        why: "give `tools` instead",
    },
    Unserved {
        name: "function_call",
        accepts: nothing,
        why: "give `tool_choice` instead",
    },
    Unserved {
        name: "web_search_options",
        accepts: nothing,
        why: "hosted web search is not served",
    },
];
