//! Prompt and generation speed of kite-local, to set beside llama.cpp's own `llama-bench`
//! on the same file and thread count (`scripts/llama-bench.sh` builds and runs it).
//!
//! `cargo bench -p kite-local --bench throughput` (threads: `KITE_BENCH_THREADS`, default 1).
//! Prompt speed is the prompt's tokens over the time to the `Start` event, which is sent once
//! the prompt is read; generation speed is the tokens generated after it over the time to
//! the last event. Each figure is the median of 5 runs after a warm-up.

use futures_util::StreamExt;
use kite_core::{Event, Message, Model, Request};
use kite_local::{LocalConfig, LocalModel};
use std::time::Instant;

const PROMPT: &str = "Write a long story about a dragon who guards a library in the mountains. \
The dragon loves books about the sea, maps of far islands, and the songs of sailors. One winter \
a young cartographer climbs the mountain to ask for a map that nobody has seen for a hundred \
years. Tell the story in detail, with the dragon's voice and the cartographer's fears.";

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
    let config = LocalConfig {
        threads,
        threads_batch: threads,
        repeat_penalty: 1.0,
        ..LocalConfig::default()
    };
    let model = LocalModel::load(&path, config).expect("model loads");
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let mut request = Request::new("local").message(Message::user(PROMPT));
    request.max_tokens = Some(128);

    let mut prompt_rates = Vec::new();
    let mut gen_rates = Vec::new();
    let mut sizes = (0, 0);
    for run in 0..6 {
        let (pp, tg, n_prompt, n_gen) = rt.block_on(measure(&model, &request));
        if run > 0 {
            prompt_rates.push(pp);
            gen_rates.push(tg);
            sizes = (n_prompt, n_gen);
        }
    }
    println!(
        "kite-local  threads={threads}  prompt {} tokens: {:.1} tok/s   generation {} tokens: {:.1} tok/s   (medians of 5)",
        sizes.0,
        median(&mut prompt_rates),
        sizes.1,
        median(&mut gen_rates)
    );
}

async fn measure(model: &LocalModel, request: &Request) -> (f64, f64, u64, u64) {
    let t0 = Instant::now();
    let mut stream = model.stream(request);
    let mut started = None;
    let mut usage = None;
    while let Some(event) = stream.next().await {
        match event.expect("generation works") {
            Event::Start { .. } => started = Some(Instant::now()),
            Event::Usage { usage: u } => usage = Some(u),
            _ => {}
        }
    }
    let end = Instant::now();
    let started = started.expect("a start event");
    let usage = usage.expect("usage");
    let pp = usage.input_tokens as f64 / (started - t0).as_secs_f64();
    let tg = usage.output_tokens as f64 / (end - started).as_secs_f64();
    (pp, tg, usage.input_tokens, usage.output_tokens)
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}
