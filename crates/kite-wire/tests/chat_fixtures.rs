//! Every recorded Chat Completions exchange (OpenAI, Mistral, OpenRouter, Groq) decoded and
//! checked against what the service meant.

mod fixtures;

use fixtures::{Case, api_error, cases, run_stream};
use kite_core::{ApiErrorKind, Error, Event, FinishReason, Part, Response};
use kite_wire::openai_chat::{ChatStreamDecoder, decode_response};
use proptest::prelude::*;
use serde_json::{Value, json};

fn decode(case: &Case) -> Result<Response, Error> {
    fixtures::decode::<ChatStreamDecoder>(case, decode_response)
}

/// Fluent checks on a decoded response.
struct Check {
    name: String,
    r: Response,
}

impl Check {
    fn text(self, t: &str) -> Self {
        assert_eq!(self.r.text(), t, "{}: text", self.name);
        self
    }
    fn text_starts(self, t: &str) -> Self {
        assert!(
            self.r.text().starts_with(t),
            "{}: text {:?}",
            self.name,
            self.r.text()
        );
        self
    }
    fn reasoning_starts(self, t: &str) -> Self {
        let r: String = self
            .r
            .message
            .parts
            .iter()
            .filter_map(|p| match p {
                Part::Reasoning(r) => Some(r.text.as_str()),
                _ => None,
            })
            .collect();
        assert!(r.starts_with(t), "{}: reasoning {r:?}", self.name);
        self
    }
    fn refusal(self, t: &str) -> Self {
        let r: Vec<&str> = self
            .r
            .message
            .parts
            .iter()
            .filter_map(|p| match p {
                Part::Refusal { text } => Some(text.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(r, vec![t], "{}: refusal", self.name);
        self
    }
    fn finish(self, f: FinishReason) -> Self {
        assert_eq!(self.r.finish_reason, f, "{}: finish", self.name);
        self
    }
    /// input, output, total, cached, reasoning
    fn usage(self, i: u64, o: u64, t: u64, c: u64, r: u64) -> Self {
        let u = self.r.usage;
        assert_eq!(
            (
                u.input_tokens,
                u.output_tokens,
                u.total_tokens,
                u.cached_input_tokens,
                u.reasoning_tokens
            ),
            (i, o, t, c, r),
            "{}: usage",
            self.name
        );
        self
    }
    fn cost(self, c: f64) -> Self {
        assert_eq!(self.r.usage.cost, Some(c), "{}: cost", self.name);
        self
    }
    fn calls(self, expected: &[(&str, &str, Value)]) -> Self {
        let got: Vec<(String, String, Value)> = self
            .r
            .tool_calls()
            .map(|c| {
                (
                    c.id.clone(),
                    c.name.clone(),
                    c.parse_arguments().expect("arguments are JSON"),
                )
            })
            .collect();
        let want: Vec<(String, String, Value)> = expected
            .iter()
            .map(|(i, n, a)| (i.to_string(), n.to_string(), a.clone()))
            .collect();
        assert_eq!(got, want, "{}: tool calls", self.name);
        self
    }
    fn id(self, id: &str) -> Self {
        assert_eq!(self.r.id.as_deref(), Some(id), "{}: id", self.name);
        self
    }
}

fn ok(case: &Case) -> Check {
    match decode(case) {
        Ok(r) => Check {
            name: case.name.clone(),
            r,
        },
        Err(e) => panic!("{}: {e:?}", case.name),
    }
}

/// status, kind, code, words of the message
fn err(case: &Case, status: Option<u16>, kind: ApiErrorKind, code: Option<&str>, words: &str) {
    let e = api_error(&case.name, decode(case));
    assert_eq!(e.status, status, "{}: status", case.name);
    assert_eq!(e.kind, kind, "{}: kind", case.name);
    assert_eq!(e.code.as_deref(), code, "{}: code", case.name);
    assert!(
        e.message.contains(words),
        "{}: message {:?}",
        case.name,
        e.message
    );
}

const BERLIN: fn() -> Value = || json!({"latitude": "52.5200", "longitude": "13.4050"});

fn check(case: &Case) {
    use ApiErrorKind as K;
    use FinishReason::*;
    let name = case.name.as_str();
    let (provider, rest) = name.split_once("/chat-completions/").unwrap();
    match (provider, rest) {
        // ---- OpenAI, whole responses
        ("openai", "text-basic") => {
            ok(case).text("4").finish(Stop).usage(13, 138, 151, 0, 128);
        }
        ("openai", "text-basic-gpt35-httprr") => {
            ok(case)
                .text_starts("Hello! I'm just a computer program")
                .finish(Stop)
                .usage(13, 31, 44, 0, 0);
        }
        ("openai", "tool-call-single") => {
            ok(case)
                .text("")
                .finish(ToolCalls)
                .calls(&[(
                    "call_wHrhd8yWtGbbEpcfAhGhZmvC",
                    "object_params",
                    json!({"window": {"start": "2025-01-01", "end": "2025-01-02"}}),
                )])
                .usage(173, 231, 404, 0, 192);
        }
        ("openai", "tool-calls-parallel-two-tools") => {
            ok(case).finish(ToolCalls).calls(&[
                ("call_GOotzq3y3C45fdLNjm8SXXRo", "weather", BERLIN()),
                (
                    "call_6IvZGzhTPoSUAGUWnRx0po6X",
                    "best_language_to_learn",
                    json!({}),
                ),
            ]);
        }
        ("openai", "tool-calls-parallel-same-tool") => {
            ok(case).finish(ToolCalls).calls(&[
                (
                    "call_v6LacIrChvs6ITVpIZqy5tFc",
                    "secret_retrieval_tool",
                    json!({"password": "mellon"}),
                ),
                (
                    "call_onyWzk4mLTGKzW9cthmf4Llq",
                    "secret_retrieval_tool",
                    json!({"password": "radiance"}),
                ),
            ]);
        }
        ("openai", "tool-result-final-answer") => {
            ok(case)
                .text_starts("Here are your three rolls: 1, 2, 3. Sum: 6.")
                .finish(Stop)
                .usage(245, 297, 542, 0, 256);
        }
        ("openai", "legacy-function-call") => {
            ok(case)
                .finish(ToolCalls)
                .calls(&[("call_0", "get_weather", json!({"location": "Boston"}))])
                .usage(62, 14, 76, 0, 0);
        }
        ("openai", "structured-output-json-schema") => {
            let c = ok(case).finish(Stop).usage(49, 533, 582, 0, 512);
            let v: Value = serde_json::from_str(&c.r.text()).unwrap();
            assert_eq!(v, json!({"name": "John", "age": 30}));
        }
        ("openai", "json-object-mode") => {
            let c = ok(case).finish(Stop);
            let v: Value = serde_json::from_str(&c.r.text()).unwrap();
            assert_eq!(v, json!({"greeting": "hello"}));
        }
        ("openai", "audio-input") => {
            ok(case)
                .text_starts("To help with that, I'll need a little more information.")
                .usage(27, 64, 91, 0, 0);
        }
        ("openai", "reasoning-model-o3-mini") => {
            ok(case)
                .text("Hello there! How can I help you today?")
                .usage(7, 87, 94, 0, 64);
        }
        ("openai", "refusal-structured-output") => {
            ok(case)
                .text("")
                .refusal("I'm very sorry, but I can't assist with that request.")
                .finish(Stop);
        }
        ("openai", "finish-length") => {
            ok(case)
                .text_starts("Certainly! Here is a list of all 50 U.S. states")
                .finish(Length)
                .usage(14, 50, 64, 0, 0);
        }
        // ---- OpenAI, streams
        ("openai", "stream-text-with-usage") => {
            ok(case)
                .text("1\n2\n3")
                .finish(Stop)
                .usage(13, 142, 155, 0, 128)
                .id("chatcmpl-DoZGwo7RT9RGQpIKxv7lOQs0f0GnJ");
        }
        ("openai", "stream-text-gpt35-httprr") => {
            ok(case)
                .text("1, 2, 3, 4, 5")
                .finish(Stop)
                .usage(14, 13, 27, 0, 0);
        }
        ("openai", "stream-tool-call-fragments") => {
            ok(case)
                .text("")
                .finish(ToolCalls)
                .calls(&[("call_N2fJZh6fGguUrjbTlDD9mkbh", "weather", BERLIN())])
                .usage(169, 96, 265, 0, 64);
        }
        ("openai", "stream-after-tool-result") => {
            ok(case)
                .text_starts("Current weather in Berlin (52.5200, 13.4050): 15°C, wind 10 km/h.")
                .finish(Stop)
                .usage(230, 299, 529, 0, 256);
        }
        ("openai", "stream-parallel-tool-calls-same-tool") => {
            ok(case)
                .finish(ToolCalls)
                .calls(&[
                    (
                        "call_M26z19sncd7b4LBgzKRRbaUE",
                        "secret_retrieval_tool",
                        json!({"password": "mellon"}),
                    ),
                    (
                        "call_KPXe5NX7IcKkaBUhc6dto2QV",
                        "secret_retrieval_tool",
                        json!({"password": "radiance"}),
                    ),
                ])
                .usage(75, 53, 128, 0, 0);
        }
        ("openai", "stream-parallel-tool-calls-two-tools") => {
            ok(case)
                .finish(ToolCalls)
                .calls(&[
                    (
                        "call_NS4iQj14cDFwc0BnrKqDHavt",
                        "get_weather",
                        json!({"city": "Mexico City"}),
                    ),
                    (
                        "call_SkGkkGDvHQEEk0CGbnAh2AQw",
                        "get_product_name",
                        json!({}),
                    ),
                ])
                .usage(417, 44, 461, 0, 0);
        }
        ("openai", "stream-tool-call-no-arguments") => {
            ok(case).finish(ToolCalls).calls(&[(
                "call_TUkbUb0gIeBdIOHbrszf5mHx",
                "best_language_to_learn",
                json!({}),
            )]);
        }
        ("openai", "stream-refusal") => {
            ok(case)
                .text("")
                .refusal("I'm very sorry, but I can't assist with that request.")
                .finish(Stop)
                .usage(64, 13, 77, 0, 0);
        }
        ("openai", "stream-finish-length-empty-content") => {
            ok(case).text("").finish(Length).usage(13, 50, 63, 0, 50);
        }
        // ---- OpenAI, errors
        ("openai", "error-401-invalid-api-key") => {
            err(
                case,
                Some(401),
                K::Authentication,
                Some("invalid_api_key"),
                "Incorrect API key provided",
            );
        }
        ("openai", "error-401-on-stream-request") => {
            err(
                case,
                Some(401),
                K::Authentication,
                Some("invalid_api_key"),
                "Incorrect API key provided",
            );
        }
        ("openai", "error-404-model-not-found") => {
            err(
                case,
                Some(404),
                K::NotFound,
                Some("model_not_found"),
                "does not exist",
            );
        }
        ("openai", "error-429-request-too-large-tpm") => {
            // The request alone is over the limit: not a passing rate limit.
            err(
                case,
                Some(429),
                K::RequestTooLarge,
                Some("rate_limit_exceeded"),
                "Request too large",
            );
            let e = api_error(name, decode(case));
            assert_eq!(e.error_type.as_deref(), Some("tokens"));
        }
        ("openai", "error-400-unsupported-parameter") => {
            err(
                case,
                Some(400),
                K::InvalidRequest,
                Some("unsupported_parameter"),
                "'stop' is not supported",
            );
            assert_eq!(api_error(name, decode(case)).param.as_deref(), Some("stop"));
        }
        ("openai", "error-400-unsupported-value") => {
            err(
                case,
                Some(400),
                K::InvalidRequest,
                Some("unsupported_value"),
                "does not support 'system'",
            );
        }
        // ---- Mistral
        ("mistral", "text-basic") => {
            ok(case)
                .text("2 + 2 equals **4**.")
                .finish(Stop)
                .usage(23, 9, 32, 0, 0);
        }
        ("mistral", "stream-text") => {
            ok(case).text("1, 2, 3").finish(Stop).usage(22, 8, 30, 0, 0);
        }
        ("mistral", "tool-call") => {
            ok(case)
                .text("")
                .finish(ToolCalls)
                .calls(&[("bAyGEuxg1", "weather", BERLIN())])
                .usage(159, 28, 187, 0, 0);
        }
        ("mistral", "tool-result-final-answer") => {
            ok(case)
                .text("The current weather in Berlin is **15°C** with a wind speed of **10 km/h**.")
                .finish(Stop);
        }
        ("mistral", "parallel-tool-calls") => {
            ok(case).finish(ToolCalls).calls(&[
                ("wyFNfgjhN", "weather", BERLIN()),
                ("5K7IOShCC", "best_language_to_learn", json!({})),
            ]);
        }
        ("mistral", "tool-call-no-args-with-text") => {
            ok(case)
                .text("I'll find out what the best language to learn is for you.")
                .finish(ToolCalls)
                .calls(&[("gRgYUmPLP", "best_language_to_learn", json!({}))]);
        }
        ("mistral", "stream-tool-call") => {
            ok(case)
                .finish(ToolCalls)
                .calls(&[("g6fVbXS8K", "weather", BERLIN())])
                .usage(159, 28, 187, 128, 0);
        }
        ("mistral", "stream-after-tool-result") => {
            ok(case)
                .text_starts(
                    "The current weather in Berlin at coordinates (52.5200, 13.4050) is **15°C**",
                )
                .usage(222, 43, 265, 192, 0);
        }
        ("mistral", "json-object-mode") => {
            ok(case).text("{\"result\": 8}").finish(Stop);
        }
        ("mistral", "thinking-content-chunks") => {
            ok(case)
                .text("144")
                .reasoning_starts("The user is asking for the product of 12 multiplied by 12.")
                .usage(31, 66, 97, 0, 0);
        }
        ("mistral", "stream-thinking-content-chunks") => {
            ok(case)
                .text("144")
                .reasoning_starts("The user is asking for")
                .finish(Stop)
                .usage(31, 66, 97, 0, 0);
        }
        ("mistral", "stream-magistral-thinking") => {
            ok(case)
                .reasoning_starts("Okay, the user is asking how to cross the street.")
                .text_starts("To cross the street safely, follow these steps:")
                .finish(Stop)
                .usage(10, 232, 242, 0, 0);
        }
        ("mistral", "error-401-invalid-key") => {
            err(case, Some(401), K::Authentication, None, "Invalid API Key");
        }
        // ---- OpenRouter
        ("openrouter", "stream-text-processing-comments") => {
            ok(case)
                .text("1\n2\n3")
                .finish(Stop)
                .usage(15, 9, 24, 0, 0)
                .cost(6e-05);
        }
        ("openrouter", "stream-gpt4o") => {
            ok(case)
                .text("Hello!")
                .finish(Stop)
                .usage(12, 2, 14, 0, 0)
                .cost(5e-05);
        }
        ("openrouter", "stream-llama-httprr") => {
            ok(case)
                .text("test response")
                .finish(Stop)
                .usage(586, 3, 589, 0, 0);
        }
        ("openrouter", "stream-tool-call") => {
            ok(case)
                .finish(ToolCalls)
                .calls(&[("toolu_bdrk_01FnJwNhnbF7UbXLQGHJ5dda", "weather", BERLIN())])
                .cost(0.001008);
        }
        ("openrouter", "parallel-tool-calls") => {
            ok(case)
                .finish(ToolCalls)
                .calls(&[
                    ("toolu_bdrk_01SSbrrA8SZSt5qSMs9tGqpK", "weather", BERLIN()),
                    (
                        "toolu_bdrk_01DqZTNns84ZVMWsYPMYv1TE",
                        "best_language_to_learn",
                        json!({}),
                    ),
                ])
                .usage(701, 98, 799, 0, 0)
                .cost(0.001191);
        }
        ("openrouter", "tool-call") => {
            ok(case)
                .finish(ToolCalls)
                .calls(&[(
                    "3sniiMddS",
                    "divide",
                    json!({"numerator": 123, "denominator": 456, "on_inf": "infinity"}),
                )])
                .usage(134, 43, 177, 0, 0);
        }
        ("openrouter", "usage-with-cost-and-reasoning") => {
            let c = ok(case)
                .reasoning_starts("**Exploring Venus**")
                .text_starts("Brief summary\n- Venus is the second planet")
                .usage(17, 1515, 1532, 0, 704);
            let details = reasoning_details(&c.r);
            let types: Vec<&str> = details
                .iter()
                .map(|d| d["type"].as_str().unwrap())
                .collect();
            assert_eq!(types, ["reasoning.summary", "reasoning.encrypted"]);
        }
        ("openrouter", "stream-reasoning-claude") => {
            ok(case)
                .reasoning_starts("This is a simple arithmetic question. 2+2 equals 4")
                .text("2 + 2 = 4")
                .usage(43, 36, 79, 0, 13)
                .cost(0.000669);
        }
        ("openrouter", "stream-reasoning-details-tool-call") => {
            let c = ok(case)
                .reasoning_starts("The user is asking for the weather in Berlin")
                .finish(ToolCalls)
                .calls(&[(
                    "toolu_bdrk_01L9pX1Wp4FAEq9TT2Z6UAe7",
                    "reasoning_weather",
                    json!({"city": "Berlin"}),
                )]);
            // The streamed fragments merge into one detail holding the whole text and the
            // signature, ready to be sent back.
            let details = reasoning_details(&c.r);
            assert_eq!(details.len(), 1, "{details:?}");
            let reasoning: String =
                c.r.message
                    .parts
                    .iter()
                    .filter_map(|p| match p {
                        Part::Reasoning(r) => Some(r.text.clone()),
                        _ => None,
                    })
                    .collect();
            assert_eq!(details[0]["text"].as_str(), Some(reasoning.as_str()));
            assert!(
                details[0]["signature"]
                    .as_str()
                    .unwrap()
                    .starts_with("EvsCCkgIEBABGAIqQNe")
            );
        }
        ("openrouter", "stream-reasoning-encrypted-o3") => {
            let c = ok(case)
                .text_starts("I’m ChatGPT, a large-language-model assistant")
                .cost(0.00085);
            let details = reasoning_details(&c.r);
            assert_eq!(details.len(), 1);
            assert_eq!(details[0]["type"], "reasoning.encrypted");
            assert!(
                details[0]["data"]
                    .as_str()
                    .unwrap()
                    .starts_with("gAAAAABpCCSI")
            );
        }
        ("openrouter", "stream-error-in-200-body") => {
            let (events, e) = run_stream(ChatStreamDecoder::new(), &[&case.body]);
            // The reasoning streamed before the error is delivered, then the error ends it.
            assert!(
                events
                    .iter()
                    .any(|e| matches!(e, Event::ReasoningDelta { .. }))
            );
            let e = api_error(name, Err(e.expect("an error ends the stream")));
            assert_eq!(e.status, Some(400));
            assert_eq!(e.message, "Token limit reached");
        }
        ("openrouter", "error-401-missing-auth") => {
            err(
                case,
                Some(401),
                K::Authentication,
                Some("401"),
                "Missing Authentication header",
            );
        }
        ("openrouter", "error-429-upstream-rate-limited") => {
            err(
                case,
                Some(429),
                K::RateLimited,
                Some("429"),
                "temporarily rate-limited upstream",
            );
        }
        ("openrouter", "error-400-context-length") => {
            err(
                case,
                Some(400),
                K::InvalidRequest,
                Some("400"),
                "maximum context length is 200000 tokens",
            );
        }
        // ---- Groq
        ("groq", "text-basic") => {
            ok(case)
                .text("The capital of France is Paris.")
                .finish(Stop)
                .usage(48, 8, 56, 0, 0);
        }
        ("groq", "stream-tool-call") => {
            ok(case)
                .reasoning_starts("We need to call the function with correct paramete")
                .finish(ToolCalls)
                .calls(&[(
                    "fc_bfb39741-3748-4def-9886-a93fc9c64a90",
                    "get_something_by_name",
                    json!({"name": "example"}),
                )])
                .usage(304, 49, 353, 0, 23);
        }
        ("groq", "stream-error-event-tool-use-failed") => {
            let (events, e) = run_stream(ChatStreamDecoder::new(), &[&case.body]);
            assert!(
                events
                    .iter()
                    .any(|e| matches!(e, Event::ReasoningDelta { .. }))
            );
            let e = api_error(name, Err(e.expect("the error event ends the stream")));
            assert_eq!(e.status, Some(400));
            assert_eq!(e.code.as_deref(), Some("tool_use_failed"));
            assert_eq!(e.kind, K::InvalidRequest);
            assert!(e.message.contains("did not match schema"));
        }
        ("groq", "error-400-tool-use-failed") => {
            err(
                case,
                Some(400),
                K::InvalidRequest,
                Some("tool_use_failed"),
                "Tool call validation failed",
            );
        }
        ("groq", "error-404-model-not-found") => {
            err(
                case,
                Some(404),
                K::NotFound,
                Some("model_not_found"),
                "llama-3.3-70b-versatlie",
            );
        }
        _ => panic!("{name}: a recorded case with no expectation; add one to check()"),
    }
}

fn reasoning_details(r: &Response) -> Vec<Value> {
    r.message
        .parts
        .iter()
        .filter_map(|p| match p {
            Part::Reasoning(r) => r.metadata.get("chat", "reasoning_details"),
            _ => None,
        })
        .flat_map(|v| v.as_array().cloned().unwrap_or_default())
        .collect()
}

#[test]
fn every_recorded_chat_exchange_decodes_to_what_the_service_meant() {
    let dirs = cases("chat-completions");
    assert_eq!(
        dirs.len(),
        60,
        "openai 28 + mistral 13 + openrouter 14 + groq 5"
    );
    for dir in dirs {
        check(&Case::load(&dir));
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn streams_split_anywhere_decode_the_same(cuts in prop::collection::vec(any::<usize>(), 0..40)) {
        for case in fixtures::sse_cases("chat-completions") {
            let whole = fixtures::decode_split::<ChatStreamDecoder>(&case.body, &[]);
            let split = fixtures::decode_split::<ChatStreamDecoder>(&case.body, &cuts);
            prop_assert_eq!(&whole, &split, "{}", case.name);
        }
    }
}

#[test]
fn streams_fed_one_byte_at_a_time_decode_the_same() {
    for case in fixtures::sse_cases("chat-completions") {
        let cuts: Vec<usize> = (1..case.body.len()).collect();
        assert_eq!(
            fixtures::decode_split::<ChatStreamDecoder>(&case.body, &[]),
            fixtures::decode_split::<ChatStreamDecoder>(&case.body, &cuts),
            "{}",
            case.name
        );
    }
}
