//! Runs one decoder of the benchmark in a loop, for profilers and instruction counters:
//! `valgrind --tool=callgrind target/release/examples/profile_decode kite 200`.
//!
//! `profile_decode [kite|anthropic|responses|async-openai|floor] [ROUNDS]`: `kite` decodes
//! OpenAI's recorded Chat Completions streams, `anthropic` and `responses` the recorded
//! Messages and Responses streams.

use kite_wire::{anthropic::AnthropicStreamDecoder, openai_responses::ResponsesStreamDecoder};

fn main() {
    let mut args = std::env::args().skip(1);
    let mode = args.next().unwrap_or_else(|| "kite".into());
    let rounds: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(20_000);
    let corpus = match mode.as_str() {
        "anthropic" => kite_bench::streams("anthropic", "messages"),
        "responses" => kite_bench::streams("openai", "responses"),
        _ => kite_bench::chat_streams("openai"),
    };
    let payloads = kite_bench::payloads(&corpus);
    let mut events = Vec::new();
    let mut n = 0;
    for _ in 0..rounds {
        n += match mode.as_str() {
            "kite" => kite_bench::kite(&corpus, &mut events),
            "anthropic" => kite_bench::kite_with(&corpus, &mut events, AnthropicStreamDecoder::new),
            "responses" => kite_bench::kite_with(&corpus, &mut events, ResponsesStreamDecoder::new),
            "async-openai" => kite_bench::async_openai(&corpus),
            _ => kite_bench::floor(&payloads),
        };
    }
    println!("{n}");
}
