//! The fields of a Chat Completions request the gateway takes, and those it refuses unless
//! they ask for nothing.

use crate::client::{Passed, Shape, Unserved, default_tier, nothing, one};

/// The fields taken: read, passed on (see [`PASSED`]), or hints that cannot change the
/// answer (`prompt_cache_*`).
pub(super) const TAKEN: &[&str] = &[
    "model",
    "messages",
    "tools",
    "tool_choice",
    "parallel_tool_calls",
    "temperature",
    "top_p",
    "seed",
    "top_k",
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
    "logit_bias",
    "service_tier",
    "prediction",
    "min_p",
    "repetition_penalty",
    "chat_template_kwargs",
];

/// The fields passed on to an OpenAI Chat Completions provider (which takes them), and
/// refused by a route to any other, unless they ask for nothing.
pub(super) const PASSED: &[Passed] = &[
    Passed {
        name: "logit_bias",
        shape: Shape::Object,
        asks_nothing: nothing,
    },
    Passed {
        name: "service_tier",
        shape: Shape::Text,
        asks_nothing: default_tier,
    },
    Passed {
        name: "prediction",
        shape: Shape::Object,
        asks_nothing: nothing,
    },
    // What vLLM, llama.cpp and most compatible servers also take.
    Passed {
        name: "min_p",
        shape: Shape::Number,
        asks_nothing: nothing,
    },
    Passed {
        name: "repetition_penalty",
        shape: Shape::Number,
        asks_nothing: one,
    },
    Passed {
        name: "chat_template_kwargs",
        shape: Shape::Object,
        asks_nothing: nothing,
    },
];

/// The fields refused unless they ask for nothing.
pub(super) const UNSERVED: &[Unserved] = &[
    Unserved {
        name: "n",
        shape: Shape::Number,
        accepts: |v| v.as_u64() == Some(1),
        why: "only one choice is answered",
    },
    Unserved {
        name: "logprobs",
        shape: Shape::Bool,
        accepts: nothing,
        why: "log probabilities are not returned",
    },
    Unserved {
        name: "top_logprobs",
        shape: Shape::Number,
        accepts: nothing,
        why: "log probabilities are not returned",
    },
    Unserved {
        name: "modalities",
        shape: Shape::Array,
        accepts: |v| v.as_array().is_some_and(|m| m.iter().all(|x| x == "text")),
        why: "answers are text only",
    },
    Unserved {
        name: "audio",
        shape: Shape::Object,
        accepts: nothing,
        why: "answers are text only",
    },
    Unserved {
        name: "metadata",
        shape: Shape::Object,
        accepts: nothing,
        why: "OpenAI takes it only with `store: true`, and completions are not stored",
    },
    Unserved {
        name: "store",
        shape: Shape::Bool,
        accepts: nothing,
        why: "completions are not stored",
    },
    Unserved {
        name: "functions",
        shape: Shape::Array,
        accepts: nothing,
        why: "give `tools` instead",
    },
    Unserved {
        name: "function_call",
        shape: Shape::Any,
        accepts: nothing,
        why: "give `tool_choice` instead",
    },
    Unserved {
        name: "web_search_options",
        shape: Shape::Object,
        // `{}` asks for a search with the defaults: only its absence asks for none.
        accepts: |_| false,
        why: "hosted web search is not served",
    },
];

/// The fields of a message: those read, and, taken and left, `name` (a participant's
/// label), and what a client sends back of an answer it was given (`refusal`,
/// `annotations`, the reasoning providers return as `reasoning_content`, `reasoning` or
/// `reasoning_details`, and `parsed`, which the OpenAI SDKs' helpers add).
pub(super) const MESSAGE: &[&str] = &[
    "role",
    "content",
    "tool_calls",
    "tool_call_id",
    "name",
    "refusal",
    "annotations",
    "reasoning_content",
    "reasoning",
    "reasoning_details",
    "parsed",
];
/// The fields of a text part (`cache_control` is a cache hint), an image part, and its
/// `image_url`.
pub(super) const TEXT_PART: &[&str] = &["type", "text", "cache_control"];
pub(super) const IMAGE_PART: &[&str] = &["type", "image_url"];
pub(super) const IMAGE_URL: &[&str] = &["url", "detail"];
/// The fields of a file part, and of its `file`.
pub(super) const FILE_PART: &[&str] = &["type", "file"];
pub(super) const FILE: &[&str] = &["file_data", "file_id", "filename"];
/// The fields of a tool call an assistant message holds, and of its function (with what
/// streamed answers and the SDKs' helpers leave on them: `index`, `parsed_arguments`).
pub(super) const TOOL_CALL: &[&str] = &["id", "type", "function", "index"];
pub(super) const CALLED: &[&str] = &["name", "arguments", "parsed_arguments"];
/// The fields of a tool, and of its function.
pub(super) const TOOL: &[&str] = &["type", "function"];
pub(super) const FUNCTION: &[&str] = &["name", "description", "parameters", "strict"];
/// The fields of `tool_choice` naming a tool, and of its function.
pub(super) const CHOICE: &[&str] = &["type", "function"];
pub(super) const CHOSEN: &[&str] = &["name"];
/// The fields of `response_format`, and of its `json_schema`.
pub(super) const FORMAT: &[&str] = &["type", "json_schema"];
pub(super) const SCHEMA: &[&str] = &["name", "schema", "description", "strict"];
