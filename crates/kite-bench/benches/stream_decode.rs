//! Decoding recorded Chat Completions streams: kite against async-openai's streaming path
//! (eventsource-stream framing + serde into its chunk type), and a floor: the same `data:`
//! payloads parsed by serde_json into `IgnoredAny`.
//!
//! Run: `cargo bench -p kite-bench`. Throughput is in bytes of SSE body; events/s is
//! printed once.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use std::hint::black_box;
use std::time::Instant;

fn bench(c: &mut Criterion) {
    let corpus = kite_bench::chat_streams("openai");
    let total: usize = corpus.iter().map(|(_, b)| b.len()).sum();
    let payloads = kite_bench::payloads(&corpus);
    kite_bench::check_async_openai_reads(&payloads);

    let mut events = Vec::new();
    let per_pass = kite_bench::kite(&corpus, &mut events);
    let rounds = 200;
    let t = Instant::now();
    for _ in 0..rounds {
        black_box(kite_bench::kite(&corpus, &mut events));
    }
    eprintln!(
        "corpus: {} OpenAI streams, {total} bytes, {} chunks, {per_pass} kite events per pass; kite ≈ {:.0} events/s",
        corpus.len(),
        payloads.len(),
        (per_pass * rounds) as f64 / t.elapsed().as_secs_f64()
    );

    let mut g = c.benchmark_group("chat_stream_decode");
    g.throughput(Throughput::Bytes(total as u64));
    g.bench_function("kite", |b| {
        b.iter(|| kite_bench::kite(black_box(&corpus), &mut events))
    });
    g.bench_function("async-openai", |b| {
        b.iter(|| kite_bench::async_openai(black_box(&corpus)))
    });
    g.bench_function("floor_serde_ignored_any", |b| {
        b.iter(|| kite_bench::floor(black_box(&payloads)))
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
