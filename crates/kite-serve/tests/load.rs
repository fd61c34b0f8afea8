//! Load on loopback: 1,000 concurrent streamed requests through the gateway, each answered
//! with its own number, all succeed and no stream carries another's words.

mod common;

use futures_util::StreamExt;
use kite_core::{Event, EventStream, FinishReason, Model, Request, Usage};
use serde_json::json;
use std::time::{Duration, Instant};

/// Answers "n N" in a few pieces, N being the number in the question, with a pause between
/// them so that streams overlap.
struct Echo;

impl Model for Echo {
    fn stream(&self, request: &Request) -> EventStream {
        let n = request
            .messages
            .last()
            .map(|m| m.text())
            .unwrap_or_default();
        Box::pin(pieces(n))
    }
}

/// "n ", the number, the usage, the end.
fn pieces(n: String) -> impl futures_util::Stream<Item = Result<Event, kite_core::Error>> + Send {
    futures_util::stream::iter(0..4).then(move |i| {
        let n = n.clone();
        async move {
            tokio::time::sleep(Duration::from_millis(5)).await;
            Ok(match i {
                0 => Event::text(0, "n "),
                1 => Event::text(0, n),
                2 => Event::Usage {
                    usage: Usage {
                        input_tokens: 1,
                        output_tokens: 2,
                        total_tokens: 3,
                        ..Usage::default()
                    },
                },
                _ => Event::Finish {
                    reason: FinishReason::Stop,
                },
            })
        }
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_concurrent_streams_stay_apart() {
    let addr = common::serve_one("echo", Echo).await;
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(64)
        .build()
        .unwrap();
    let url = format!("http://{addr}/v1/chat/completions");
    let started = Instant::now();
    let requests = (0..1000).map(|i| {
        let client = client.clone();
        let url = url.clone();
        async move {
            let body = json!({"model": "echo", "stream": true,
                "messages": [{"role": "user", "content": format!("{i}")}]});
            let response = client
                .post(&url)
                .json(&body)
                .send()
                .await
                .map_err(|e| e.to_string())?;
            if response.status() != 200 {
                return Err(format!("status {}", response.status()));
            }
            let text = response.text().await.map_err(|e| e.to_string())?;
            let said = kite_testkit::render::chat_stream_text(&text);
            Ok::<_, String>((i, said, text.trim_end().ends_with("data: [DONE]")))
        }
    });
    let results = tokio::time::timeout(
        Duration::from_secs(120),
        futures_util::stream::iter(requests)
            .buffer_unordered(1000)
            .collect::<Vec<_>>(),
    )
    .await
    .expect("1,000 streams within two minutes");
    let mut failed = Vec::new();
    for r in &results {
        match r {
            Ok((i, said, done)) if *said == format!("n {i}") && *done => {}
            other => failed.push(format!("{other:?}")),
        }
    }
    assert_eq!(results.len(), 1000);
    assert!(
        failed.is_empty(),
        "{} failed, e.g. {:?}",
        failed.len(),
        &failed[..failed.len().min(3)]
    );
    eprintln!("1000 concurrent streams in {:?}", started.elapsed());
}
