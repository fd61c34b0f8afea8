//! The slow upstream: answers every request with a streamed Chat Completions answer of
//! `events` words, one event every `interval`, then the finish and `[DONE]`. Written on
//! tokio's sockets with the answer's bytes made once, so that it costs little beside what
//! it feeds.

use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// The text every stream carries: `w0 w1 … w{events-1} `.
pub(crate) fn text(events: usize) -> String {
    (0..events).map(|i| format!("w{i} ")).collect()
}

/// One event as a chunk of HTTP chunked encoding.
fn chunk(data: &str) -> Vec<u8> {
    let event = format!("data: {data}\n\n");
    format!("{:x}\r\n{event}\r\n", event.len()).into_bytes()
}

fn delta(content: &str, finish: Option<&str>) -> String {
    let finish = finish.map_or("null".to_owned(), |f| format!("\"{f}\""));
    format!(
        r#"{{"id":"chatcmpl-many","object":"chat.completion.chunk","created":0,"model":"m","choices":[{{"index":0,"delta":{{"content":{}}},"finish_reason":{finish}}}]}}"#,
        serde_json::to_string(content).unwrap()
    )
}

/// Serves on a free loopback port, printing it on stdout, until killed.
pub(crate) fn run(events: usize, interval: Duration) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async move {
        let words: std::sync::Arc<Vec<Vec<u8>>> = std::sync::Arc::new(
            (0..events)
                .map(|i| chunk(&delta(&format!("w{i} "), None)))
                .collect(),
        );
        let listener = listen().await;
        println!("{}", listener.local_addr().unwrap().port());
        loop {
            let Ok((sock, _)) = listener.accept().await else {
                continue;
            };
            let words = words.clone();
            tokio::spawn(async move {
                let _ = answer(sock, &words, interval).await;
            });
        }
    });
}

/// A listener with a backlog deep enough for thousands of connections arriving at once.
async fn listen() -> TcpListener {
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.set_reuseaddr(true).unwrap();
    socket.bind("127.0.0.1:0".parse().unwrap()).unwrap();
    socket.listen(4096).unwrap()
}

async fn answer(mut sock: TcpStream, words: &[Vec<u8>], interval: Duration) -> std::io::Result<()> {
    sock.set_nodelay(true)?;
    // The request: its head, then as many bytes as it says its body has.
    let mut buf = Vec::with_capacity(4096);
    let mut tmp = [0u8; 4096];
    let head_end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        let n = sock.read(&mut tmp).await?;
        if n == 0 {
            return Ok(());
        }
        buf.extend_from_slice(&tmp[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).to_ascii_lowercase();
    let length: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0);
    let mut have = buf.len() - head_end;
    while have < length {
        let n = sock.read(&mut tmp).await?;
        if n == 0 {
            return Ok(());
        }
        have += n;
    }
    sock.write_all(
        b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n",
    )
    .await?;
    let mut tick = tokio::time::interval(interval);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    for word in words {
        tick.tick().await;
        sock.write_all(word).await?;
    }
    let mut end = chunk(&delta("", Some("stop")));
    end.extend_from_slice(&chunk("[DONE]"));
    end.extend_from_slice(b"0\r\n\r\n");
    sock.write_all(&end).await?;
    sock.shutdown().await
}
