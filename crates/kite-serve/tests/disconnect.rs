//! A client that goes away mid-stream: the gateway drops the model's stream, which for an
//! HTTP model is the upstream request, at once.

mod common;

use kite_core::{Event, EventStream, Model, Request};
use serde_json::json;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Says one word, then waits forever; notes when its stream is dropped.
struct Endless {
    dropped: Arc<AtomicBool>,
}

struct Watched {
    said: bool,
    dropped: Arc<AtomicBool>,
}

impl Drop for Watched {
    fn drop(&mut self) {
        self.dropped.store(true, Ordering::SeqCst);
    }
}

impl futures_util::Stream for Watched {
    type Item = Result<Event, kite_core::Error>;
    fn poll_next(
        mut self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Self::Item>> {
        if self.said {
            return std::task::Poll::Pending;
        }
        self.said = true;
        std::task::Poll::Ready(Some(Ok(Event::text(0, "Once"))))
    }
}

impl Model for Endless {
    fn stream(&self, _: &Request) -> EventStream {
        Box::pin(Watched {
            said: false,
            dropped: self.dropped.clone(),
        })
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_leaves_mid_stream_cancels_the_model_call() {
    let dropped = Arc::new(AtomicBool::new(false));
    let addr = common::serve_one(
        "endless",
        Endless {
            dropped: dropped.clone(),
        },
    )
    .await;
    let mut response = reqwest::Client::new()
        .post(format!("http://{addr}/v1/chat/completions"))
        .json(&json!({"model": "endless", "stream": true,
            "messages": [{"role": "user", "content": "Go on."}]}))
        .send()
        .await
        .unwrap();
    let first = response.chunk().await.unwrap().unwrap();
    assert!(String::from_utf8_lossy(&first).contains("chat.completion.chunk"));
    assert!(!dropped.load(Ordering::SeqCst));
    drop(response);
    let started = Instant::now();
    while !dropped.load(Ordering::SeqCst) {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "the model's stream outlived its client"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
