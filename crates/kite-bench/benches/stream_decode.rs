//! Decoding recorded Chat Completions streams: kite against async-openai's streaming path
//! (eventsource-stream framing + serde into its chunk type), and a floor: the same `data:`
//! payloads parsed by serde_json into `IgnoredAny`.
//!
//! Run: `cargo bench -p kite-bench`. Throughput is in bytes of SSE body; events/s is
//! printed once per corpus.

use async_openai::types::chat::CreateChatCompletionStreamResponse;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use futures::StreamExt;
use kite_core::Event;
use kite_wire::StreamDecoder;
use kite_wire::openai_chat::ChatStreamDecoder;
use serde::de::IgnoredAny;
use std::hint::black_box;
use std::time::Instant;

fn kite_decode(bodies: &[(String, Vec<u8>)], out: &mut Vec<Event>) -> usize {
    let mut n = 0;
    for (_, body) in bodies {
        out.clear();
        let mut dec = ChatStreamDecoder::new();
        let _ = dec.decode(body, out);
        let _ = dec.finish(out);
        n += out.len();
    }
    n
}

fn async_openai_decode(bodies: &[(String, Vec<u8>)]) -> usize {
    use eventsource_stream::Eventsource;
    let mut n = 0;
    for (_, body) in bodies {
        let bytes = bytes::Bytes::copy_from_slice(body);
        let stream = futures::stream::iter([Ok::<_, std::io::Error>(bytes)]).eventsource();
        futures::executor::block_on(async {
            futures::pin_mut!(stream);
            while let Some(Ok(ev)) = stream.next().await {
                if ev.data == "[DONE]" {
                    break;
                }
                if let Ok(chunk) =
                    serde_json::from_str::<CreateChatCompletionStreamResponse>(&ev.data)
                {
                    n += chunk.choices.len();
                    black_box(chunk);
                }
            }
        });
    }
    n
}

fn floor(payloads: &[String]) -> usize {
    let mut n = 0;
    for p in payloads {
        if serde_json::from_str::<IgnoredAny>(p).is_ok() {
            n += 1;
        }
    }
    n
}

fn bench(c: &mut Criterion) {
    let bodies = kite_bench::chat_streams("openai");
    let total: usize = bodies.iter().map(|(_, b)| b.len()).sum();
    let payloads: Vec<String> = bodies
        .iter()
        .flat_map(|(_, b)| kite_bench::payloads(b))
        .filter(|p| p != "[DONE]")
        .collect();

    // async-openai must understand the same streams for the comparison to be fair.
    let mut parsed = 0;
    for (name, body) in &bodies {
        for p in kite_bench::payloads(body) {
            if p != "[DONE]" {
                serde_json::from_str::<CreateChatCompletionStreamResponse>(&p)
                    .unwrap_or_else(|e| panic!("async-openai cannot read {name}: {e}"));
                parsed += 1;
            }
        }
    }
    let mut events = Vec::new();
    let n_events = kite_decode(&bodies, &mut events);
    let t = Instant::now();
    let rounds = 200;
    for _ in 0..rounds {
        black_box(kite_decode(&bodies, &mut events));
    }
    let secs = t.elapsed().as_secs_f64();
    eprintln!(
        "corpus: {} OpenAI streams, {} bytes, {} chunks, {} kite events per pass; kite ≈ {:.0} events/s",
        bodies.len(),
        total,
        parsed,
        n_events,
        (n_events * rounds) as f64 / secs
    );

    let mut g = c.benchmark_group("chat_stream_decode");
    g.throughput(Throughput::Bytes(total as u64));
    g.bench_function("kite", |b| {
        b.iter(|| kite_decode(black_box(&bodies), &mut events))
    });
    g.bench_function("async-openai", |b| {
        b.iter(|| async_openai_decode(black_box(&bodies)))
    });
    g.bench_function("floor_serde_ignored_any", |b| {
        b.iter(|| floor(black_box(&payloads)))
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
