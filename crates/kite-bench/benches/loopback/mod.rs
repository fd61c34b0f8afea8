//! What the gateway benchmarks share: a loopback upstream that answers at once, and kite's
//! gateway in front of a model, each on a thread and runtime of its own; the streamed Chat
//! Completions answer they give; LiteLLM's proxy (`litellm`).

#[allow(dead_code)]
pub(crate) mod litellm;

use axum::response::IntoResponse;
use std::net::SocketAddr;
use std::sync::Arc;

/// A loopback upstream answering `POST path` with the SSE `body`, once it has read the
/// request whole, as a provider does.
#[allow(dead_code)]
pub(crate) fn upstream(path: &'static str, body: String) -> SocketAddr {
    let body: Arc<str> = body.into();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let app = axum::Router::new()
                .route(
                    path,
                    axum::routing::post(move |_request: axum::body::Bytes| {
                        let body = body.clone();
                        async move {
                            ([("content-type", "text/event-stream")], body.to_string())
                                .into_response()
                        }
                    }),
                )
                .layer(axum::extract::DefaultBodyLimit::max(16 << 20));
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            tx.send(listener.local_addr().unwrap()).unwrap();
            axum::serve(listener, app).await.unwrap();
        });
    });
    rx.recv().unwrap()
}

/// kite's gateway serving `model` as `name` (and any other name, as `kite serve` does with
/// no routes), with a worker per core as `kite serve` runs.
pub(crate) fn kite_gateway(name: &'static str, model: Arc<dyn kite::Model>) -> SocketAddr {
    kite_gateway_with(name, model, |g| async move { g })
}

/// The same, as `configure` makes it (within the gateway's runtime).
#[allow(dead_code)]
pub(crate) fn kite_gateway_with<F>(
    name: &'static str,
    model: Arc<dyn kite::Model>,
    configure: impl FnOnce(kite::serve::Gateway) -> F + Send + 'static,
) -> SocketAddr
where
    F: std::future::Future<Output = kite::serve::Gateway>,
{
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let route = kite::serve::Route::new(name, model, name);
            let gateway = configure(kite::serve::Gateway::new(vec![route], true)).await;
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            tx.send(listener.local_addr().unwrap()).unwrap();
            kite::serve::serve(listener, Arc::new(gateway), std::future::pending())
                .await
                .unwrap();
        });
    });
    rx.recv().unwrap()
}

/// A streamed Chat Completions answer from `model`: the role, five words, the finish, and
/// `[DONE]`.
#[allow(dead_code)]
pub(crate) fn chat_stream(model: &str) -> String {
    let chunk = |delta: serde_json::Value, finish: serde_json::Value| {
        serde_json::json!({"id": "chatcmpl-bench", "object": "chat.completion.chunk",
            "created": 0, "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
    };
    let mut body = String::new();
    let mut event = |delta, finish| body.push_str(&format!("data: {}\n\n", chunk(delta, finish)));
    event(
        serde_json::json!({"role": "assistant", "content": ""}),
        serde_json::Value::Null,
    );
    for word in ["One ", "two ", "three ", "four ", "five."] {
        event(
            serde_json::json!({"content": word}),
            serde_json::Value::Null,
        );
    }
    event(serde_json::json!({}), serde_json::json!("stop"));
    body.push_str("data: [DONE]\n\n");
    body
}
