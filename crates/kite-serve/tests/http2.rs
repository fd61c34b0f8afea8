//! HTTP/2 without TLS, from the first byte (`h2c` with prior knowledge): many streamed
//! answers at once on one connection, each whole; past what the files allow, a request is
//! refused in its API's shape; and a gateway asked to stop lets the streams under way end.

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper_util::rt::{TokioExecutor, TokioIo};
use kite_core::{Event, EventStream, FinishReason, Model, Request};
use kite_serve::{Gateway, Route};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use tokio::sync::Semaphore;

/// Answers "one two three", a word at a time, once `go` lets it; counts the answers under
/// way at once.
struct Words {
    go: Arc<Semaphore>,
    now: Arc<AtomicUsize>,
    most: Arc<AtomicUsize>,
}

impl Model for Words {
    fn stream(&self, _: &Request) -> EventStream {
        let (go, now, most) = (self.go.clone(), self.now.clone(), self.most.clone());
        Box::pin(async_stream(go, now, most))
    }
}

fn async_stream(
    go: Arc<Semaphore>,
    now: Arc<AtomicUsize>,
    most: Arc<AtomicUsize>,
) -> impl futures_util::Stream<Item = Result<Event, kite_core::Error>> + Send {
    futures_util::stream::unfold(0, move |step| {
        let (go, now, most) = (go.clone(), now.clone(), most.clone());
        async move {
            match step {
                0 => {
                    let n = now.fetch_add(1, Ordering::SeqCst) + 1;
                    most.fetch_max(n, Ordering::SeqCst);
                    go.acquire().await.ok()?.forget();
                    Some((Ok(Event::text(0, "one ")), 1))
                }
                1 => Some((Ok(Event::text(0, "two ")), 2)),
                2 => Some((Ok(Event::text(0, "three")), 3)),
                3 => {
                    now.fetch_sub(1, Ordering::SeqCst);
                    Some((
                        Ok(Event::Finish {
                            reason: FinishReason::Stop,
                        }),
                        4,
                    ))
                }
                _ => None,
            }
        }
    })
}

struct Served {
    addr: std::net::SocketAddr,
    go: Arc<Semaphore>,
    most: Arc<AtomicUsize>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    done: tokio::task::JoinHandle<std::io::Result<()>>,
}

async fn serve(connections: usize) -> Served {
    serve_within(connections, kite_serve::Deadlines::default()).await
}

async fn serve_within(connections: usize, deadlines: kite_serve::Deadlines) -> Served {
    let go = Arc::new(Semaphore::new(0));
    let (now, most) = (Arc::default(), Arc::new(AtomicUsize::new(0)));
    let model = Words {
        go: go.clone(),
        now,
        most: most.clone(),
    };
    let gateway = Gateway::new(vec![Route::new("words", Arc::new(model), "words")], false)
        .connections(connections)
        .deadlines(deadlines);
    let listener = kite_serve::bind(([127, 0, 0, 1], 0).into()).await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let done = tokio::spawn(kite_serve::serve(listener, Arc::new(gateway), async move {
        let _ = stopped.await;
    }));
    Served {
        addr,
        go,
        most,
        stop: Some(stop),
        done,
    }
}

type Sender = hyper::client::conn::http2::SendRequest<Full<Bytes>>;

/// An HTTP/2 connection to `addr`, spoken from the first byte.
async fn connect(addr: std::net::SocketAddr) -> Sender {
    let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    let (sender, conn) =
        hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(tcp))
            .await
            .unwrap();
    tokio::spawn(conn);
    sender
}

/// A streamed Chat Completion over `sender`: its status and its whole body.
async fn ask(mut sender: Sender, addr: std::net::SocketAddr) -> (u16, String) {
    let body = r#"{"model":"words","stream":true,"messages":[{"role":"user","content":"Count."}]}"#;
    let request = hyper::Request::post(format!("http://{addr}/v1/chat/completions"))
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from_static(body.as_bytes())))
        .unwrap();
    sender.ready().await.unwrap();
    let answer = sender.send_request(request).await.unwrap();
    let status = answer.status().as_u16();
    let bytes = answer.into_body().collect().await.unwrap().to_bytes();
    (status, String::from_utf8_lossy(&bytes).into_owned())
}

/// The text of a Chat Completions stream.
fn text(sse: &str) -> String {
    sse.lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .filter_map(|d| serde_json::from_str::<serde_json::Value>(d).ok())
        .filter_map(|v| {
            v["choices"][0]["delta"]["content"]
                .as_str()
                .map(str::to_owned)
        })
        .collect()
}

#[tokio::test]
async fn many_streams_go_at_once_on_one_connection_each_whole() {
    let served = serve(1024).await;
    let sender = connect(served.addr).await;
    let mut asked = tokio::task::JoinSet::new();
    for _ in 0..40 {
        asked.spawn(ask(sender.clone(), served.addr));
    }
    // Every one of them under way at once, before any may answer.
    let started = tokio::time::Instant::now();
    while served.most.load(Ordering::SeqCst) < 40 {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "only {} of 40 streams began",
            served.most.load(Ordering::SeqCst)
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    served.go.add_permits(40);
    while let Some(done) = asked.join_next().await {
        let (status, body) = done.unwrap();
        assert_eq!(status, 200, "{body}");
        assert_eq!(text(&body), "one two three", "{body}");
        assert!(body.trim_end().ends_with("data: [DONE]"), "{body}");
    }
}

#[tokio::test]
async fn past_what_the_files_allow_a_request_is_refused_in_its_apis_shape() {
    // Two connections' worth: four files, one for the connection, three for requests.
    let served = serve(2).await;
    let sender = connect(served.addr).await;
    let mut held = tokio::task::JoinSet::new();
    for _ in 0..3 {
        held.spawn(ask(sender.clone(), served.addr));
    }
    while served.most.load(Ordering::SeqCst) < 3 {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let (status, body) = ask(sender.clone(), served.addr).await;
    assert_eq!(status, 503, "{body}");
    let error: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert!(
        error["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("as many requests as it can hold")),
        "{body}"
    );
    // The three under way are answered whole, and then there is room again.
    served.go.add_permits(4);
    while let Some(done) = held.join_next().await {
        let (status, body) = done.unwrap();
        assert_eq!((status, text(&body).as_str()), (200, "one two three"));
    }
    let (status, body) = ask(sender, served.addr).await;
    assert_eq!(
        (status, text(&body).as_str()),
        (200, "one two three"),
        "{body}"
    );
}

#[tokio::test]
async fn asked_to_stop_it_lets_the_streams_under_way_end_and_refuses_new_ones() {
    let mut served = serve(1024).await;
    let sender = connect(served.addr).await;
    let mut held = tokio::task::JoinSet::new();
    for _ in 0..3 {
        held.spawn(ask(sender.clone(), served.addr));
    }
    while served.most.load(Ordering::SeqCst) < 3 {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    served.stop.take().unwrap().send(()).unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    // A new request on the same connection is refused (or the connection no longer takes
    // streams); either way none is answered.
    let mut late = sender.clone();
    let request = hyper::Request::post(format!("http://{}/v1/chat/completions", served.addr))
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from_static(b"{}")))
        .unwrap();
    let refused = match late.send_request(request).await {
        Ok(answer) => answer.status().as_u16() == 503,
        Err(_) => true,
    };
    assert!(refused, "a request after the stop was served");
    served.go.add_permits(3);
    while let Some(done) = held.join_next().await {
        let (status, body) = done.unwrap();
        assert_eq!((status, text(&body).as_str()), (200, "one two three"));
    }
    let ended = tokio::time::timeout(Duration::from_secs(10), served.done).await;
    assert!(
        matches!(ended, Ok(Ok(Ok(())))),
        "the gateway did not stop: {ended:?}"
    );
}

#[tokio::test]
async fn the_host_an_http2_request_names_is_its_authority() {
    // A gateway with no keys answers only requests for this machine: over HTTP/2 the name
    // is in `:authority`, and a `Host` beside it names nothing else.
    let served = serve(1024).await;
    served.go.add_permits(8);
    let mut sender = connect(served.addr).await;
    for (uri, host, status) in [
        (format!("http://{}/v1/models", served.addr), None, 200),
        ("http://evil.example/v1/models".to_owned(), None, 403),
        (
            "http://evil.example/v1/models".to_owned(),
            Some(served.addr.to_string()),
            403,
        ),
    ] {
        let mut request = hyper::Request::get(uri.as_str());
        if let Some(host) = &host {
            request = request.header("host", host.as_str());
        }
        let request = request.body(Full::new(Bytes::new())).unwrap();
        sender.ready().await.unwrap();
        let answer = sender.send_request(request).await.unwrap();
        assert_eq!(answer.status().as_u16(), status, "{uri} {host:?}");
    }
}

/// Deadlines of half a second for a client's first byte and its headers.
fn short() -> kite_serve::Deadlines {
    kite_serve::Deadlines {
        first_byte: Duration::from_millis(500),
        headers: Duration::from_millis(500),
        ..kite_serve::Deadlines::default()
    }
}

/// Sends `bytes` on a new connection to `addr`, then reads until the gateway closes it;
/// false when it is still open after `within`.
async fn closed_after(addr: std::net::SocketAddr, bytes: &[u8], within: Duration) -> bool {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    tcp.write_all(bytes).await.unwrap();
    let mut sink = Vec::new();
    tokio::time::timeout(within, tcp.read_to_end(&mut sink))
        .await
        .is_ok()
}

/// The client's preface and an empty SETTINGS frame: an HTTP/2 connection, then silence
/// (its pings unanswered).
const SILENT_H2: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\0\0\0\x04\0\0\0\0\0";

#[tokio::test]
async fn half_a_preface_or_a_silent_connection_is_closed_past_the_headers_deadline() {
    let served = serve_within(1024, short()).await;
    for (what, bytes) in [
        ("a byte", &b"P"[..]),
        ("half the preface", &b"PRI * HTTP/2.0\r\n"[..]),
        ("the preface, then nothing", SILENT_H2),
    ] {
        assert!(
            closed_after(served.addr, bytes, Duration::from_secs(10)).await,
            "{what}: still open"
        );
    }
}

#[tokio::test]
async fn stopping_does_not_wait_for_a_client_that_never_answers() {
    use tokio::io::AsyncWriteExt;
    let mut served = serve(1024).await;
    let mut silent = tokio::net::TcpStream::connect(served.addr).await.unwrap();
    silent.write_all(SILENT_H2).await.unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    served.stop.take().unwrap().send(()).unwrap();
    let ended = tokio::time::timeout(Duration::from_secs(15), served.done).await;
    assert!(
        matches!(ended, Ok(Ok(Ok(())))),
        "the gateway did not stop: {ended:?}"
    );
    drop(silent);
}

/// An HTTP/2 connection whose client holds every stream's window shut, and the task that
/// drives it (it ends when the connection does).
async fn shut_window(
    addr: std::net::SocketAddr,
) -> (Sender, tokio::task::JoinHandle<hyper::Result<()>>) {
    let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    let (sender, conn) = hyper::client::conn::http2::Builder::new(TokioExecutor::new())
        .initial_stream_window_size(0)
        .handshake(TokioIo::new(tcp))
        .await
        .unwrap();
    (sender, tokio::spawn(conn))
}

#[tokio::test]
async fn answers_a_client_never_takes_do_not_hold_the_gateway() {
    // Four files: one for each connection, one for each request under way.
    let served = serve(2).await;
    served.go.add_permits(8);
    // A client whose window is shut: it gets each answer's head, never its body.
    let (shut, _connection) = shut_window(served.addr).await;
    let mut held = Vec::new();
    for _ in 0..6 {
        let mut shut = shut.clone();
        let request = hyper::Request::get(format!("http://{}/v1/models/nothing", served.addr))
            .body(Full::new(Bytes::new()))
            .unwrap();
        shut.ready().await.unwrap();
        let answer = shut.send_request(request).await.unwrap();
        assert_eq!(answer.status().as_u16(), 404);
        held.push(answer);
    }
    // Another client is still answered.
    let (status, body) = ask(connect(served.addr).await, served.addr).await;
    assert_eq!(
        (status, text(&body).as_str()),
        (200, "one two three"),
        "{body}"
    );
}

#[tokio::test]
async fn a_client_that_takes_none_of_a_streamed_answer_loses_its_connection() {
    // Keep-alives every quarter second: four of them, a second, without a piece taken.
    let deadlines = kite_serve::Deadlines {
        keep_alive: Duration::from_millis(250),
        ..kite_serve::Deadlines::default()
    };
    let served = serve_within(1024, deadlines).await;
    served.go.add_permits(8);
    let (mut shut, connection) = shut_window(served.addr).await;
    let body = r#"{"model":"words","stream":true,"messages":[{"role":"user","content":"Count."}]}"#;
    let request = hyper::Request::post(format!("http://{}/v1/chat/completions", served.addr))
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from_static(body.as_bytes())))
        .unwrap();
    shut.ready().await.unwrap();
    let answer = shut.send_request(request).await.unwrap();
    assert_eq!(answer.status().as_u16(), 200);
    // The gateway closes the connection, and the client's end of it ends.
    let ended = tokio::time::timeout(Duration::from_secs(20), connection).await;
    assert!(ended.is_ok(), "the connection was kept");
    // A client that takes its answers is answered.
    let (status, body) = ask(connect(served.addr).await, served.addr).await;
    assert_eq!(
        (status, text(&body).as_str()),
        (200, "one two three"),
        "{body}"
    );
}
