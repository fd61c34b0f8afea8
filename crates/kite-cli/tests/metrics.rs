//! `GET /metrics` and `GET /ready` of `kite serve`: the metrics, read by Prometheus's own
//! parser, count the requests sent (by route, key and status), their tokens, the refusals
//! and the upstream's failures, midway through an answer too; a key is named by its place,
//! never by itself.

mod common;

use common::KEY;
use common::serve::{GATEWAY_KEY, serve_with};
use kite::{FinishReason, Message, Response, Usage};
use kite_testkit::render::{Shape, sse};
use kite_testkit::{ReplayServer, Reply, mcp};
use serde_json::{Value, json};

/// "Hello.", streamed as OpenAI would, with its usage.
fn hello_body(n: usize) -> Vec<u8> {
    let mut r = Response::empty(FinishReason::Stop);
    r.message = Message::assistant("Hello.");
    r.usage = Usage {
        input_tokens: 10,
        output_tokens: 2,
        total_tokens: 12,
        ..Usage::default()
    };
    sse(Shape::Chat, &r, n)
}

fn hello(n: usize) -> Reply {
    Reply::sse(hello_body(n))
}

/// The same answer, its connection cut halfway through.
fn cut(n: usize) -> Reply {
    let body = hello_body(n);
    let half = body.len() / 2;
    Reply::sse(body).reset_after(half)
}

/// Each sample of `text`, as Prometheus's parser reads it.
fn parsed(text: &str) -> Vec<Value> {
    use std::io::Write;
    let mut child = std::process::Command::new(mcp::python())
        .arg(mcp::own("metrics_parse.py"))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}\n{text}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The value of the sample `name` whose labels include `labels`.
fn value(samples: &[Value], name: &str, labels: Value) -> f64 {
    let fits = |s: &&Value| {
        s["name"] == name
            && labels
                .as_object()
                .unwrap()
                .iter()
                .all(|(k, v)| &s["labels"][k] == v)
    };
    samples
        .iter()
        .filter(fits)
        .map(|s| s["value"].as_f64().unwrap())
        .sum()
}

#[tokio::test]
async fn metrics_count_what_was_served_and_prometheus_reads_them() {
    let upstream = ReplayServer::start(vec![hello(1), hello(2), hello(3), cut(4), cut(5)]).await;
    let served = serve_with(&upstream, &[]);
    let client = reqwest::Client::new();
    let ask = |stream: bool| {
        client
            .post(format!("{}/chat/completions", served.base))
            .bearer_auth(GATEWAY_KEY)
            .json(&json!({"model": "gpt-5-nano", "stream": stream,
                "messages": [{"role": "user", "content": "Hi"}]}))
            .send()
    };
    for stream in [false, true, true] {
        let r = ask(stream).await.unwrap();
        assert_eq!(r.status(), 200);
        r.text().await.unwrap();
    }
    // The upstream cuts its answer midway: a whole one is a 502 no client should retry
    // (the gateway has), a streamed one ends with an error event.
    let whole = ask(false).await.unwrap();
    assert_eq!(whole.status(), 502);
    assert_eq!(
        whole.headers().get("x-should-retry").map(|v| v.as_bytes()),
        Some(&b"false"[..])
    );
    let streamed = ask(true).await.unwrap().text().await.unwrap();
    assert!(streamed.contains("error"), "{streamed}");
    let bad = client
        .post(format!("{}/chat/completions", served.base))
        .bearer_auth(GATEWAY_KEY)
        .json(&json!({"model": "gpt-5-nano", "n": 3,
            "messages": [{"role": "user", "content": "Hi"}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(bad.status(), 400);
    let stranger = client
        .get(format!("{}/models", served.base))
        .bearer_auth("sk-not-a-key")
        .send()
        .await
        .unwrap();
    assert_eq!(stranger.status(), 401);

    let site = served.site();
    let ready = client.get(format!("{site}/ready")).send().await.unwrap();
    assert_eq!(ready.status(), 200);
    // The metrics ask for a key, as every other path does.
    let refused = client.get(format!("{site}/metrics")).send().await.unwrap();
    assert_eq!(refused.status(), 401);
    let text = client
        .get(format!("{site}/metrics"))
        .bearer_auth(GATEWAY_KEY)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(!text.contains(GATEWAY_KEY) && !text.contains(KEY));
    let samples = parsed(&text);
    let route = "gpt-5-nano";
    assert_eq!(
        value(
            &samples,
            "kite_requests_total",
            json!({"route": route, "status": "200"})
        ),
        4.0,
        "three answers, and the stream whose head was sent before it failed"
    );
    assert_eq!(
        value(&samples, "kite_upstream_errors_total", json!({})),
        2.0,
        "both answers cut midway"
    );
    assert_eq!(
        value(&samples, "kite_requests_total", json!({"status": "400"})),
        1.0
    );
    assert_eq!(
        value(&samples, "kite_requests_total", json!({"status": "401"})),
        2.0,
        "the stranger and the keyless scrape"
    );
    let keys: Vec<&str> = samples
        .iter()
        .filter(|s| s["name"] == "kite_requests_total" && s["labels"]["route"] == route)
        .map(|s| s["labels"]["key"].as_str().unwrap())
        .collect();
    assert!(keys.iter().all(|k| *k == "key-1"), "{keys:?}");
    assert_eq!(
        value(
            &samples,
            "kite_tokens_total",
            json!({"route": route, "kind": "input"})
        ),
        30.0
    );
    assert_eq!(
        value(
            &samples,
            "kite_tokens_total",
            json!({"route": route, "kind": "output"})
        ),
        6.0
    );
    assert_eq!(
        value(
            &samples,
            "kite_time_to_first_byte_seconds_count",
            json!({"route": route})
        ),
        5.0
    );
    // The scrape itself is the one request in flight.
    assert_eq!(value(&samples, "kite_requests_in_flight", json!({})), 1.0);
}
