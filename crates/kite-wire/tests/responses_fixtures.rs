//! Every recorded OpenAI Responses exchange decoded and checked against what the service
//! meant.

mod fixtures;

use fixtures::{Case, api_error, cases, run_stream};
use kite_core::{ApiErrorKind, Error, Event, FinishReason, Part, Response};
use kite_wire::openai_responses::{ResponsesStreamDecoder, decode_response};
use proptest::prelude::*;
use serde_json::{Value, json};

fn decode(case: &Case) -> Result<Response, Error> {
    fixtures::decode::<ResponsesStreamDecoder>(case, decode_response)
}

fn ok(case: &Case) -> Response {
    decode(case).unwrap_or_else(|e| panic!("{}: {e:?}", case.name))
}

fn calls(r: &Response) -> Vec<(String, String, Value)> {
    r.tool_calls()
        .map(|c| (c.id.clone(), c.name.clone(), c.parse_arguments().unwrap()))
        .collect()
}

fn reasoning(r: &Response) -> Vec<(String, Value)> {
    r.message
        .parts
        .iter()
        .filter_map(|p| match p {
            Part::Reasoning(x) => Some((
                x.text.clone(),
                x.metadata
                    .get("responses", "item")
                    .cloned()
                    .unwrap_or_default(),
            )),
            _ => None,
        })
        .collect()
}

fn refusal(r: &Response) -> String {
    r.message
        .parts
        .iter()
        .filter_map(|p| match p {
            Part::Refusal { text } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

/// input, output, total, reasoning
fn usage(r: &Response, name: &str, u: [u64; 4]) {
    let got = [
        r.usage.input_tokens,
        r.usage.output_tokens,
        r.usage.total_tokens,
        r.usage.reasoning_tokens,
    ];
    assert_eq!(got, u, "{name}: usage");
}

fn err(
    case: &Case,
    status: u16,
    kind: ApiErrorKind,
    code: Option<&str>,
    param: Option<&str>,
    words: &str,
) {
    let e = api_error(&case.name, decode(case));
    assert_eq!((e.status, e.kind), (Some(status), kind), "{}", case.name);
    assert_eq!(
        (e.code.as_deref(), e.param.as_deref()),
        (code, param),
        "{}",
        case.name
    );
    assert!(e.message.contains(words), "{}: {:?}", case.name, e.message);
}

fn check(case: &Case) {
    use ApiErrorKind as K;
    use FinishReason::*;
    let full = case.name.as_str();
    let name = full.rsplit('/').next().unwrap();
    match name {
        "text-basic" | "stream-text-basic" => {
            let r = ok(case);
            assert_eq!(r.text(), "pong");
            assert_eq!(r.finish_reason, Stop);
            usage(&r, full, [11, 5, 16, 0]);
            assert!(r.id.as_deref().unwrap().starts_with("resp_"));
        }
        "function-call" | "stream-function-call-arguments" => {
            let r = ok(case);
            let id = if case.sse {
                "call_sVidsfFJ6zlzRpelrPkTPlpd"
            } else {
                "call_nJmCK7SJe3ajdYYplIbH0KgL"
            };
            assert_eq!(
                calls(&r),
                [(id.into(), "multiply".into(), json!({"a": 1231, "b": 2331}))]
            );
            assert_eq!(r.finish_reason, ToolCalls);
            usage(&r, full, [58, 23, 81, 0]);
            let item_id = r
                .tool_calls()
                .next()
                .unwrap()
                .metadata
                .get("responses", "item_id")
                .unwrap()
                .clone();
            assert!(item_id.as_str().unwrap().starts_with("fc_"), "{item_id}");
        }
        "function-call-output-followup" => {
            let r = ok(case);
            assert_eq!(r.text(), "1231 * 2331 = 2,869,461");
            usage(&r, full, [94, 17, 111, 0]);
        }
        "stream-after-function-output" => {
            let r = ok(case);
            assert_eq!(r.text(), "1231 × 2331 = **2,869,461**");
            usage(&r, full, [94, 18, 112, 0]);
        }
        "parallel-function-calls" | "stream-parallel-function-calls" => {
            let r = ok(case);
            let args: Vec<Value> = calls(&r).into_iter().map(|c| c.2).collect();
            assert_eq!(
                args,
                [
                    json!({"password": "mellon"}),
                    json!({"password": "radiance"})
                ]
            );
            assert_eq!(r.finish_reason, ToolCalls);
        }
        "parallel-function-calls-after-reasoning"
        | "reasoning-encrypted-content"
        | "stream-function-call-after-reasoning" => {
            let r = ok(case);
            let th = reasoning(&r);
            assert_eq!(th.len(), 1, "{full}");
            assert_eq!(th[0].1["type"], "reasoning");
            assert!(th[0].1["id"].as_str().unwrap().starts_with("rs_"));
            if name != "stream-function-call-after-reasoning" {
                assert!(
                    th[0].1["encrypted_content"].as_str().unwrap().len() > 100,
                    "{full}: the encrypted reasoning is kept"
                );
            }
            assert!(
                matches!(r.message.parts[0], Part::Reasoning(_)),
                "reasoning comes first"
            );
            let names: Vec<String> = calls(&r).into_iter().map(|c| c.1).collect();
            match name {
                "reasoning-encrypted-content" => {
                    assert_eq!(
                        calls(&r),
                        [(
                            "call_uy7tfNVokIN7NjFF6k7OtLyl".into(),
                            "lookup_population".into(),
                            json!({"country": "Pundora"})
                        )]
                    );
                    usage(&r, full, [94, 85, 179, 63]);
                }
                "parallel-function-calls-after-reasoning" => {
                    assert_eq!(names, ["weather", "best_language_to_learn"]);
                    usage(&r, full, [112, 284, 396, 192]);
                }
                _ => {
                    assert_eq!(
                        calls(&r),
                        [(
                            "call_E9m0fralKLjUmND1MuTXjnqm".into(),
                            "weather".into(),
                            json!({"latitude": "52.5200", "longitude": "13.4050"})
                        )]
                    );
                    assert_eq!(
                        (
                            r.usage.input_tokens,
                            r.usage.output_tokens,
                            r.usage.reasoning_tokens
                        ),
                        (87, 339, 256)
                    );
                }
            }
        }
        "reasoning-summary" | "stream-reasoning-summary" => {
            let r = ok(case);
            assert_eq!(r.text(), "3");
            let th = reasoning(&r);
            let start = if case.sse {
                "**Exploring prime numbers**\n\nI need to f"
            } else {
                "**Counting prime numbers with \"79\"**\n\nI "
            };
            assert!(th[0].0.starts_with(start), "{full}: {:?}", th[0].0);
            assert!(!th[0].1["summary"].as_array().unwrap().is_empty());
        }
        "incomplete-max-output-tokens" | "stream-incomplete-max-output-tokens" => {
            let r = ok(case);
            assert!(
                r.text()
                    .starts_with("Sure! Here is a list of all 50 U.S. states:\n\n1. Alabama")
            );
            assert_eq!(r.finish_reason, Length);
            usage(&r, full, [14, 50, 64, 0]);
        }
        "refusal" => {
            let r = ok(case);
            assert_eq!(refusal(&r), "I'm very sorry, but I can't assist with that.");
            assert_eq!(r.text(), "");
        }
        "stream-refusal" => {
            let r = ok(case);
            assert_eq!(refusal(&r), "I'm sorry, I can't assist with that.");
        }
        "web-search-call" | "stream-web-search" => {
            let (events, e) = if case.sse {
                run_stream(ResponsesStreamDecoder::new(), &[&case.body])
            } else {
                (
                    kite_wire::openai_responses::response_events(&case.body).unwrap(),
                    None,
                )
            };
            assert!(e.is_none());
            assert!(events.iter().any(|e| matches!(e, Event::Unknown { kind, data } if kind == "responses.output_item" && data["type"] == "web_search_call")));
            let r = ok(case);
            let start = if case.sse {
                "San Francisco weather today (Tuesday, September 16, 2025)"
            } else {
                "The latest stable Ruby (MRI/CRuby) version is **Ruby 4.0.6**"
            };
            assert!(r.text().starts_with(start), "{full}");
            assert_eq!(
                r.tool_calls().count(),
                0,
                "built-in tools are not kite tool calls"
            );
        }
        "stream-error-insufficient-quota" => {
            let (events, e) = run_stream(ResponsesStreamDecoder::new(), &[&case.body]);
            assert!(matches!(events.first(), Some(Event::Start { .. })));
            let e = api_error(full, Err(e.expect("the error ends the stream")));
            assert_eq!(
                (e.kind, e.code.as_deref()),
                (K::QuotaExceeded, Some("insufficient_quota"))
            );
        }
        "error-401-invalid-api-key" => err(
            case,
            401,
            K::Authentication,
            Some("invalid_api_key"),
            None,
            "Incorrect API key provided",
        ),
        "error-400-context-length-exceeded" => err(
            case,
            400,
            K::ContextLengthExceeded,
            Some("context_length_exceeded"),
            Some("input"),
            "exceeds the context window",
        ),
        "error-400-model-not-found" => err(
            case,
            400,
            K::NotFound,
            Some("model_not_found"),
            Some("model"),
            "this-model-does-not-exist-12345",
        ),
        "error-400-invalid-temperature" => err(
            case,
            400,
            K::InvalidRequest,
            Some("decimal_below_min_value"),
            Some("temperature"),
            "Invalid 'temperature'",
        ),
        "error-400-reasoning-item-without-follower" => err(
            case,
            400,
            K::InvalidRequest,
            None,
            Some("input"),
            "rs_68c42de022c881948db7ed1cc2529f2e0202c9ad459e0d23",
        ),
        _ => panic!("{full}: a recorded case with no expectation; add one to check()"),
    }
}

#[test]
fn every_recorded_responses_exchange_decodes_to_what_the_service_meant() {
    let dirs = cases("responses");
    assert_eq!(dirs.len(), 25);
    for dir in dirs {
        check(&Case::load(&dir));
    }
}

#[test]
fn the_last_sequence_number_is_kept_for_resuming() {
    let case = Case::load(&fixtures::root().join("openai/responses/stream-text-basic"));
    let mut dec = ResponsesStreamDecoder::new();
    let mut out = Vec::new();
    kite_wire::StreamDecoder::decode(&mut dec, &case.body, &mut out).unwrap();
    let last: u64 = String::from_utf8_lossy(&case.body)
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .filter_map(|d| {
            serde_json::from_str::<Value>(d)
                .ok()?
                .get("sequence_number")?
                .as_u64()
        })
        .max()
        .unwrap();
    assert_eq!(dec.frames().last_sequence, Some(last));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]
    #[test]
    fn responses_streams_split_anywhere_decode_the_same(cuts in prop::collection::vec(any::<usize>(), 0..40)) {
        for case in fixtures::sse_cases("responses") {
            let whole = fixtures::decode_split::<ResponsesStreamDecoder>(&case.body, &[]);
            let split = fixtures::decode_split::<ResponsesStreamDecoder>(&case.body, &cuts);
            prop_assert_eq!(&whole, &split, "{}", case.name);
        }
    }
}
