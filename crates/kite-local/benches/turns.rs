//! A chat's later turns: the time to the first token of the answer at turns 1, 10 and 30
//! of one conversation, on kite with and without `keep_prefixes`, beside llama.cpp's own
//! `llama-server` with `cache_prompt` on the same GGUF file and threads, when it is there
//! (see `benches/common`). Each turn's prompt is the whole conversation so far and a new
//! question; answers are greedy, at most 48 tokens, and go into the history as each side
//! gave them. It also says whether kite's answers were the same, turn for turn, with its
//! prefixes kept and without.
//!
//! `cargo bench -p kite-local --bench turns`. Threads: `KITE_BENCH_THREADS` (default 1).
//! Each figure is the median of 3 conversations (`KITE_BENCH_ROUNDS`).

mod common;

use common::{Server, Setup, llama_server};
use futures_util::StreamExt;
use kite_core::{Event, Message, Model, Request};
use kite_local::{LocalConfig, LocalModel};
use std::time::{Duration, Instant};

const TURNS: usize = 30;
const SHOWN: [usize; 3] = [1, 10, 30];
const MAX_TOKENS: u32 = 48;
/// Conversations a figure is the median of (`KITE_BENCH_ROUNDS`, default 3).
fn rounds() -> usize {
    std::env::var("KITE_BENCH_ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .filter(|r| *r > 0)
        .unwrap_or(3)
}
const QUESTIONS: [&str; 10] = [
    "What is the capital of France?",
    "Name a famous building there.",
    "When was it built?",
    "Who designed it?",
    "What is it made of?",
    "How tall is it?",
    "Name another city in France.",
    "What river runs through it?",
    "Name a dish from that region.",
    "Summarize what we talked about.",
];

fn main() {
    let Some(Setup { threads, path, rt }) = Setup::new() else {
        return;
    };
    let kite = |keep_prefixes| {
        let config = LocalConfig {
            threads,
            threads_batch: threads,
            repeat_penalty: 1.0,
            parallel: 1,
            keep_prefixes,
            ..LocalConfig::default()
        };
        let model = LocalModel::load(&path, config).expect("model loads");
        let chats: Vec<Chat> = (0..rounds())
            .map(|_| rt.block_on(kite_chat(&model)))
            .collect();
        chats
    };
    let kept = kite(true);
    let whole = kite(false);
    let differ = (0..TURNS).find(|t| kept[0].answers[*t] != whole[0].answers[*t]);
    let server = llama_server().map(|bin| {
        let running = Server::start(&bin, &path, 1, threads);
        (0..rounds())
            .map(|_| rt.block_on(server_chat(&running)))
            .collect::<Vec<_>>()
    });
    if server.is_none() {
        eprintln!("llama-server not found: its column is left out (scripts/llama-server.sh)");
    }
    println!(
        "threads={threads}  greedy, {MAX_TOKENS} tokens at most an answer; medians of {}\n",
        rounds()
    );
    println!(
        "| turn | prompt tokens (kite) | kite, prefixes kept | kite, read whole | llama-server, cache_prompt |"
    );
    println!("|---|---|---|---|---|");
    for turn in SHOWN {
        let ms = |chats: &[Chat]| format!("{:.0} ms", median(chats, turn) * 1000.0);
        let theirs = server.as_deref().map_or("–".into(), ms);
        println!(
            "| {turn} | {} | {} | {} | {theirs} |",
            kept[0].prompts[turn - 1],
            ms(&kept),
            ms(&whole)
        );
    }
    match differ {
        None => println!("\nkite's answers with prefixes kept and without: the same at every turn"),
        Some(t) => println!(
            "\nkite's answers with prefixes kept and without first differ at turn {}:\n  kept:  {:?}\n  whole: {:?}",
            t + 1,
            kept[0].answers[t],
            whole[0].answers[t]
        ),
    }
    kite_local::wait_for_workers(Duration::from_secs(5));
}

/// One conversation: each turn's time to its first token, prompt tokens, and answer.
#[derive(Default)]
struct Chat {
    ttft: Vec<f64>,
    prompts: Vec<u64>,
    answers: Vec<String>,
}

fn median(chats: &[Chat], turn: usize) -> f64 {
    let mut t: Vec<f64> = chats.iter().map(|c| c.ttft[turn - 1]).collect();
    t.sort_by(f64::total_cmp);
    t[t.len() / 2]
}

async fn kite_chat(model: &LocalModel) -> Chat {
    let mut chat = Chat::default();
    let mut history = Vec::new();
    for turn in 0..TURNS {
        history.push(Message::user(QUESTIONS[turn % QUESTIONS.len()]));
        let mut request = Request::new("local");
        request.messages = history.clone();
        request.max_tokens = Some(MAX_TOKENS);
        let t0 = Instant::now();
        let mut stream = model.stream(&request);
        let (mut text, mut first, mut prompt) = (String::new(), None, 0);
        while let Some(event) = stream.next().await {
            match event.expect("generation works") {
                Event::TextDelta { text: t, .. } => {
                    first.get_or_insert_with(|| t0.elapsed().as_secs_f64());
                    text.push_str(&t);
                }
                Event::Usage { usage } => prompt = usage.input_tokens,
                _ => {}
            }
        }
        chat.ttft
            .push(first.unwrap_or_else(|| t0.elapsed().as_secs_f64()));
        chat.prompts.push(prompt);
        history.push(Message::assistant(text.clone()));
        chat.answers.push(text);
    }
    chat
}

async fn server_chat(server: &Server) -> Chat {
    // A connection a request: llama-server may close an idle one just as it is taken again.
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .build()
        .unwrap();
    let mut chat = Chat::default();
    let mut messages = vec![serde_json::json!({
        "role": "system", "content": LocalConfig::default().system_prompt
    })];
    for turn in 0..TURNS {
        messages.push(serde_json::json!({
            "role": "user", "content": QUESTIONS[turn % QUESTIONS.len()]
        }));
        let body = serde_json::json!({
            "messages": messages,
            "max_tokens": MAX_TOKENS,
            "temperature": 0.0,
            "repeat_penalty": 1.0,
            "cache_prompt": true,
            "stream": true,
        });
        let t0 = Instant::now();
        let mut answer = http
            .post(format!("{}/v1/chat/completions", server.base))
            .json(&body)
            .send()
            .await
            .unwrap_or_else(|e| panic!("llama-server answers ({}): {e}", common::LOG));
        let (mut text, mut first, mut rest) = (String::new(), None, String::new());
        while let Some(bytes) = answer.chunk().await.expect("a streamed answer") {
            rest.push_str(&String::from_utf8_lossy(&bytes));
            while let Some(end) = rest.find('\n') {
                let line: String = rest.drain(..=end).collect();
                let Some(data) = line.trim().strip_prefix("data: ") else {
                    continue;
                };
                let Ok(v) = serde_json::from_str::<serde_json::Value>(data) else {
                    continue;
                };
                if let Some(t) = v["choices"][0]["delta"]["content"].as_str()
                    && !t.is_empty()
                {
                    first.get_or_insert_with(|| t0.elapsed().as_secs_f64());
                    text.push_str(t);
                }
            }
        }
        chat.ttft
            .push(first.unwrap_or_else(|| t0.elapsed().as_secs_f64()));
        chat.prompts.push(0);
        messages.push(serde_json::json!({"role": "assistant", "content": text}));
        chat.answers.push(text);
    }
    chat
}
