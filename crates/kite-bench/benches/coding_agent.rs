//! What the gateway adds to a coding agent's first token late in a long session: Claude
//! Code's own request (captured in `testdata/clients`), grown to 20 turns, 50 tools and a
//! system prompt of about 30,000 tokens, streamed one at a time straight to a loopback
//! Anthropic upstream and through kite's gateway (kite-serve in front of kite's Anthropic
//! provider, as `kite serve --provider anthropic` runs). Prints p50 and p99 of the time to
//! the first text delta, and what the gateway adds.
//!
//! `cargo bench -p kite-bench --bench coding_agent` (`KITE_BENCH_REQUESTS`, default 200).
//!
//! The gateway reads the whole body, decodes it, re-encodes it for the upstream and decodes
//! the answer's events to encode them again: on a 200 KB body, that is what is measured.

mod loopback;

use serde_json::{Value, json};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The upstream's answer: a short text, as Anthropic streams it.
fn upstream_body() -> String {
    let events = [
        json!({"type": "message_start", "message": {"id": "msg_bench", "type": "message",
            "role": "assistant", "model": "claude-opus-5-5", "content": [],
            "stop_reason": null, "usage": {"input_tokens": 30000, "output_tokens": 1}}}),
        json!({"type": "content_block_start", "index": 0,
            "content_block": {"type": "text", "text": ""}}),
        json!({"type": "content_block_delta", "index": 0,
            "delta": {"type": "text_delta", "text": "Done."}}),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"},
            "usage": {"output_tokens": 2}}),
        json!({"type": "message_stop"}),
    ];
    events
        .iter()
        .map(|e| format!("event: {}\ndata: {e}\n\n", e["type"].as_str().unwrap()))
        .collect()
}

/// Claude Code's captured request, grown to a long session.
fn request_body() -> String {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../testdata/clients/claude-code/messages-tool-result.json"
    );
    let mut body: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    // About 30,000 tokens of system prompt (some four characters a token).
    let system = body["system"].as_array_mut().unwrap();
    let text = system.last().unwrap()["text"].as_str().unwrap().to_owned();
    let mut long = text.clone();
    while long.len() < 120_000 {
        long.push_str("\n\n");
        long.push_str(&text);
    }
    system.last_mut().unwrap()["text"] = json!(long);
    // 50 tools.
    let tools = body["tools"].as_array().unwrap().clone();
    let mut all = Vec::new();
    for i in 0..50 {
        let mut t = tools[i % tools.len()].clone();
        if i >= tools.len() {
            t["name"] = json!(format!("{}_{i}", t["name"].as_str().unwrap()));
        }
        all.push(t);
    }
    body["tools"] = json!(all);
    // 20 turns: each a question, a call and its result.
    let mut messages = Vec::new();
    for turn in 0..20 {
        messages
            .push(json!({"role": "user", "content": format!("Step {turn}: read the next file.")}));
        messages.push(json!({"role": "assistant", "content": [
            {"type": "text", "text": "Reading it."},
            {"type": "tool_use", "id": format!("toolu_{turn}"), "name": "Read",
                "input": {"file_path": format!("/src/file_{turn}.rs")}}]}));
        messages.push(json!({"role": "user", "content": [{"type": "tool_result",
            "tool_use_id": format!("toolu_{turn}"),
            "content": "fn main() {\n    println!(\"hello\");\n}\n".repeat(20)}]}));
    }
    messages.push(
        json!({"role": "user", "content": [{"type": "text", "text": "Now sum up.",
        "cache_control": {"type": "ephemeral"}}]}),
    );
    body["messages"] = json!(messages);
    body["stream"] = json!(true);
    body.to_string()
}

/// One request: the time to the first text delta.
async fn once(client: &reqwest::Client, url: &str, body: &str) -> Option<Duration> {
    let started = Instant::now();
    let mut response = client
        .post(url)
        .header("x-api-key", "sk-bench-client")
        .header("anthropic-version", "2023-06-01")
        .header(
            "anthropic-beta",
            "claude-code-20250219,interleaved-thinking-2025-05-14",
        )
        .header("content-type", "application/json")
        .body(body.to_owned())
        .send()
        .await
        .ok()?;
    if !response.status().is_success() {
        eprintln!("{}", response.text().await.unwrap_or_default());
        return None;
    }
    let mut seen = Vec::new();
    let mut first = None;
    while let Some(chunk) = response.chunk().await.ok()? {
        seen.extend_from_slice(&chunk);
        if first.is_none() && seen.windows(10).any(|w| w == b"text_delta") {
            first = Some(started.elapsed());
        }
    }
    first
}

fn quantile(sorted: &[Duration], q: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * q).round() as usize;
    sorted[i].as_secs_f64() * 1e3
}

fn main() {
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    let n: usize = std::env::var("KITE_BENCH_REQUESTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|n| *n > 0)
        .unwrap_or(200);
    let body = request_body();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async move {
        let upstream = loopback::upstream("/v1/messages", upstream_body());
        let model = kite::Anthropic::new(format!("http://{upstream}/v1")).api_key("sk-bench");
        let kite = loopback::kite_gateway("claude-opus-5-5", Arc::new(model));
        let client = reqwest::Client::new();
        println!(
            "Claude Code's request grown to 20 turns and 50 tools: {} KB, {n} requests one at a time\n",
            body.len() / 1024
        );
        println!("{:<8} {:>10} {:>10} {:>8}", "", "p50 ms", "p99 ms", "failed");
        let mut p = Vec::new();
        for (name, url) in [
            ("direct", format!("http://{upstream}/v1/messages")),
            ("kite", format!("http://{kite}/v1/messages")),
        ] {
            // Warm up: connections, the allocator.
            for _ in 0..10 {
                once(&client, &url, &body).await;
            }
            let mut times = Vec::with_capacity(n);
            let mut failed = 0;
            for _ in 0..n {
                match once(&client, &url, &body).await {
                    Some(t) => times.push(t),
                    None => failed += 1,
                }
            }
            times.sort();
            if times.is_empty() {
                println!("{name:<8} every request failed");
                return;
            }
            let (p50, p99) = (quantile(&times, 0.5), quantile(&times, 0.99));
            println!("{name:<8} {p50:>10.2} {p99:>10.2} {failed:>8}");
            p.push((p50, p99));
        }
        println!(
            "\nkite adds {:.2} ms at p50 and {:.2} ms at p99 to the first token",
            p[1].0 - p[0].0,
            p[1].1 - p[0].1
        );
    });
}
