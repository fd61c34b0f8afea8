//! Every recorded Anthropic Messages exchange decoded and checked against what the service
//! meant.

mod fixtures;

use fixtures::{Case, api_error, cases, run_stream};
use kite_core::{ApiErrorKind, Error, Event, FinishReason, Part, Response};
use kite_wire::anthropic::{AnthropicStreamDecoder, decode_response};
use proptest::prelude::*;
use serde_json::{Value, json};

fn decode(case: &Case) -> Result<Response, Error> {
    fixtures::decode::<AnthropicStreamDecoder>(case, decode_response)
}

fn ok(case: &Case) -> Response {
    decode(case).unwrap_or_else(|e| panic!("{}: {e:?}", case.name))
}

fn calls(r: &Response) -> Vec<(String, String, Value)> {
    r.tool_calls()
        .map(|c| {
            (
                c.id.clone(),
                c.name.clone(),
                c.parse_arguments().expect("arguments are JSON"),
            )
        })
        .collect()
}

fn reasoning(r: &Response) -> Vec<(String, kite_core::Metadata)> {
    r.message
        .parts
        .iter()
        .filter_map(|p| match p {
            Part::Reasoning(x) => Some((x.text.clone(), x.metadata.clone())),
            _ => None,
        })
        .collect()
}

/// input (cache included), output
fn usage(r: &Response, name: &str, input: u64, output: u64) {
    assert_eq!(
        (r.usage.input_tokens, r.usage.output_tokens),
        (input, output),
        "{name}: usage"
    );
    assert_eq!(r.usage.total_tokens, input + output, "{name}: total");
}

fn err(case: &Case, status: u16, kind: ApiErrorKind, ty: &str, words: &str) {
    let e = api_error(&case.name, decode(case));
    assert_eq!((e.status, e.kind), (Some(status), kind), "{}", case.name);
    assert_eq!(e.error_type.as_deref(), Some(ty), "{}", case.name);
    assert!(e.message.contains(words), "{}: {:?}", case.name, e.message);
}

fn check(case: &Case) {
    use ApiErrorKind as K;
    use FinishReason::*;
    let name = case.name.rsplit('/').next().unwrap();
    let full = case.name.as_str();
    match name {
        "text-basic" => {
            let r = ok(case);
            assert_eq!(r.text(), "4200 + 42 = 4242");
            assert_eq!(r.finish_reason, Stop);
            usage(&r, full, 17, 15);
        }
        "text-basic-httprr" => {
            let r = ok(case);
            assert!(
                r.text().starts_with("Hello! As an AI language model"),
                "{}",
                r.text()
            );
            usage(&r, full, 13, 35);
        }
        "max-tokens" | "stream-max-tokens" => {
            let r = ok(case);
            assert!(
                r.text().starts_with(
                    "Here are all 50 U.S. states in alphabetical order:\n\n1. Alabama"
                )
            );
            assert_eq!(r.finish_reason, Length);
            usage(&r, full, 15, 50);
        }
        "max-tokens-with-beta-header-httprr" => {
            let r = ok(case);
            assert!(
                r.text()
                    .starts_with("<thinking>\nThe get_weather tool is relevant")
            );
            assert_eq!(r.finish_reason, Length);
            usage(&r, full, 611, 100);
        }
        "parallel-tool-use" => {
            let r = ok(case);
            assert_eq!(r.finish_reason, ToolCalls);
            assert_eq!(
                calls(&r),
                [
                    (
                        "toolu_01TjHdHxyQNDy4DipRieJU5n".into(),
                        "weather".into(),
                        json!({"latitude": "52.5200", "longitude": "13.4050"})
                    ),
                    (
                        "toolu_01QHFWAkMuVLb3VgS4EDGUGY".into(),
                        "best_language_to_learn".into(),
                        json!({})
                    ),
                ]
            );
            usage(&r, full, 701, 98);
        }
        "parallel-tool-use-four-calls" => {
            let r = ok(case);
            assert!(
                r.text()
                    .starts_with("I'll help you find out who is the youngest")
            );
            let names: Vec<Value> = calls(&r).into_iter().map(|c| c.2["name"].clone()).collect();
            assert_eq!(
                names,
                [
                    json!("Alice"),
                    json!("Bob"),
                    json!("Charlie"),
                    json!("Daisy")
                ]
            );
            assert_eq!(calls(&r)[0].0, "toolu_0167cfEnoQaPviGdVXA95zcu");
        }
        "tool-use-text-and-two-calls" | "stream-text-and-two-tool-uses" => {
            let r = ok(case);
            assert_eq!(
                r.text(),
                "I'll retrieve the secrets for both passwords you provided."
            );
            assert_eq!(r.finish_reason, ToolCalls);
            let args: Vec<Value> = calls(&r).into_iter().map(|c| c.2).collect();
            assert_eq!(
                args,
                [
                    json!({"password": "mellon"}),
                    json!({"password": "radiance"})
                ]
            );
            usage(&r, full, 416, 109);
            if case.sse {
                assert_eq!(calls(&r)[1].0, "toolu_01XZTimPexA7h3EVKesnKt5T");
            }
        }
        "thinking" => {
            let r = ok(case);
            assert_eq!(r.text(), "3");
            let th = reasoning(&r);
            assert_eq!(th.len(), 1);
            assert!(
                th[0]
                    .0
                    .starts_with("I need to find all primes below 400 that")
            );
            let sig = th[0]
                .1
                .get("anthropic", "signature")
                .unwrap()
                .as_str()
                .unwrap();
            assert!(sig.starts_with("EuURCkYICxgC") && sig.len() > 100);
            usage(&r, full, 67, 964);
        }
        "stream-thinking" | "stream-thinking-haiku" => {
            let r = ok(case);
            let th = reasoning(&r);
            assert_eq!(th.len(), 1, "{full}");
            let (start, sig_start) = if name == "stream-thinking" {
                ("The user wants two names for a pet pelic", "EuYDCmMIDBgC")
            } else {
                ("This is a clever paradox question. Let m", "ErsNCpMBCBAY")
            };
            assert!(th[0].0.starts_with(start), "{full}");
            let sig = th[0]
                .1
                .get("anthropic", "signature")
                .unwrap()
                .as_str()
                .unwrap();
            assert!(sig.starts_with(sig_start) && sig.len() > 100, "{full}");
            assert!(
                matches!(r.message.parts[0], Part::Reasoning(_)),
                "thinking comes first"
            );
            assert_eq!(r.finish_reason, Stop);
        }
        "stream-thinking-then-tool-use" => {
            let r = ok(case);
            assert!(
                reasoning(&r)[0]
                    .0
                    .starts_with("The user wants me to:\n1. Use the fixed_v")
            );
            assert_eq!(
                calls(&r),
                [(
                    "toolu_01825dXWLSoJwCst1qTsiWdb".into(),
                    "fixed_version".into(),
                    json!({})
                )]
            );
            assert_eq!(r.finish_reason, ToolCalls);
            usage(&r, full, 598, 92);
        }
        "redacted-thinking" | "stream-redacted-thinking" => {
            let r = ok(case);
            let th = reasoning(&r);
            assert_eq!(th.len(), if case.sse { 2 } else { 1 }, "{full}");
            for (text, meta) in &th {
                assert!(text.is_empty());
                let data = meta
                    .get("anthropic", "redacted_data")
                    .unwrap()
                    .as_str()
                    .unwrap();
                assert!(data.len() > 100, "{full}");
            }
            assert!(r.text().starts_with("I notice that"), "{full}");
        }
        "stream-text" => {
            let r = ok(case);
            assert_eq!(r.text(), "Hello");
            assert_eq!(r.id.as_deref().map(|i| i.starts_with("msg_")), Some(true));
            usage(&r, full, 10, 4);
        }
        "stream-text-padded-data-lines-httprr" => {
            let r = ok(case);
            assert_eq!(r.text(), "1\n2\n3\n4\n5");
            usage(&r, full, 15, 13);
        }
        "stream-after-tool-result" => {
            let r = ok(case);
            assert!(
                r.text()
                    .starts_with("Here are two great names for your pet pelican:")
            );
            usage(&r, full, 678, 82);
        }
        "stream-stop-sequence" => {
            let r = ok(case);
            assert!(
                r.text()
                    .starts_with("\ndef pelican():\n    return \"A large waterbird")
            );
            assert_eq!(r.finish_reason, Stop);
        }
        "stream-tool-use-input-fragments" => {
            let r = ok(case);
            assert_eq!(
                calls(&r),
                [(
                    "toolu_01MKSN7NHsBVKr7Jvw5pqCQq".into(),
                    "weather".into(),
                    json!({"latitude": "52.5200", "longitude": "13.4050"})
                )]
            );
            usage(&r, full, 633, 75);
        }
        "stream-tool-use-no-input" | "stream-tool-use-no-params" => {
            let r = ok(case);
            let c = &calls(&r)[0];
            let want = if name == "stream-tool-use-no-input" {
                "pelican_name_generator"
            } else {
                "best_language_to_learn"
            };
            assert_eq!((c.1.as_str(), &c.2), (want, &json!({})));
            assert_eq!(r.tool_calls().next().unwrap().arguments, "{}");
        }
        "stream-citations" => {
            let (events, e) = run_stream(AnthropicStreamDecoder::new(), &[&case.body]);
            assert!(e.is_none());
            assert!(events.iter().any(|e| matches!(e, Event::Unknown { kind, data } if kind == "anthropic.citations_delta" && data["citation"]["type"] == "char_location")));
            let r = ok(case);
            assert!(
                r.text()
                    .starts_with("The Ruby programming language was created by Yukihiro Matsumoto")
            );
        }
        "stream-web-search-server-tool" => {
            let (events, e) = run_stream(AnthropicStreamDecoder::new(), &[&case.body]);
            assert!(e.is_none());
            let blocks: Vec<&Value> = events
                .iter()
                .filter_map(|e| match e {
                    Event::Unknown { kind, data } if kind == "anthropic.content_block" => {
                        Some(data)
                    }
                    _ => None,
                })
                .collect();
            assert_eq!(blocks[0]["type"], "server_tool_use");
            assert_eq!(
                blocks[0]["input"],
                json!({"query": "San Francisco weather today"}),
                "streamed input kept"
            );
            assert_eq!(blocks[1]["type"], "web_search_tool_result");
            let r = ok(case);
            assert!(r.text().starts_with(
                "Based on the search results, here's the current weather in San Francis"
            ));
            assert_eq!(
                r.tool_calls().count(),
                0,
                "server tools are not kite tool calls"
            );
            usage(&r, full, 10423, 341);
        }
        "error-401-authentication" => {
            err(
                case,
                401,
                K::Authentication,
                "authentication_error",
                "invalid x-api-key",
            );
            assert_eq!(
                api_error(full, decode(case)).request_id.as_deref(),
                Some("req_011CeCGmBjaWkq37Sf5iU7so")
            );
        }
        "error-400-prompt-too-long" => err(
            case,
            400,
            K::InvalidRequest,
            "invalid_request_error",
            "prompt is too long",
        ),
        "error-400-unsupported-effort" => err(
            case,
            400,
            K::InvalidRequest,
            "invalid_request_error",
            "effort level 'xhigh'",
        ),
        "error-404-model-not-found" => err(
            case,
            404,
            K::NotFound,
            "not_found_error",
            "this-model-does-not-exist-12345",
        ),
        _ => panic!("{full}: a recorded case with no expectation; add one to check()"),
    }
}

#[test]
fn every_recorded_anthropic_exchange_decodes_to_what_the_service_meant() {
    let dirs = cases("messages");
    assert_eq!(dirs.len(), 28);
    for dir in dirs {
        check(&Case::load(&dir));
    }
}

#[test]
fn errors_inside_a_stream_and_cut_streams_are_typed() {
    let body = b"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"model\":\"c\",\"usage\":{\"input_tokens\":1}}}\n\n\
event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n";
    let (events, e) = run_stream(AnthropicStreamDecoder::new(), &[body]);
    assert_eq!(events.len(), 1);
    let e = api_error("overloaded", Err(e.unwrap()));
    assert_eq!(
        (e.kind, e.message.as_str()),
        (ApiErrorKind::Overloaded, "Overloaded")
    );

    let cut = &body[..body.iter().position(|b| *b == b'\n').unwrap() + 60];
    let (_, e) = run_stream(AnthropicStreamDecoder::new(), &[cut]);
    assert!(
        matches!(e, Some(Error::Decode(_)) | Some(Error::Transport(_))),
        "{e:?}"
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]
    #[test]
    fn anthropic_streams_split_anywhere_decode_the_same(cuts in prop::collection::vec(any::<usize>(), 0..40)) {
        for case in fixtures::sse_cases("messages") {
            let whole = fixtures::decode_split::<AnthropicStreamDecoder>(&case.body, &[]);
            let split = fixtures::decode_split::<AnthropicStreamDecoder>(&case.body, &cuts);
            prop_assert_eq!(&whole, &split, "{}", case.name);
        }
    }
}
