//! Skills with the program's own HTTP client: the pieces for each API, and the whole loop
//! driven by a closure that posts with plain reqwest to a loopback server.

use kite_core::{Message, Request, ToolResult};
use kite_skills::client::{self, Format};
use kite_skills::{Root, RunOptions, SkillRun, SkillSet, discover};
use kite_testkit::{ReplayServer, Reply, fixture};
use serde_json::{Value, json};
use std::path::Path;
use std::sync::Arc;

fn run() -> (SkillRun, tempfile::TempDir) {
    let cache = tempfile::tempdir().unwrap();
    let valid = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/skills/valid");
    let found = discover(&[Root::explicit(valid)], cache.path());
    let set = SkillSet::from_discovery(&found);
    (
        SkillRun::new(Arc::new(set), RunOptions::default()).unwrap(),
        cache,
    )
}

fn json_of(path: &str) -> Value {
    serde_json::from_slice(&fixture(path)).unwrap()
}

#[test]
fn tools_come_in_each_apis_shape() {
    let (run, _cache) = run();
    let anthropic = client::tools(&run, Format::AnthropicMessages).unwrap();
    let names: Vec<_> = anthropic
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].clone())
        .collect();
    assert_eq!(names, ["view", "create_file", "str_replace", "bash"]);
    assert_eq!(anthropic[0]["input_schema"]["required"], json!(["path"]));
    let chat = client::tools(&run, Format::ChatCompletions).unwrap();
    assert_eq!(chat[3]["type"], "function");
    assert_eq!(chat[3]["function"]["name"], "bash");
    let responses = client::tools(&run, Format::Responses).unwrap();
    assert_eq!(responses[1]["type"], "function");
    assert_eq!(responses[1]["name"], "create_file");
    let system = client::system_prompt(&run);
    assert!(system.contains("<location>\nskills/csv-stats/SKILL.md\n</location>"));
}

#[test]
fn tool_calls_come_out_of_real_responses() {
    for (format, path, calls) in [
        (
            Format::AnthropicMessages,
            "anthropic/messages/tool-use-text-and-two-calls/response.json",
            "/content",
        ),
        (
            Format::ChatCompletions,
            "openai/chat-completions/tool-calls-parallel-two-tools/response.json",
            "/choices/0/message/tool_calls",
        ),
        (
            Format::Responses,
            "openai/responses/function-call/response.json",
            "/output",
        ),
    ] {
        let raw = json_of(path);
        // Counted from the raw JSON here, independently of the codec.
        let expected: Vec<String> = raw
            .pointer(calls)
            .and_then(Value::as_array)
            .unwrap()
            .iter()
            .filter(|b| {
                matches!(
                    b["type"].as_str(),
                    Some("tool_use" | "function" | "function_call")
                )
            })
            .map(|b| {
                let id = b.get("call_id").or(b.get("id")).unwrap();
                id.as_str().unwrap().to_owned()
            })
            .collect();
        assert!(!expected.is_empty(), "{path}");
        let got = client::tool_calls(format, &raw).unwrap();
        let ids: Vec<_> = got.iter().map(|c| c.id.clone()).collect();
        assert_eq!(ids, expected, "{path}");

        // The answer and its results, as the next request's messages.
        let results: Vec<ToolResult> = got.iter().map(|c| ToolResult::text(&c.id, "42")).collect();
        let assistant = client::assistant_messages(format, &raw).unwrap();
        let answers = client::results_messages(format, &results).unwrap();
        let text = serde_json::to_string(&[assistant, answers.clone()]).unwrap();
        for id in &expected {
            assert_eq!(text.matches(id.as_str()).count(), 2, "{path}: {text}");
        }
        match format {
            Format::AnthropicMessages => {
                assert_eq!(answers[0]["role"], "user");
                assert_eq!(answers[0]["content"][0]["type"], "tool_result");
            }
            Format::ChatCompletions => assert_eq!(answers[0]["role"], "tool"),
            Format::Responses => assert_eq!(answers[0]["type"], "function_call_output"),
        }
    }
}

#[tokio::test]
async fn the_loop_runs_over_a_closure_with_its_own_client() {
    let (run, _cache) = run();
    let call = json!({"id": "chatcmpl-1", "object": "chat.completion", "model": "m", "choices": [{
        "index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant", "content": null,
        "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "view",
        "arguments": "{\"path\":\"skills/word-count/SKILL.md\"}"}}]}}]});
    let run_script = json!({"id": "chatcmpl-2", "object": "chat.completion", "model": "m", "choices": [{
        "index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant", "content": null,
        "tool_calls": [{"id": "call_2", "type": "function", "function": {"name": "bash",
        "arguments": "{\"command\":\"sh skills/word-count/scripts/count.sh skills/word-count/assets/poem.txt\"}"}}]}}]});
    let answer = json!({"id": "chatcmpl-3", "object": "chat.completion", "model": "m", "choices": [{
        "index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "29 words."}}]});
    let server = ReplayServer::start(vec![
        Reply::json(200, call.to_string()),
        Reply::json(200, run_script.to_string()),
        Reply::json(200, answer.to_string()),
    ])
    .await;

    // The program's own client: plain reqwest, nothing of kite's HTTP code.
    let http = reqwest::Client::new();
    let url = format!("{}/v1/chat/completions", server.url());
    let model = move |body: Value| {
        let post = http.post(&url).bearer_auth("sk-own").json(&body);
        async move { post.send().await?.error_for_status()?.json::<Value>().await }
    };
    let request = Request::new("m").message(Message::user("How many words in the poem?"));
    let done = client::run_loop(&run, Format::ChatCompletions, request, 5, model)
        .await
        .unwrap();
    assert_eq!(done.text(), "29 words.");

    let sent: Vec<Value> = server
        .requests()
        .iter()
        .map(|r| serde_json::from_str(&r.body_text()).unwrap())
        .collect();
    assert_eq!(sent.len(), 3);
    assert_eq!(
        server.requests()[0].header("authorization"),
        Some("Bearer sk-own")
    );
    let system = sent[0]["messages"][0]["content"].as_str().unwrap();
    assert!(system.contains("<available_skills>"), "{system}");
    assert_eq!(sent[0]["tools"].as_array().unwrap().len(), 4);
    assert!(!sent[0].to_string().contains("words="));
    // The instructions came back as the first tool result, the script's output as the second.
    let last = |i: usize| {
        sent[i]["messages"]
            .as_array()
            .unwrap()
            .last()
            .unwrap()
            .clone()
    };
    assert_eq!(last(1)["role"], "tool");
    assert!(last(1)["content"].as_str().unwrap().contains("count.sh"));
    assert!(
        last(2)["content"].as_str().unwrap().contains("words=29"),
        "{}",
        last(2)
    );
}
