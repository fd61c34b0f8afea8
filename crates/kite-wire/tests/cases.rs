//! Every recorded exchange under `testdata/wire/` as its own test, named after the case
//! (`cargo test -p kite-wire --test cases openai::chat_completions::text_basic`): the
//! recorded answer is decoded by its API's codec, and what it means (the response, or the
//! typed error) must equal `expected.json` beside the case.
//!
//! After a deliberate change of meaning, `KITE_BLESS=1` rewrites the expectation files;
//! review them with `git diff`. A new case needs a line below (the completeness test names
//! any that is missing).

mod fixtures;

use fixtures::{Case, root};
use kite_core::{Error, TranscriptEvent};
use kite_wire::anthropic::Messages;
use kite_wire::audio::{TranscriptStream, decode_response};
use kite_wire::openai_chat::ChatCompletions;
use kite_wire::openai_responses::Responses;
use kite_wire::{Api, Codec};
use serde_json::{Value, json};

macro_rules! case {
    ($name:ident, $path:literal) => {
        #[test]
        fn $name() {
            crate::check($path);
        }
    };
}

mod anthropic {
    mod messages {
        case!(
            error_400_prompt_too_long,
            "anthropic/messages/error-400-prompt-too-long"
        );
        case!(
            error_400_unsupported_effort,
            "anthropic/messages/error-400-unsupported-effort"
        );
        case!(
            error_401_authentication,
            "anthropic/messages/error-401-authentication"
        );
        case!(
            error_404_model_not_found,
            "anthropic/messages/error-404-model-not-found"
        );
        case!(max_tokens, "anthropic/messages/max-tokens");
        case!(
            max_tokens_with_beta_header_httprr,
            "anthropic/messages/max-tokens-with-beta-header-httprr"
        );
        case!(parallel_tool_use, "anthropic/messages/parallel-tool-use");
        case!(
            parallel_tool_use_four_calls,
            "anthropic/messages/parallel-tool-use-four-calls"
        );
        case!(redacted_thinking, "anthropic/messages/redacted-thinking");
        case!(
            stream_after_tool_result,
            "anthropic/messages/stream-after-tool-result"
        );
        case!(stream_citations, "anthropic/messages/stream-citations");
        case!(stream_max_tokens, "anthropic/messages/stream-max-tokens");
        case!(
            stream_redacted_thinking,
            "anthropic/messages/stream-redacted-thinking"
        );
        case!(
            stream_stop_sequence,
            "anthropic/messages/stream-stop-sequence"
        );
        case!(stream_text, "anthropic/messages/stream-text");
        case!(
            stream_text_and_two_tool_uses,
            "anthropic/messages/stream-text-and-two-tool-uses"
        );
        case!(
            stream_text_padded_data_lines_httprr,
            "anthropic/messages/stream-text-padded-data-lines-httprr"
        );
        case!(stream_thinking, "anthropic/messages/stream-thinking");
        case!(
            stream_thinking_haiku,
            "anthropic/messages/stream-thinking-haiku"
        );
        case!(
            stream_thinking_then_tool_use,
            "anthropic/messages/stream-thinking-then-tool-use"
        );
        case!(
            stream_tool_use_input_fragments,
            "anthropic/messages/stream-tool-use-input-fragments"
        );
        case!(
            stream_tool_use_no_input,
            "anthropic/messages/stream-tool-use-no-input"
        );
        case!(
            stream_tool_use_no_params,
            "anthropic/messages/stream-tool-use-no-params"
        );
        case!(
            stream_web_search_server_tool,
            "anthropic/messages/stream-web-search-server-tool"
        );
        case!(text_basic, "anthropic/messages/text-basic");
        case!(text_basic_httprr, "anthropic/messages/text-basic-httprr");
        case!(thinking, "anthropic/messages/thinking");
        case!(
            tool_use_text_and_two_calls,
            "anthropic/messages/tool-use-text-and-two-calls"
        );
    }
}
mod groq {
    mod chat_completions {
        case!(
            error_400_tool_use_failed,
            "groq/chat-completions/error-400-tool-use-failed"
        );
        case!(
            error_404_model_not_found,
            "groq/chat-completions/error-404-model-not-found"
        );
        case!(
            stream_error_event_tool_use_failed,
            "groq/chat-completions/stream-error-event-tool-use-failed"
        );
        case!(stream_tool_call, "groq/chat-completions/stream-tool-call");
        case!(text_basic, "groq/chat-completions/text-basic");
    }
}
mod mistral {
    mod audio_transcriptions {
        case!(voxtral_json, "mistral/audio-transcriptions/voxtral-json");
    }
    mod chat_completions {
        case!(
            error_401_invalid_key,
            "mistral/chat-completions/error-401-invalid-key"
        );
        case!(
            json_object_mode,
            "mistral/chat-completions/json-object-mode"
        );
        case!(
            parallel_tool_calls,
            "mistral/chat-completions/parallel-tool-calls"
        );
        case!(
            stream_after_tool_result,
            "mistral/chat-completions/stream-after-tool-result"
        );
        case!(
            stream_magistral_thinking,
            "mistral/chat-completions/stream-magistral-thinking"
        );
        case!(stream_text, "mistral/chat-completions/stream-text");
        case!(
            stream_thinking_content_chunks,
            "mistral/chat-completions/stream-thinking-content-chunks"
        );
        case!(
            stream_tool_call,
            "mistral/chat-completions/stream-tool-call"
        );
        case!(text_basic, "mistral/chat-completions/text-basic");
        case!(
            thinking_content_chunks,
            "mistral/chat-completions/thinking-content-chunks"
        );
        case!(tool_call, "mistral/chat-completions/tool-call");
        case!(
            tool_call_no_args_with_text,
            "mistral/chat-completions/tool-call-no-args-with-text"
        );
        case!(
            tool_result_final_answer,
            "mistral/chat-completions/tool-result-final-answer"
        );
    }
}
mod openai {
    mod audio_transcriptions {
        case!(diarize_json, "openai/audio-transcriptions/diarize-json");
        case!(diarize_stream, "openai/audio-transcriptions/diarize-stream");
        case!(
            gpt_4o_transcribe_stream,
            "openai/audio-transcriptions/gpt-4o-transcribe-stream"
        );
        case!(whisper_json, "openai/audio-transcriptions/whisper-json");
    }
    mod chat_completions {
        case!(audio_input, "openai/chat-completions/audio-input");
        case!(
            error_400_unsupported_parameter,
            "openai/chat-completions/error-400-unsupported-parameter"
        );
        case!(
            error_400_unsupported_value,
            "openai/chat-completions/error-400-unsupported-value"
        );
        case!(
            error_401_invalid_api_key,
            "openai/chat-completions/error-401-invalid-api-key"
        );
        case!(
            error_401_on_stream_request,
            "openai/chat-completions/error-401-on-stream-request"
        );
        case!(
            error_404_model_not_found,
            "openai/chat-completions/error-404-model-not-found"
        );
        case!(
            error_429_request_too_large_tpm,
            "openai/chat-completions/error-429-request-too-large-tpm"
        );
        case!(finish_length, "openai/chat-completions/finish-length");
        case!(json_object_mode, "openai/chat-completions/json-object-mode");
        case!(
            legacy_function_call,
            "openai/chat-completions/legacy-function-call"
        );
        case!(
            reasoning_model_o3_mini,
            "openai/chat-completions/reasoning-model-o3-mini"
        );
        case!(
            refusal_structured_output,
            "openai/chat-completions/refusal-structured-output"
        );
        case!(
            stream_after_tool_result,
            "openai/chat-completions/stream-after-tool-result"
        );
        case!(
            stream_finish_length_empty_content,
            "openai/chat-completions/stream-finish-length-empty-content"
        );
        case!(
            stream_parallel_tool_calls_same_tool,
            "openai/chat-completions/stream-parallel-tool-calls-same-tool"
        );
        case!(
            stream_parallel_tool_calls_two_tools,
            "openai/chat-completions/stream-parallel-tool-calls-two-tools"
        );
        case!(stream_refusal, "openai/chat-completions/stream-refusal");
        case!(
            stream_text_gpt35_httprr,
            "openai/chat-completions/stream-text-gpt35-httprr"
        );
        case!(
            stream_text_with_usage,
            "openai/chat-completions/stream-text-with-usage"
        );
        case!(
            stream_tool_call_fragments,
            "openai/chat-completions/stream-tool-call-fragments"
        );
        case!(
            stream_tool_call_no_arguments,
            "openai/chat-completions/stream-tool-call-no-arguments"
        );
        case!(
            structured_output_json_schema,
            "openai/chat-completions/structured-output-json-schema"
        );
        case!(text_basic, "openai/chat-completions/text-basic");
        case!(
            text_basic_gpt35_httprr,
            "openai/chat-completions/text-basic-gpt35-httprr"
        );
        case!(tool_call_single, "openai/chat-completions/tool-call-single");
        case!(
            tool_calls_parallel_same_tool,
            "openai/chat-completions/tool-calls-parallel-same-tool"
        );
        case!(
            tool_calls_parallel_two_tools,
            "openai/chat-completions/tool-calls-parallel-two-tools"
        );
        case!(
            tool_result_final_answer,
            "openai/chat-completions/tool-result-final-answer"
        );
    }
    mod responses {
        case!(
            error_400_context_length_exceeded,
            "openai/responses/error-400-context-length-exceeded"
        );
        case!(
            error_400_invalid_temperature,
            "openai/responses/error-400-invalid-temperature"
        );
        case!(
            error_400_model_not_found,
            "openai/responses/error-400-model-not-found"
        );
        case!(
            error_400_reasoning_item_without_follower,
            "openai/responses/error-400-reasoning-item-without-follower"
        );
        case!(
            error_401_invalid_api_key,
            "openai/responses/error-401-invalid-api-key"
        );
        case!(function_call, "openai/responses/function-call");
        case!(
            function_call_output_followup,
            "openai/responses/function-call-output-followup"
        );
        case!(
            incomplete_max_output_tokens,
            "openai/responses/incomplete-max-output-tokens"
        );
        case!(
            parallel_function_calls,
            "openai/responses/parallel-function-calls"
        );
        case!(
            parallel_function_calls_after_reasoning,
            "openai/responses/parallel-function-calls-after-reasoning"
        );
        case!(
            reasoning_encrypted_content,
            "openai/responses/reasoning-encrypted-content"
        );
        case!(reasoning_summary, "openai/responses/reasoning-summary");
        case!(refusal, "openai/responses/refusal");
        case!(
            stream_after_function_output,
            "openai/responses/stream-after-function-output"
        );
        case!(
            stream_error_insufficient_quota,
            "openai/responses/stream-error-insufficient-quota"
        );
        case!(
            stream_function_call_after_reasoning,
            "openai/responses/stream-function-call-after-reasoning"
        );
        case!(
            stream_function_call_arguments,
            "openai/responses/stream-function-call-arguments"
        );
        case!(
            stream_incomplete_max_output_tokens,
            "openai/responses/stream-incomplete-max-output-tokens"
        );
        case!(
            stream_parallel_function_calls,
            "openai/responses/stream-parallel-function-calls"
        );
        case!(
            stream_reasoning_summary,
            "openai/responses/stream-reasoning-summary"
        );
        case!(stream_refusal, "openai/responses/stream-refusal");
        case!(stream_text_basic, "openai/responses/stream-text-basic");
        case!(stream_web_search, "openai/responses/stream-web-search");
        case!(text_basic, "openai/responses/text-basic");
        case!(web_search_call, "openai/responses/web-search-call");
    }
}
mod openrouter {
    mod audio_transcriptions {
        case!(
            gpt_4o_mini_transcribe_json,
            "openrouter/audio-transcriptions/gpt-4o-mini-transcribe-json"
        );
    }
    mod chat_completions {
        case!(
            error_400_context_length,
            "openrouter/chat-completions/error-400-context-length"
        );
        case!(
            error_401_missing_auth,
            "openrouter/chat-completions/error-401-missing-auth"
        );
        case!(
            error_429_upstream_rate_limited,
            "openrouter/chat-completions/error-429-upstream-rate-limited"
        );
        case!(
            parallel_tool_calls,
            "openrouter/chat-completions/parallel-tool-calls"
        );
        case!(
            stream_error_in_200_body,
            "openrouter/chat-completions/stream-error-in-200-body"
        );
        case!(stream_gpt4o, "openrouter/chat-completions/stream-gpt4o");
        case!(
            stream_llama_httprr,
            "openrouter/chat-completions/stream-llama-httprr"
        );
        case!(
            stream_reasoning_claude,
            "openrouter/chat-completions/stream-reasoning-claude"
        );
        case!(
            stream_reasoning_details_tool_call,
            "openrouter/chat-completions/stream-reasoning-details-tool-call"
        );
        case!(
            stream_reasoning_encrypted_o3,
            "openrouter/chat-completions/stream-reasoning-encrypted-o3"
        );
        case!(
            stream_text_processing_comments,
            "openrouter/chat-completions/stream-text-processing-comments"
        );
        case!(
            stream_tool_call,
            "openrouter/chat-completions/stream-tool-call"
        );
        case!(tool_call, "openrouter/chat-completions/tool-call");
        case!(
            usage_with_cost_and_reasoning,
            "openrouter/chat-completions/usage-with-cost-and-reasoning"
        );
    }
}

/// Every case folder, as `provider/api/case`.
const CASES: &[&str] = &[
    "anthropic/messages/error-400-prompt-too-long",
    "anthropic/messages/error-400-unsupported-effort",
    "anthropic/messages/error-401-authentication",
    "anthropic/messages/error-404-model-not-found",
    "anthropic/messages/max-tokens",
    "anthropic/messages/max-tokens-with-beta-header-httprr",
    "anthropic/messages/parallel-tool-use",
    "anthropic/messages/parallel-tool-use-four-calls",
    "anthropic/messages/redacted-thinking",
    "anthropic/messages/stream-after-tool-result",
    "anthropic/messages/stream-citations",
    "anthropic/messages/stream-max-tokens",
    "anthropic/messages/stream-redacted-thinking",
    "anthropic/messages/stream-stop-sequence",
    "anthropic/messages/stream-text",
    "anthropic/messages/stream-text-and-two-tool-uses",
    "anthropic/messages/stream-text-padded-data-lines-httprr",
    "anthropic/messages/stream-thinking",
    "anthropic/messages/stream-thinking-haiku",
    "anthropic/messages/stream-thinking-then-tool-use",
    "anthropic/messages/stream-tool-use-input-fragments",
    "anthropic/messages/stream-tool-use-no-input",
    "anthropic/messages/stream-tool-use-no-params",
    "anthropic/messages/stream-web-search-server-tool",
    "anthropic/messages/text-basic",
    "anthropic/messages/text-basic-httprr",
    "anthropic/messages/thinking",
    "anthropic/messages/tool-use-text-and-two-calls",
    "groq/chat-completions/error-400-tool-use-failed",
    "groq/chat-completions/error-404-model-not-found",
    "groq/chat-completions/stream-error-event-tool-use-failed",
    "groq/chat-completions/stream-tool-call",
    "groq/chat-completions/text-basic",
    "mistral/audio-transcriptions/voxtral-json",
    "mistral/chat-completions/error-401-invalid-key",
    "mistral/chat-completions/json-object-mode",
    "mistral/chat-completions/parallel-tool-calls",
    "mistral/chat-completions/stream-after-tool-result",
    "mistral/chat-completions/stream-magistral-thinking",
    "mistral/chat-completions/stream-text",
    "mistral/chat-completions/stream-thinking-content-chunks",
    "mistral/chat-completions/stream-tool-call",
    "mistral/chat-completions/text-basic",
    "mistral/chat-completions/thinking-content-chunks",
    "mistral/chat-completions/tool-call",
    "mistral/chat-completions/tool-call-no-args-with-text",
    "mistral/chat-completions/tool-result-final-answer",
    "openai/audio-transcriptions/diarize-json",
    "openai/audio-transcriptions/diarize-stream",
    "openai/audio-transcriptions/gpt-4o-transcribe-stream",
    "openai/audio-transcriptions/whisper-json",
    "openai/chat-completions/audio-input",
    "openai/chat-completions/error-400-unsupported-parameter",
    "openai/chat-completions/error-400-unsupported-value",
    "openai/chat-completions/error-401-invalid-api-key",
    "openai/chat-completions/error-401-on-stream-request",
    "openai/chat-completions/error-404-model-not-found",
    "openai/chat-completions/error-429-request-too-large-tpm",
    "openai/chat-completions/finish-length",
    "openai/chat-completions/json-object-mode",
    "openai/chat-completions/legacy-function-call",
    "openai/chat-completions/reasoning-model-o3-mini",
    "openai/chat-completions/refusal-structured-output",
    "openai/chat-completions/stream-after-tool-result",
    "openai/chat-completions/stream-finish-length-empty-content",
    "openai/chat-completions/stream-parallel-tool-calls-same-tool",
    "openai/chat-completions/stream-parallel-tool-calls-two-tools",
    "openai/chat-completions/stream-refusal",
    "openai/chat-completions/stream-text-gpt35-httprr",
    "openai/chat-completions/stream-text-with-usage",
    "openai/chat-completions/stream-tool-call-fragments",
    "openai/chat-completions/stream-tool-call-no-arguments",
    "openai/chat-completions/structured-output-json-schema",
    "openai/chat-completions/text-basic",
    "openai/chat-completions/text-basic-gpt35-httprr",
    "openai/chat-completions/tool-call-single",
    "openai/chat-completions/tool-calls-parallel-same-tool",
    "openai/chat-completions/tool-calls-parallel-two-tools",
    "openai/chat-completions/tool-result-final-answer",
    "openai/responses/error-400-context-length-exceeded",
    "openai/responses/error-400-invalid-temperature",
    "openai/responses/error-400-model-not-found",
    "openai/responses/error-400-reasoning-item-without-follower",
    "openai/responses/error-401-invalid-api-key",
    "openai/responses/function-call",
    "openai/responses/function-call-output-followup",
    "openai/responses/incomplete-max-output-tokens",
    "openai/responses/parallel-function-calls",
    "openai/responses/parallel-function-calls-after-reasoning",
    "openai/responses/reasoning-encrypted-content",
    "openai/responses/reasoning-summary",
    "openai/responses/refusal",
    "openai/responses/stream-after-function-output",
    "openai/responses/stream-error-insufficient-quota",
    "openai/responses/stream-function-call-after-reasoning",
    "openai/responses/stream-function-call-arguments",
    "openai/responses/stream-incomplete-max-output-tokens",
    "openai/responses/stream-parallel-function-calls",
    "openai/responses/stream-reasoning-summary",
    "openai/responses/stream-refusal",
    "openai/responses/stream-text-basic",
    "openai/responses/stream-web-search",
    "openai/responses/text-basic",
    "openai/responses/web-search-call",
    "openrouter/audio-transcriptions/gpt-4o-mini-transcribe-json",
    "openrouter/chat-completions/error-400-context-length",
    "openrouter/chat-completions/error-401-missing-auth",
    "openrouter/chat-completions/error-429-upstream-rate-limited",
    "openrouter/chat-completions/parallel-tool-calls",
    "openrouter/chat-completions/stream-error-in-200-body",
    "openrouter/chat-completions/stream-gpt4o",
    "openrouter/chat-completions/stream-llama-httprr",
    "openrouter/chat-completions/stream-reasoning-claude",
    "openrouter/chat-completions/stream-reasoning-details-tool-call",
    "openrouter/chat-completions/stream-reasoning-encrypted-o3",
    "openrouter/chat-completions/stream-text-processing-comments",
    "openrouter/chat-completions/stream-tool-call",
    "openrouter/chat-completions/tool-call",
    "openrouter/chat-completions/usage-with-cost-and-reasoning",
];

#[test]
fn every_recorded_case_has_its_own_test() {
    let mut found = Vec::new();
    for provider in std::fs::read_dir(root()).unwrap().flatten() {
        for api in std::fs::read_dir(provider.path())
            .into_iter()
            .flatten()
            .flatten()
        {
            for case in std::fs::read_dir(api.path())
                .into_iter()
                .flatten()
                .flatten()
            {
                if case.path().join("meta.json").exists() {
                    let rel = case.path().strip_prefix(root()).unwrap().to_owned();
                    found.push(rel.to_string_lossy().replace('\\', "/"));
                }
            }
        }
    }
    found.sort();
    let missing: Vec<&String> = found
        .iter()
        .filter(|c| !CASES.contains(&c.as_str()))
        .collect();
    assert!(
        missing.is_empty(),
        "add a `case!` line and a CASES entry in tests/cases.rs for: {missing:?}"
    );
    assert_eq!(found.len(), CASES.len(), "CASES names a case that is gone");
}

/// Decodes case `path` and compares what it means with its `expected.json`.
fn check(path: &str) {
    let dir = root().join(path);
    let got = meaning(path, &Case::load(&dir));
    let file = dir.join("expected.json");
    let text = format!("{}\n", serde_json::to_string_pretty(&got).unwrap());
    if std::env::var_os("KITE_BLESS").is_some() {
        std::fs::write(&file, &text).unwrap();
        return;
    }
    let want = std::fs::read_to_string(&file).unwrap_or_else(|_| {
        panic!("{path}: no expected.json; record it with KITE_BLESS=1 and review it")
    });
    assert_eq!(
        text, want,
        "{path}: the decoded meaning differs from expected.json"
    );
}

/// What the case's answer means, as JSON: the response (or transcript), or the error.
fn meaning(path: &str, case: &Case) -> Value {
    let api = path.split('/').nth(1).unwrap();
    if api == "audio-transcriptions" {
        return transcript(case);
    }
    let codec: Box<dyn Codec> = match api {
        "chat-completions" => Box::new(ChatCompletions::default()),
        "messages" => Box::new(Messages::default()),
        "responses" => Box::new(Responses::default()),
        other => panic!("{path}: no codec for {other}"),
    };
    let result = if case.status() >= 400 {
        Err(codec.decode_error(case.status(), &case.body).into())
    } else if case.sse {
        let mut d = codec.stream_decoder();
        let mut events = Vec::new();
        d.decode(&case.body, &mut events)
            .and_then(|()| d.finish(&mut events))
            .and_then(|()| kite_core::ResponseBuilder::build(events))
    } else {
        codec.decode_response(&case.body)
    };
    match result {
        Ok(r) => json!({"response": r}),
        Err(e) => json!({"error": error(&e)}),
    }
}

fn transcript(case: &Case) -> Value {
    let result = if case.status() >= 400 {
        Err(kite_wire::audio::Transcriptions
            .decode_error(case.status(), &case.body)
            .into())
    } else if case.sse {
        let mut d = TranscriptStream::new();
        let mut events = Vec::new();
        d.decode(&case.body, &mut events)
            .and_then(|()| d.finish(&mut events))
            .and_then(|()| match events.pop() {
                Some(TranscriptEvent::Done(t)) => Ok(t),
                other => Err(Error::decode(
                    format!("no transcript at the end: {other:?}"),
                    "",
                )),
            })
    } else {
        decode_response(&case.body, false)
    };
    match result {
        Ok(t) => json!({"transcript": t}),
        Err(e) => json!({"error": error(&e)}),
    }
}

fn error(e: &Error) -> Value {
    match e {
        Error::Api(a) => json!({
            "api": {
                "status": a.status,
                "kind": format!("{:?}", a.kind),
                "code": a.code,
                "type": a.error_type,
                "param": a.param,
                "message": a.message,
                "request_id": a.request_id,
            }
        }),
        Error::Transport(t) => json!({"transport": format!("{:?}", t.kind), "message": t.message}),
        Error::Decode(d) => json!({"decode": d.message}),
        other => json!({"other": other.to_string()}),
    }
}
