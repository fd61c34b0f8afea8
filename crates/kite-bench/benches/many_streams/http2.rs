//! The gateway's clients over HTTP/2 (`h2c`, spoken from the first byte): the streams go
//! [`MAX_STREAMS`](kite::serve::MAX_STREAMS) less a few at a time on each connection, so
//! the gateway holds a file per stream (its upstream's) and a few for its clients'
//! connections. Each stream's events are read as they come and only its text is kept.

use crate::{Report, measure, upstream};
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper_util::rt::{TokioExecutor, TokioIo};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

type Sender = hyper::client::conn::http2::SendRequest<Full<Bytes>>;

/// `streams` streams at once through the gateway on `port`, with its process `pid` watched.
pub(crate) async fn run(
    port: u16,
    pid: u32,
    streams: usize,
    events: usize,
    ramp: Duration,
) -> Report {
    let per_connection = kite::serve::MAX_STREAMS as usize - 6;
    let mut senders = Vec::new();
    for _ in 0..streams.div_ceil(per_connection) {
        let tcp = tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .expect("the gateway listens");
        let (sender, conn) =
            hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(tcp))
                .await
                .expect("an HTTP/2 connection");
        tokio::spawn(conn);
        senders.push(sender);
    }
    let senders: Arc<[Sender]> = senders.into();
    let expected: Arc<str> = upstream::text(events).into();
    measure(pid, streams, ramp, move |i, got_events| {
        let sender = senders[i / per_connection].clone();
        one(sender, port, expected.clone(), got_events)
    })
    .await
}

/// One streamed Chat Completion: whether its text came whole.
async fn one(
    mut sender: Sender,
    port: u16,
    expected: Arc<str>,
    got_events: Arc<AtomicU64>,
) -> Result<bool, String> {
    let body = r#"{"model":"m","stream":true,"messages":[{"role":"user","content":"Go slowly."}]}"#;
    let request = hyper::Request::post(format!("http://127.0.0.1:{port}/v1/chat/completions"))
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from_static(body.as_bytes())))
        .map_err(|e| e.to_string())?;
    sender.ready().await.map_err(|e| e.to_string())?;
    let answer = sender
        .send_request(request)
        .await
        .map_err(|e| e.to_string())?;
    if !answer.status().is_success() {
        return Err(format!("HTTP {}", answer.status()));
    }
    let mut body = answer.into_body();
    let (mut pending, mut text, mut done) = (Vec::new(), String::new(), false);
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| e.to_string())?;
        let Some(data) = frame.data_ref() else {
            continue;
        };
        pending.extend_from_slice(data);
        while let Some(end) = pending.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = pending.drain(..=end).collect();
            let Some(data) = line.strip_prefix(b"data: ") else {
                continue;
            };
            let data = data.trim_ascii_end();
            if data == b"[DONE]" {
                done = true;
                continue;
            }
            let chunk: serde_json::Value =
                serde_json::from_slice(data).map_err(|e| e.to_string())?;
            if let Some(t) = chunk["choices"][0]["delta"]["content"].as_str() {
                got_events.fetch_add(1, Ordering::Relaxed);
                text.push_str(t);
            }
        }
    }
    Ok(done && text == *expected)
}
