//! Runs one decoder of the benchmark in a loop, for profilers and instruction counters:
//! `valgrind --tool=callgrind target/release/examples/profile_decode kite 200`.
//!
//! `profile_decode [kite|async-openai|floor] [ROUNDS]`

fn main() {
    let mut args = std::env::args().skip(1);
    let mode = args.next().unwrap_or_else(|| "kite".into());
    let rounds: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(20_000);
    let corpus = kite_bench::chat_streams("openai");
    let payloads = kite_bench::payloads(&corpus);
    let mut events = Vec::new();
    let mut n = 0;
    for _ in 0..rounds {
        n += match mode.as_str() {
            "kite" => kite_bench::kite(&corpus, &mut events),
            "async-openai" => kite_bench::async_openai(&corpus),
            _ => kite_bench::floor(&payloads),
        };
    }
    println!("{n}");
}
