//! Clients that send their request slowly, a byte at a time or not at all, are cut off at
//! the gateway's deadlines: the connection for headers that never end, a 408 in the
//! client's shape for a body that never ends.

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
    let deadlines = Deadlines {
        headers: Duration::from_millis(500),
        body: Duration::from_millis(500),
    };
    let gateway = Gateway::new(vec![Route::new("hello", Arc::new(Hello), "hello")], false)
        .deadlines(deadlines);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
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
