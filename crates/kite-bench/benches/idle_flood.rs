//! Legitimate requests under an idle-connection flood: thousands of connections to
//! `kite serve` that send nothing (or one byte, then nothing, or a request's head and then
//! its body a byte a second), each reopened as soon as the gateway closes it, while a client asks one question at a time on a new connection each.
//! Prints p50, p99 and the slowest of those requests, alone and beside each flood, and how
//! many failed.
//!
//! `cargo bench -p kite-bench --bench idle_flood` (`KITE_BENCH_FLOOD` connections, default
//! 4,200, past the gateway's 4,096; `KITE_BENCH_REQUESTS`, default 200). The open-file limit
//! is raised to its hard limit here; the flood needs three descriptors per connection (both
//! ends are in this process, and the gateway keeps a second handle on each).
//!
//! The gateway runs on its own two-worker runtime, as `kite serve` does; the flood and the
//! client on another.

use kite_core::{Event, EventStream, FinishReason, Model, Request};
use kite_serve::{Gateway, Route};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::AsyncReadExt;

struct Hello;

impl Model for Hello {
    fn stream(&self, _: &Request) -> EventStream {
        Box::pin(futures::stream::iter([
            Ok(Event::text(0, "Hello.")),
            Ok(Event::Finish {
                reason: FinishReason::Stop,
            }),
        ]))
    }
}

fn env(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Raises the open-file limit to the hard limit; the new soft limit.
fn allow_files() -> u64 {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit(2) and setrlimit(2) on a struct of ours.
    unsafe {
        libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit);
        limit.rlim_cur = limit.rlim_max;
        libc::setrlimit(libc::RLIMIT_NOFILE, &limit);
    }
    limit.rlim_cur
}

/// The gateway on its own runtime thread.
fn gateway() -> SocketAddr {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let gw = Gateway::new(vec![Route::new("hello", Arc::new(Hello), "hello")], false);
            let listener = kite_serve::bind(([127, 0, 0, 1], 0).into()).await.unwrap();
            tx.send(listener.local_addr().unwrap()).unwrap();
            kite_serve::serve(listener, Arc::new(gw), std::future::pending())
                .await
                .unwrap();
        });
    });
    rx.recv().unwrap()
}

/// `n` connections that send `first` (maybe nothing) and then nothing, or with `trickle`
/// a byte a second, reopened as they are closed, until `stop`.
fn flood(
    addr: SocketAddr,
    n: usize,
    (first, trickle): (&'static [u8], bool),
    stop: &tokio_util::sync::CancellationToken,
) {
    use tokio::io::AsyncWriteExt;
    for _ in 0..n {
        let stop = stop.clone();
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
                let (mut reader, mut writer) = socket.into_split();
                let drip = async {
                    if !trickle {
                        return std::future::pending().await;
                    }
                    loop {
                        tokio::time::sleep(Duration::from_secs(1)).await;
                        if writer.write_all(b"x").await.is_err() {
                            return;
                        }
                    }
                };
                tokio::select! {
                    _ = reader.read(&mut sink) => {}
                    () = drip => {}
                    () = stop.cancelled() => {}
                }
            }
        });
    }
}

/// Asks `n` questions one after another, each on a new connection: their latencies, and
/// how many failed (no answer within 30 s, or an error).
async fn ask(addr: SocketAddr, n: usize) -> (Vec<Duration>, usize) {
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .pool_max_idle_per_host(0)
        .build()
        .unwrap();
    let (mut took, mut failed) = (Vec::new(), 0);
    for _ in 0..n {
        let started = Instant::now();
        let answer = client
            .post(format!("http://{addr}/v1/chat/completions"))
            .header("content-type", "application/json")
            .body(r#"{"model": "hello", "messages": [{"role": "user", "content": "Hi"}]}"#)
            .send()
            .await;
        let ok = match answer {
            Ok(r) => r.status().is_success() && r.bytes().await.is_ok(),
            Err(e) => {
                if failed == 0 {
                    eprintln!("first failure: {e:?}");
                }
                false
            }
        };
        match ok {
            true => took.push(started.elapsed()),
            false => failed += 1,
        }
    }
    (took, failed)
}

fn report(what: &str, mut took: Vec<Duration>, failed: usize) {
    took.sort();
    let at = |q: f64| {
        took.get(((took.len() as f64 - 1.0) * q).round() as usize)
            .map_or(f64::NAN, |d| d.as_secs_f64() * 1000.0)
    };
    println!(
        "{what:<32} {:>6} ok {:>4} failed   p50 {:>8.2} ms   p99 {:>8.2} ms   max {:>8.2} ms",
        took.len(),
        failed,
        at(0.5),
        at(0.99),
        at(1.0)
    );
}

fn main() {
    let files = allow_files();
    let wanted = env("KITE_BENCH_FLOOD", 4_200);
    let flood_size = wanted.min((files as usize).saturating_sub(1_000) / 3);
    let requests = env("KITE_BENCH_REQUESTS", 200);
    let addr = gateway();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        println!(
            "{requests} requests, one at a time, each on a new connection (open files: {files})"
        );
        let (took, failed) = ask(addr, requests).await;
        report("alone", took, failed);
        let trickled = &b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n\
            Content-Type: application/json\r\nContent-Length: 100000\r\n\r\n{"[..];
        for (kind, what) in [
            ((&b""[..], false), "silent"),
            ((&b"P"[..], false), "one-byte"),
            ((trickled, true), "body-trickling"),
        ] {
            let stop = tokio_util::sync::CancellationToken::new();
            flood(addr, flood_size, kind, &stop);
            tokio::time::sleep(Duration::from_secs(3)).await;
            let (took, failed) = ask(addr, requests).await;
            report(
                &format!("beside {flood_size} {what} connections"),
                took,
                failed,
            );
            stop.cancel();
            tokio::time::sleep(Duration::from_secs(2)).await;
        }
    });
}
