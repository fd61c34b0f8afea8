//! What a request may weigh: the largest body a key may send (a 413 in its API's shape),
//! and the bytes the whole gateway decodes at once (a 503 in its shape once they are
//! taken, until the answers that hold them have begun).

use futures_util::StreamExt;
use kite_core::{Event, EventStream, FinishReason, Model, Request};
use kite_serve::{Gateway, Route, Sizes};
use serde_json::{Value, json};
use std::sync::Arc;
use tokio::sync::Semaphore;

/// A model whose answers to requests with tools each wait for a permit before their first
/// event; others answer at once.
#[derive(Clone)]
struct Gated(Arc<Semaphore>);

impl Model for Gated {
    fn stream(&self, request: &Request) -> EventStream {
        let gate = (!request.tools.is_empty()).then(|| self.0.clone());
        Box::pin(
            futures_util::stream::once(async move {
                if let Some(gate) = gate {
                    gate.acquire().await.unwrap().forget();
                }
                Ok(Event::text(0, "Hello."))
            })
            .chain(futures_util::stream::iter([Ok(Event::Finish {
                reason: FinishReason::Stop,
            })])),
        )
    }
}

async fn serve(gateway: Gateway) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(kite_serve::serve(
        listener,
        Arc::new(gateway),
        std::future::pending(),
    ));
    format!("http://{addr}")
}

/// A Chat Completions body of about `bytes`, heavy with tools as coding agents send.
fn chat_body(bytes: usize) -> Value {
    let schema = json!({"type": "object", "properties": {"path": {"type": "string", "description": "x".repeat(200)}}});
    let tools: Vec<Value> = (0..bytes / 300)
        .map(|i| json!({"type": "function", "function": {"name": format!("tool_{i}"), "parameters": schema}}))
        .collect();
    json!({"model": "m", "messages": [{"role": "user", "content": "Hi"}], "tools": tools})
}

/// The same weight as an Anthropic Messages body.
fn messages_body(bytes: usize) -> Value {
    json!({"model": "m", "max_tokens": 10, "messages": [{"role": "user", "content": "x".repeat(bytes)}]})
}

#[tokio::test]
async fn a_body_past_the_keys_limit_is_a_413_in_its_apis_shape() {
    let gateway = Gateway::new(
        vec![Route::new(
            "m",
            Arc::new(Gated(Arc::new(Semaphore::new(100)))),
            "m",
        )],
        false,
    )
    .sizes(Sizes {
        max_body: Some(1 << 20),
        max_stored: None,
    });
    let base = serve(gateway).await;
    let client = reqwest::Client::new();
    let over = client
        .post(format!("{base}/v1/chat/completions"))
        .json(&chat_body(3 << 20 >> 1))
        .send()
        .await
        .unwrap();
    assert_eq!(over.status(), 413);
    let said: Value = over.json().await.unwrap();
    assert_eq!(
        said["error"]["message"], "the request body is larger than 1 MiB",
        "{said}"
    );
    let over = client
        .post(format!("{base}/v1/messages"))
        .json(&messages_body(3 << 20 >> 1))
        .send()
        .await
        .unwrap();
    assert_eq!(over.status(), 413);
    let said: Value = over.json().await.unwrap();
    assert_eq!(said["type"], "error", "{said}");
    assert_eq!(said["error"]["type"], "request_too_large", "{said}");
    let under = client
        .post(format!("{base}/v1/chat/completions"))
        .json(&chat_body(1 << 19))
        .send()
        .await
        .unwrap();
    assert_eq!(under.status(), 200);
}

#[tokio::test]
async fn the_bytes_decoded_at_once_are_bounded_across_the_gateway() {
    let gate = Arc::new(Semaphore::new(0));
    let gateway = Gateway::new(
        vec![Route::new("m", Arc::new(Gated(gate.clone())), "m")],
        false,
    )
    .max_decoding(2 << 20);
    let base = serve(gateway).await;
    let client = reqwest::Client::new();
    let ask = |body: Value, path: &'static str| {
        let (client, base) = (client.clone(), base.clone());
        async move {
            client
                .post(format!("{base}{path}"))
                .json(&body)
                .send()
                .await
                .unwrap()
        }
    };
    // A large request whose answer has not begun holds its bytes...
    let first = tokio::spawn(ask(chat_body(3 << 19), "/v1/chat/completions"));
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    // ...so another is told to come back, in its API's shape...
    let refused = ask(messages_body(3 << 19), "/v1/messages").await;
    assert_eq!(refused.status(), 503);
    assert_eq!(refused.headers()["retry-after"], "2");
    let said: Value = refused.json().await.unwrap();
    assert_eq!(said["type"], "error", "{said}");
    assert_eq!(said["error"]["type"], "overloaded_error", "{said}");
    // ...while a small one fits beside it...
    let small = ask(messages_body(1 << 10), "/v1/messages").await;
    assert_eq!(small.status(), 200);
    // ...and once the first answer begins, its bytes are given back.
    gate.add_permits(1);
    assert_eq!(first.await.unwrap().status(), 200);
    let again = ask(messages_body(3 << 19), "/v1/messages").await;
    assert_eq!(again.status(), 200);
}
