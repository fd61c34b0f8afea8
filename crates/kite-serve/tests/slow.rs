//! Clients that send their request slowly, a byte at a time or not at all, are cut off at
//! the gateway's deadlines: the connection for a first byte or headers that never come, a
//! 408 in the client's shape for a body that never ends; and thousands of connections that
//! say nothing, or trickle a body, do not keep out those that ask. And an answer slow to
//! come says it is alive while it is on its way.

use kite_core::{Event, EventStream, FinishReason, Model, Request};
use kite_serve::{Deadlines, Gateway, Route};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

struct Hello;

impl Model for Hello {
    fn stream(&self, _: &Request) -> EventStream {
        Box::pin(futures_util::stream::iter([
            Ok(Event::text(0, "Hello.")),
            Ok(Event::Finish {
                reason: FinishReason::Stop,
            }),
        ]))
    }
}

async fn serve() -> std::net::SocketAddr {
    serve_within(Deadlines {
        first_byte: Duration::from_millis(500),
        headers: Duration::from_millis(500),
        body: Duration::from_millis(500),
        ..Deadlines::default()
    })
    .await
}

/// The connections the gateway serves at once in these tests.
const CONNECTIONS: usize = 4096;

async fn serve_within(deadlines: Deadlines) -> std::net::SocketAddr {
    let gateway = Gateway::new(vec![Route::new("hello", Arc::new(Hello), "hello")], false)
        .deadlines(deadlines)
        .connections(CONNECTIONS);
    let listener = kite_serve::bind(([127, 0, 0, 1], 0).into()).await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(kite_serve::serve(
        listener,
        Arc::new(gateway),
        std::future::pending(),
    ));
    addr
}

/// What the gateway says on `socket` until it closes it (at most 10 s).
async fn answer(socket: &mut tokio::net::TcpStream) -> String {
    let mut said = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(10), socket.read_to_end(&mut said)).await;
    assert!(
        read.is_ok(),
        "the gateway kept the connection past its deadline"
    );
    String::from_utf8_lossy(&said).into_owned()
}

#[tokio::test]
async fn headers_that_never_end_lose_the_connection() {
    let addr = serve().await;
    let mut socket = tokio::net::TcpStream::connect(addr).await.unwrap();
    let started = Instant::now();
    socket
        .write_all(b"POST /v1/chat/completions HTTP/1.1\r\nhost: localhost\r\n")
        .await
        .unwrap();
    let said = answer(&mut socket).await;
    assert!(started.elapsed() >= Duration::from_millis(400), "{said}");
    assert!(!said.contains("200 OK"), "{said}");
}

#[tokio::test]
async fn a_body_that_never_ends_gets_408() {
    let addr = serve().await;
    let mut socket = tokio::net::TcpStream::connect(addr).await.unwrap();
    socket
        .write_all(
            b"POST /v1/chat/completions HTTP/1.1\r\nhost: localhost\r\n\
              content-type: application/json\r\ncontent-length: 100\r\n\r\n{\"model\"",
        )
        .await
        .unwrap();
    let said = answer(&mut socket).await;
    assert!(said.starts_with("HTTP/1.1 408"), "{said}");
    assert!(said.contains("did not come within"), "{said}");
}

#[tokio::test]
async fn a_body_announced_past_the_limit_is_refused_before_it_is_read() {
    let addr = serve().await;
    let mut socket = tokio::net::TcpStream::connect(addr).await.unwrap();
    let head = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nhost: localhost\r\n\
         content-type: application/json\r\ncontent-length: {}\r\n\r\n",
        kite_serve::MAX_BODY + 1
    );
    socket.write_all(head.as_bytes()).await.unwrap();
    let said = answer(&mut socket).await;
    assert!(said.starts_with("HTTP/1.1 413"), "{said}");
}

#[tokio::test]
async fn a_connection_that_says_nothing_is_closed_at_the_first_byte_deadline() {
    let addr = serve_within(Deadlines {
        first_byte: Duration::from_millis(300),
        ..Deadlines::default()
    })
    .await;
    let mut socket = tokio::net::TcpStream::connect(addr).await.unwrap();
    let started = Instant::now();
    let said = answer(&mut socket).await;
    assert!(said.is_empty(), "{said}");
    // Long before the 30 s the headers may take once they start.
    assert!(started.elapsed() < Duration::from_secs(10));
}

/// Raises this process's open-file limit to `want` (or its hard limit).
fn allow_files(want: u64) -> u64 {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit(2) and setrlimit(2) on a struct of ours.
    unsafe {
        libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit);
        limit.rlim_cur = want.min(limit.rlim_max);
        libc::setrlimit(libc::RLIMIT_NOFILE, &limit);
    }
    limit.rlim_cur
}

/// Keeps `n` connections to `addr` open that send `first` (maybe nothing) and then
/// nothing, or, with `trickle`, a byte a second, reopening each one the gateway closes,
/// until the returned token is cancelled; returns once nearly all are open (or after 30 s).
async fn idle_flood(
    addr: std::net::SocketAddr,
    n: usize,
    first: &'static [u8],
    trickle: bool,
) -> tokio_util::sync::CancellationToken {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let stop = tokio_util::sync::CancellationToken::new();
    let open = Arc::new(AtomicUsize::new(0));
    for _ in 0..n {
        let stop = stop.clone();
        let open = open.clone();
        tokio::spawn(async move {
            while !stop.is_cancelled() {
                let Ok(mut socket) = tokio::net::TcpStream::connect(addr).await else {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                };
                if !first.is_empty() && socket.write_all(first).await.is_err() {
                    continue;
                }
                let mut sink = [0u8; 64];
                open.fetch_add(1, Ordering::Relaxed);
                let (mut reader, mut writer) = socket.into_split();
                let drip = async {
                    if !trickle {
                        return std::future::pending().await;
                    }
                    loop {
                        tokio::time::sleep(Duration::from_secs(1)).await;
                        if writer.write_all(b"x").await.is_err() {
                            break;
                        }
                    }
                };
                tokio::select! {
                    _ = reader.read(&mut sink) => {}
                    () = drip => {}
                    () = stop.cancelled() => {}
                }
                open.fetch_sub(1, Ordering::Relaxed);
            }
        });
    }
    let started = Instant::now();
    while open.load(Ordering::Relaxed) < n * 19 / 20 && started.elapsed() < Duration::from_secs(30)
    {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    stop
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_connections_do_not_keep_out_those_that_ask() {
    // 4,200 connections that say nothing, each reopened as it is closed, once made most
    // requests wait past their clients' patience: the connections were all taken. Those
    // that send one byte of a request, then nothing, are no better.
    // Each flooding connection takes two files here: the client's socket and the
    // gateway's.
    let files = allow_files(16_000);
    let flood = ((files as usize).saturating_sub(2_000) / 2).min(4_200);
    // Past the cap on all connections, so that new ones must take another's room.
    assert!(flood > CONNECTIONS, "too few files allowed ({files})");
    // Nor are those that send a request's head and then its body a byte a second.
    let trickled = &b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n\
        Content-Type: application/json\r\nContent-Length: 100000\r\n\r\n{"[..];
    for (kind, first, trickle) in [
        ("silent", &b""[..], false),
        ("one-byte", &b"P"[..], false),
        ("trickled-body", trickled, true),
    ] {
        let addr = serve_within(Deadlines::default()).await;
        let stop = idle_flood(addr, flood, first, trickle).await;
        let client = reqwest::Client::builder()
            .timeout(Duration::from_secs(15))
            .pool_max_idle_per_host(0)
            .build()
            .unwrap();
        for i in 0..20 {
            let answer = client
                .post(format!("http://{addr}/v1/chat/completions"))
                .json(&serde_json::json!({"model": "hello",
                    "messages": [{"role": "user", "content": "Hi"}]}))
                .send()
                .await;
            let answer =
                answer.unwrap_or_else(|e| panic!("request {i} under the {kind} flood: {e:?}"));
            assert_eq!(answer.status(), 200, "request {i}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        stop.cancel();
    }
}

/// Starts, then thinks for a while before it goes on.
struct Thinks;

impl Model for Thinks {
    fn stream(&self, _: &Request) -> EventStream {
        let first = futures_util::stream::iter([Ok(Event::text(0, "Working. "))]);
        let then = futures_util::stream::once(async {
            tokio::time::sleep(Duration::from_millis(700)).await;
            Ok(Event::text(0, "Done."))
        });
        Box::pin(futures_util::StreamExt::chain(first, then))
    }
}

#[tokio::test]
async fn a_silent_stream_says_it_is_alive_in_its_apis_way() {
    let gateway =
        Gateway::new(vec![Route::new("m", Arc::new(Thinks), "m")], false).deadlines(Deadlines {
            keep_alive: Duration::from_millis(100),
            ..Deadlines::default()
        });
    let listener = kite_serve::bind(([127, 0, 0, 1], 0).into()).await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(kite_serve::serve(
        listener,
        Arc::new(gateway),
        std::future::pending(),
    ));
    let client = reqwest::Client::new();
    let ask = |path: &str, body: serde_json::Value| {
        client
            .post(format!("http://{addr}/v1/{path}"))
            .json(&body)
            .send()
    };
    let messages = ask(
        "messages",
        serde_json::json!({"model": "m", "max_tokens": 10, "stream": true,
            "messages": [{"role": "user", "content": "Hi"}]}),
    )
    .await
    .unwrap()
    .text()
    .await
    .unwrap();
    assert!(messages.matches("event: ping").count() >= 3, "{messages}");
    assert!(messages.contains("Done."), "{messages}");
    let chat = ask(
        "chat/completions",
        serde_json::json!({"model": "m", "stream": true,
            "messages": [{"role": "user", "content": "Hi"}]}),
    )
    .await
    .unwrap()
    .text()
    .await
    .unwrap();
    assert!(chat.matches(": keep-alive").count() >= 3, "{chat}");
    assert!(chat.trim_end().ends_with("data: [DONE]"), "{chat}");
}
