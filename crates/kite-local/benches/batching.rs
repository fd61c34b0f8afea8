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
mod common;

use common::{Server, Setup, llama_server};
use std::time::{Duration, Instant};

const QUESTION: &str = "Write a short story about a dragon who guards a library in the mountains.";
const MAX_TOKENS: u32 = 128;
const LEVELS: [usize; 4] = [1, 2, 4, 8];
const ROUNDS: usize = 3;

fn main() {
    let Some(Setup { threads, path, rt }) = Setup::new() else {
        return;
    };
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
            rt.block_on(rounds(|| server_round(&running, n)))
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

/// `n` chat completions at once on `server`, each as kite's: the same system prompt and
/// question, greedy, no repetition penalty.
async fn server_round(server: &Server, n: usize) -> (f64, f64) {
    // A connection a request: llama-server may close an idle one just as it is taken again.
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .build()
        .unwrap();
    let body = serde_json::json!({
        "messages": [
            {"role": "system", "content": LocalConfig::default().system_prompt},
            {"role": "user", "content": QUESTION},
        ],
        "max_tokens": MAX_TOKENS,
        "temperature": 0.0,
        "repeat_penalty": 1.0,
        // Both keep what an answer leaves in its cells, and read a prompt met before
        // only as far as it is new (kite's `keep_prefixes`).
        "cache_prompt": true,
    });
    let t0 = Instant::now();
    let counts = futures_util::future::join_all((0..n).map(|_| async {
        let answer: serde_json::Value = http
            .post(format!("{}/v1/chat/completions", server.base))
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
