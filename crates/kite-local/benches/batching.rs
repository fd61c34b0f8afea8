//! Conversations answered at once: the aggregate tokens per second of 1, 2, 4 and 8
//! concurrent conversations through one `LocalModel` (continuous batching in one context),
//! beside llama.cpp's own `llama-server --parallel N` on the same GGUF file, threads and
//! request, when it is there.
//!
//! `cargo bench -p kite-local --bench batching`. Threads: `KITE_BENCH_THREADS` (default 1,
//! for generating and for prompts alike, on both sides). llama-server is taken from
//! `KITE_LLAMA_SERVER`, else `~/.cache/kite/llama-server/build/bin/llama-server`, which
//! `scripts/llama-server.sh` builds on the same llama.cpp library kite links (the server's
//! own sources come from another revision: see the script). Without it, its column is left
//! out.
//!
//! Each conversation is the same question, answered greedily (no repetition penalty) with
//! at most 128 tokens. The aggregate is every conversation's generated tokens over the time
//! from sending the first to the end of the last, prompts included; each figure is the
//! median of 3 rounds after a warm-up.

use futures_util::StreamExt;
use kite_core::{Event, Message, Model, Request};
use kite_local::{LocalConfig, LocalModel};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const QUESTION: &str = "Write a short story about a dragon who guards a library in the mountains.";
const MAX_TOKENS: u32 = 128;
const LEVELS: [usize; 4] = [1, 2, 4, 8];
const ROUNDS: usize = 3;

fn main() {
    let threads: i32 = std::env::var("KITE_BENCH_THREADS")
        .ok()
        .and_then(|t| t.parse().ok())
        .unwrap_or(1);
    let path = match kite_local::find_model() {
        Ok(p) => p,
        Err(e) => {
            eprintln!("no model to measure: {e}");
            return;
        }
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let server = llama_server();
    if server.is_none() {
        eprintln!("llama-server not found: its column is left out (see the crate's README)");
    }
    println!(
        "threads={threads}  {MAX_TOKENS} tokens at most per answer, greedy; medians of {ROUNDS}\n"
    );
    println!(
        "| conversations | kite tok/s | llama-server tok/s | kite / llama-server | tokens an answer (kite, llama-server) |"
    );
    println!("|---|---|---|---|---|");
    for n in LEVELS {
        let config = LocalConfig {
            threads,
            threads_batch: threads,
            repeat_penalty: 1.0,
            parallel: n as u32,
            ..LocalConfig::default()
        };
        let model = LocalModel::load(&path, config).expect("model loads");
        let kite = rt.block_on(rounds(|| kite_round(&model, n)));
        drop(model);
        let theirs = server.as_ref().map(|bin| {
            let running = Server::start(bin, &path, n, threads);
            rt.block_on(rounds(|| running.round(n)))
        });
        let (rate, tokens) = kite;
        match theirs {
            Some((t, their_tokens)) => println!(
                "| {n} | {rate:.1} | {t:.1} | {:.2} | {tokens:.0}, {their_tokens:.0} |",
                rate / t
            ),
            None => println!("| {n} | {rate:.1} | – | – | {tokens:.0} |"),
        }
    }
    kite_local::wait_for_workers(Duration::from_secs(5));
}

/// A warm-up, then the round of median rate of [`ROUNDS`]: its tokens a second, and the
/// tokens each answer had.
async fn rounds<F, Fut>(round: F) -> (f64, f64)
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = (f64, f64)>,
{
    round().await;
    let mut runs = Vec::new();
    for _ in 0..ROUNDS {
        runs.push(round().await);
    }
    runs.sort_by(|a, b| a.0.total_cmp(&b.0));
    runs[runs.len() / 2]
}

/// `n` conversations at once through one model: generated tokens a second, all told, and
/// per answer.
async fn kite_round(model: &LocalModel, n: usize) -> (f64, f64) {
    let mut request = Request::new("local").message(Message::user(QUESTION));
    request.max_tokens = Some(MAX_TOKENS);
    let t0 = Instant::now();
    let counts = futures_util::future::join_all((0..n).map(|_| async {
        let mut stream = model.stream(&request);
        let mut out = 0;
        while let Some(event) = stream.next().await {
            if let Event::Usage { usage } = event.expect("generation works") {
                out = usage.output_tokens;
            }
        }
        out
    }))
    .await;
    let all = counts.iter().sum::<u64>() as f64;
    (all / t0.elapsed().as_secs_f64(), all / n as f64)
}

fn llama_server() -> Option<PathBuf> {
    let path = std::env::var_os("KITE_LLAMA_SERVER")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var_os("HOME").unwrap_or_default())
                .join(".cache/kite/llama-server/build/bin/llama-server")
        });
    path.exists().then_some(path)
}

/// llama-server on a free port, stopped when dropped.
struct Server {
    child: Child,
    base: String,
}

impl Server {
    fn start(bin: &Path, model: &Path, n: usize, threads: i32) -> Self {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = Command::new(bin)
            .arg("-m")
            .arg(model)
            .args(["--host", "127.0.0.1", "--port", &port.to_string()])
            .args(["--parallel", &n.to_string()])
            // The same cells per conversation as kite's default context size.
            .args(["-c", &(4096 * n).to_string()])
            .args(["-t", &threads.to_string(), "-tb", &threads.to_string()])
            .args(["--no-webui", "--log-disable"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("llama-server starts");
        let base = format!("http://127.0.0.1:{port}");
        let server = Self { child, base };
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if healthy(&server.base) {
                break server;
            }
            assert!(
                Instant::now() < deadline,
                "llama-server never became healthy"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// `n` chat completions at once, each as kite's: the same system prompt and question,
    /// greedy, no repetition penalty.
    async fn round(&self, n: usize) -> (f64, f64) {
        let http = reqwest::Client::new();
        let body = serde_json::json!({
            "messages": [
                {"role": "system", "content": LocalConfig::default().system_prompt},
                {"role": "user", "content": QUESTION},
            ],
            "max_tokens": MAX_TOKENS,
            "temperature": 0.0,
            "repeat_penalty": 1.0,
            // Each answer reads its prompt, as kite's do: the server would otherwise keep
            // the last prompt's cells and skip reading the same prompt again.
            "cache_prompt": false,
        });
        let t0 = Instant::now();
        let counts = futures_util::future::join_all((0..n).map(|_| async {
            let answer: serde_json::Value = http
                .post(format!("{}/v1/chat/completions", self.base))
                .json(&body)
                .send()
                .await
                .expect("llama-server answers")
                .json()
                .await
                .expect("a JSON answer");
            answer["usage"]["completion_tokens"].as_u64().unwrap_or(0)
        }))
        .await;
        let all = counts.iter().sum::<u64>() as f64;
        (all / t0.elapsed().as_secs_f64(), all / n as f64)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Whether `base` answers `/health` with 200, asked without an async runtime.
fn healthy(base: &str) -> bool {
    use std::io::{Read, Write};
    let addr = base.trim_start_matches("http://");
    let Ok(mut s) = std::net::TcpStream::connect(addr) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
    let ask = format!("GET /health HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    if s.write_all(ask.as_bytes()).is_err() {
        return false;
    }
    let mut head = [0u8; 12];
    s.read_exact(&mut head).is_ok() && head.ends_with(b"200")
}
