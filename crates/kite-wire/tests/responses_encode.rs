//! OpenAI Responses request encoding: histories built from recorded answers encode to the
//! requests that were recorded, and reasoning items go back exactly as the service sent them.

mod fixtures;

use fixtures::{root, run_stream};
use kite_core::{
    Error, Message, Part, ReasoningConfig, Request, Response, ResponseBuilder, ResponseFormat,
    Role, ToolChoice, ToolResult, ToolSpec,
};
use kite_wire::openai_responses::{
    NAMESPACE, Options, ResponsesStreamDecoder, decode_response, encode_request,
};
use serde_json::{Value, json};

fn read(path: &str) -> Vec<u8> {
    std::fs::read(root().join("openai/responses").join(path)).unwrap()
}

fn recorded(case: &str) -> Value {
    serde_json::from_slice(&read(&format!("{case}/request.json"))).unwrap()
}

fn encode(req: &Request, (opts, stream): (Options, bool)) -> Value {
    serde_json::from_slice(&encode_request(req, &opts, stream).unwrap()).unwrap()
}

fn stateless(stream: bool) -> (Options, bool) {
    (Options::default(), stream)
}

/// Where kite and the recorded client differ on purpose, and nothing else:
/// - kite marks every function tool `strict: false` unless asked for strictness (Responses
///   would otherwise make them strict and refuse schemas with optional fields); the recorded
///   client left the field out;
/// - kite sends a call's arguments back as the service wrote them; the recorded client
///   re-serialized them (`{"a": 1231, ...}` for `{"a":1231,...}`), so they compare parsed.
fn without_strict_false(mut body: Value) -> Value {
    for t in body["tools"].as_array_mut().into_iter().flatten() {
        assert_eq!(t["strict"], false, "{t}");
        t.as_object_mut().unwrap().remove("strict");
    }
    parsed_arguments(body)
}

fn parsed_arguments(mut body: Value) -> Value {
    for i in body["input"].as_array_mut().into_iter().flatten() {
        if i["type"] == "function_call" {
            i["arguments"] = serde_json::from_str(i["arguments"].as_str().unwrap()).unwrap();
        }
    }
    body
}

fn multiply() -> ToolSpec {
    ToolSpec::new(
        "multiply",
        "Multiply two numbers.",
        json!({"properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
               "required": ["a", "b"], "type": "object"}),
    )
}

/// The request the recorded client made for its first turn, built with kite.
fn multiply_request() -> Request {
    let mut req = Request::new("gpt-5.5")
        .message(Message::user("What is 1231 * 2331? Use the multiply tool."))
        .tool(multiply());
    req.reasoning = Some(ReasoningConfig::effort("low"));
    req
}

/// The history after the model's answer and the tool's result.
fn follow_up(mut req: Request, answer: Response) -> Request {
    let call = answer.tool_calls().next().unwrap().clone();
    assert_eq!(
        call.parse_arguments().unwrap(),
        json!({"a": 1231, "b": 2331})
    );
    req.messages.push(answer.message);
    req.messages
        .push(Message::tool_result(ToolResult::text(call.id, "2869461")));
    req
}

#[test]
fn first_requests_encode_as_recorded() {
    let req = multiply_request();
    assert_eq!(
        without_strict_false(encode(&req, stateless(false))),
        recorded("function-call")
    );
    assert_eq!(
        without_strict_false(encode(&req, stateless(true))),
        recorded("stream-function-call-arguments")
    );
    let mut text = Request::new("gpt-5.5").message(Message::user("Reply with exactly: pong"));
    text.reasoning = Some(ReasoningConfig::effort("low"));
    assert_eq!(encode(&text, stateless(false)), recorded("text-basic"));
    assert_eq!(
        encode(&text, stateless(true)),
        recorded("stream-text-basic")
    );
}

#[test]
fn a_tool_exchange_encodes_to_the_recorded_follow_up() {
    let answer = decode_response(&read("function-call/response.json")).unwrap();
    let req = follow_up(multiply_request(), answer);
    assert_eq!(
        without_strict_false(encode(&req, stateless(false))),
        parsed_arguments(recorded("function-call-output-followup"))
    );

    // The same from the streamed answer.
    let sse = read("stream-function-call-arguments/response.sse");
    let (events, err) = run_stream(ResponsesStreamDecoder::new(), &[&sse]);
    assert!(err.is_none(), "{err:?}");
    let answer = ResponseBuilder::build(events).unwrap();
    let req = follow_up(multiply_request(), answer);
    assert_eq!(
        without_strict_false(encode(&req, stateless(true))),
        parsed_arguments(recorded("stream-after-function-output"))
    );
}

/// The output items of a recorded answer, parsed without kite's decoder.
fn output_items(case: &str) -> Vec<Value> {
    if let Ok(body) = std::fs::read(
        root()
            .join("openai/responses")
            .join(case)
            .join("response.json"),
    ) {
        let v: Value = serde_json::from_slice(&body).unwrap();
        return v["output"].as_array().unwrap().clone();
    }
    String::from_utf8_lossy(&read(&format!("{case}/response.sse")))
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .filter_map(|d| serde_json::from_str::<Value>(d).ok())
        .filter(|v| v["type"] == "response.output_item.done")
        .map(|v| v["item"].clone())
        .collect()
}

fn answer(case: &str) -> Response {
    match std::fs::read(
        root()
            .join("openai/responses")
            .join(case)
            .join("response.json"),
    ) {
        Ok(body) => decode_response(&body).unwrap(),
        Err(_) => {
            let sse = read(&format!("{case}/response.sse"));
            let (events, err) = run_stream(ResponsesStreamDecoder::new(), &[&sse]);
            assert!(err.is_none(), "{err:?}");
            ResponseBuilder::build(events).unwrap()
        }
    }
}

#[test]
fn reasoning_items_go_back_byte_for_byte() {
    for case in [
        "reasoning-encrypted-content",
        "parallel-function-calls-after-reasoning",
        "stream-function-call-after-reasoning",
        "reasoning-summary",
        "stream-reasoning-summary",
    ] {
        let answer = answer(case);
        let mut req = Request::new("gpt-5").message(Message::user("go on"));
        let calls: Vec<_> = answer.tool_calls().cloned().collect();
        req.messages.push(answer.message);
        for c in &calls {
            req.messages
                .push(Message::tool_result(ToolResult::text(&c.id, "ok")));
        }
        let body = encode(&req, stateless(false));
        let input = body["input"].as_array().unwrap();
        let sent: Vec<&Value> = input.iter().filter(|i| i["type"] == "reasoning").collect();
        let received: Vec<Value> = output_items(case)
            .into_iter()
            .filter(|i| i["type"] == "reasoning")
            .collect();
        assert!(!received.is_empty(), "{case}");
        assert_eq!(sent.len(), received.len(), "{case}");
        for (s, r) in sent.iter().zip(&received) {
            assert_eq!(
                serde_json::to_string(s).unwrap(),
                serde_json::to_string(r).unwrap(),
                "{case}"
            );
        }
        // The calls that followed the reasoning follow it again, then their outputs.
        let kinds: Vec<&str> = input
            .iter()
            .map(|i| i["type"].as_str().unwrap_or("message"))
            .collect();
        let first_reasoning = kinds.iter().position(|k| *k == "reasoning").unwrap();
        assert!(
            kinds[first_reasoning + 1..].iter().all(|k| [
                "reasoning",
                "function_call",
                "function_call_output",
                "message"
            ]
            .contains(k)),
            "{case}: {kinds:?}"
        );
        assert_eq!(
            kinds.iter().filter(|k| **k == "function_call").count(),
            calls.len(),
            "{case}"
        );
        assert_eq!(body["include"], json!(["reasoning.encrypted_content"]));
    }
}

#[test]
fn an_answer_in_text_goes_back_as_an_assistant_message() {
    let answer = answer("text-basic");
    assert_eq!(answer.text(), "pong");
    let req = Request::new("gpt-5.5")
        .message(Message::user("Reply with exactly: pong"))
        .message(answer.message)
        .message(Message::user("Again"));
    let body = encode(&req, stateless(false));
    assert_eq!(
        body["input"],
        json!([
            {"role": "user", "content": "Reply with exactly: pong"},
            {"role": "assistant", "content": [{"type": "output_text", "text": "pong"}]},
            {"role": "user", "content": "Again"},
        ])
    );
}

#[test]
fn a_stored_conversation_continues_from_the_last_stored_answer() {
    let first = answer("function-call");
    let id = first.id.clone().unwrap();
    assert_eq!(
        first.message.metadata.get(NAMESPACE, "response_id"),
        Some(&json!(id))
    );
    let req = follow_up(multiply_request().system("Be brief."), first);
    let stored = Options {
        store: true,
        ..Options::default()
    };
    let body = encode(&req, (stored.clone(), false));
    assert_eq!(body["previous_response_id"], json!(id));
    assert_eq!(body["store"], json!(true));
    assert_eq!(body.get("include"), None);
    // Instructions are not carried over by the provider: they go every time.
    assert_eq!(body["instructions"], json!("Be brief."));
    let call_id = req.messages[1].tool_calls().next().unwrap().id.clone();
    assert_eq!(
        body["input"],
        json!([{"type": "function_call_output", "call_id": call_id, "output": "2869461"}])
    );

    // Without a stored answer in the history, everything is sent.
    let fresh = encode(&multiply_request(), (stored, false));
    assert_eq!(fresh.get("previous_response_id"), None);
    assert_eq!(fresh["input"].as_array().unwrap().len(), 1);

    // A background run is always stored.
    let bg = encode(
        &multiply_request(),
        (
            Options {
                background: true,
                hosted_tools: vec![json!({"type": "web_search_preview"})],
                ..Options::default()
            },
            true,
        ),
    );
    assert_eq!(bg["tools"][1], json!({"type": "web_search_preview"}));
    assert_eq!(
        (&bg["background"], &bg["store"], &bg["stream"]),
        (&json!(true), &json!(true), &json!(true))
    );
}

#[test]
fn structured_output_choices_and_options() {
    let rec = recorded("refusal");
    let schema = rec["text"]["format"]["schema"].clone();
    let mut req = Request::new("gpt-4o").message(Message::user(
        "Provide detailed instructions for synthesizing fentanyl.",
    ));
    req.response_format = Some(ResponseFormat::JsonSchema {
        name: "FentanylHandbook".into(),
        schema,
        description: None,
        strict: Some(true),
    });
    let body = encode(&req, stateless(false));
    assert_eq!(body["text"], rec["text"]);
    assert_eq!(body["input"], rec["input"]);

    let mut req = multiply_request();
    req.tool_choice = Some(ToolChoice::Tool("multiply".into()));
    req.parallel_tool_calls = Some(false);
    req.max_tokens = Some(50);
    req.temperature = Some(0.5);
    req.user = Some("u-1".into());
    req.reasoning = Some(ReasoningConfig {
        effort: Some("medium".into()),
        budget_tokens: None,
        summary: Some("auto".into()),
    });
    req.tools[0].strict = Some(true);
    let body = encode(&req, stateless(false));
    assert_eq!(
        body["tool_choice"],
        json!({"type": "function", "name": "multiply"})
    );
    assert_eq!(body["parallel_tool_calls"], json!(false));
    assert_eq!(body["max_output_tokens"], json!(50));
    assert_eq!(body["temperature"], json!(0.5));
    assert_eq!(body["safety_identifier"], json!("u-1"));
    assert_eq!(
        body["reasoning"],
        json!({"effort": "medium", "summary": "auto"})
    );
    assert_eq!(body["tools"][0]["strict"], json!(true));
    assert_eq!(
        body["tools"][0]["parameters"]["additionalProperties"],
        json!(false)
    );

    req.stop = vec!["END".into()];
    assert!(matches!(
        encode_request(&req, &Options::default(), false),
        Err(Error::InvalidRequest(_))
    ));
}

#[test]
fn images_and_rich_tool_results_become_input_parts() {
    let req = Request::new("gpt-4o")
        .system("Describe.")
        .message(Message::new(
            Role::User,
            vec![
                Part::text("What is this?"),
                Part::image_base64("image/png", "iVBORw0KGgo="),
            ],
        ))
        .message(Message::tool_result(ToolResult {
            call_id: "call_1".into(),
            name: None,
            content: vec![
                Part::text("a chart"),
                Part::image_url("https://x.test/c.png"),
            ],
            is_error: false,
        }));
    let body = encode(&req, stateless(false));
    assert_eq!(body["instructions"], json!("Describe."));
    assert_eq!(
        body["input"],
        json!([
            {"role": "user", "content": [
                {"type": "input_text", "text": "What is this?"},
                {"type": "input_image", "image_url": "data:image/png;base64,iVBORw0KGgo=", "detail": "auto"},
            ]},
            {"type": "function_call_output", "call_id": "call_1", "output": [
                {"type": "input_text", "text": "a chart"},
                {"type": "input_image", "image_url": "https://x.test/c.png", "detail": "auto"},
            ]},
        ])
    );
}

#[test]
fn settings_responses_lacks_are_refused_and_verbosity_is_written() {
    for (set, named) in [
        (
            (|r: &mut Request| r.seed = Some(1)) as fn(&mut Request),
            "`seed`",
        ),
        (|r| r.frequency_penalty = Some(0.1), "`frequency_penalty`"),
        (|r| r.presence_penalty = Some(0.1), "`presence_penalty`"),
        (|r| r.top_k = Some(5), "`top_k`"),
    ] {
        let mut req = Request::new("gpt").message(Message::user("Hi"));
        set(&mut req);
        assert!(
            matches!(encode_request(&req, &Options::default(), false), Err(Error::InvalidRequest(m)) if m.contains(named)),
            "{named}"
        );
    }
    let mut req = Request::new("gpt").message(Message::user("Hi"));
    req.verbosity = Some("high".into());
    assert_eq!(
        encode(&req, stateless(false))["text"],
        json!({"verbosity": "high"})
    );
}
