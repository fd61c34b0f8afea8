//! The corpus and the competing decoders of kite's stream-decoding benchmark, shared by
//! `benches/stream_decode.rs` and the `profile_decode` example (for profilers and
//! instruction counters, which are steadier than wall time on a shared machine).

use async_openai::types::chat::CreateChatCompletionStreamResponse;
use futures::StreamExt;
use kite_core::Event;
use kite_wire::StreamDecoder;
use kite_wire::openai_chat::ChatStreamDecoder;
use serde::de::IgnoredAny;
use std::hint::black_box;
use std::path::{Path, PathBuf};

/// Recorded SSE bodies with their paths.
pub type Corpus = Vec<(String, Vec<u8>)>;

/// The recorded SSE bodies of `provider`'s chat completions streams.
pub fn chat_streams(provider: &str) -> Corpus {
    streams(provider, "chat-completions")
}

/// The recorded SSE bodies of `provider`'s `api` (`chat-completions`, `messages`,
/// `responses`).
pub fn streams(provider: &str, api: &str) -> Corpus {
    let dir: PathBuf = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../testdata/wire")
        .join(provider)
        .join(api);
    let mut out = Vec::new();
    for entry in std::fs::read_dir(&dir).expect("testdata present") {
        let path = entry.expect("readable").path().join("response.sse");
        if let Ok(body) = std::fs::read(&path) {
            out.push((path.display().to_string(), body));
        }
    }
    out.sort();
    out
}

/// The JSON `data:` payloads of the corpus (without `[DONE]`), framed by kite's SSE decoder.
pub fn payloads(corpus: &Corpus) -> Vec<String> {
    let mut out = Vec::new();
    for (_, body) in corpus {
        let mut sse = kite_wire::sse::SseDecoder::new();
        sse.feed(body);
        sse.end();
        while let Some(f) = sse.next_frame() {
            if f.data != b"[DONE]" {
                out.push(f.text().into_owned());
            }
        }
    }
    out
}

/// kite: every stream through [`ChatStreamDecoder`]; returns the number of events.
pub fn kite(corpus: &Corpus, out: &mut Vec<Event>) -> usize {
    kite_with(corpus, out, ChatStreamDecoder::new)
}

/// Every stream through a fresh decoder from `new`; returns the number of events.
pub fn kite_with<D: StreamDecoder>(
    corpus: &Corpus,
    out: &mut Vec<Event>,
    new: impl Fn() -> D,
) -> usize {
    let mut n = 0;
    for (_, body) in corpus {
        out.clear();
        let mut dec = new();
        let _ = dec.decode(body, out);
        let _ = dec.finish(out);
        n += out.len();
    }
    n
}

/// async-openai's streaming path: eventsource-stream framing, then serde into its chunk
/// type; returns the number of choices read.
pub fn async_openai(corpus: &Corpus) -> usize {
    use eventsource_stream::Eventsource;
    let mut n = 0;
    for (_, body) in corpus {
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

/// The floor: each payload parsed by serde_json into `IgnoredAny`.
pub fn floor(payloads: &[String]) -> usize {
    payloads
        .iter()
        .filter(|p| serde_json::from_str::<IgnoredAny>(p).is_ok())
        .count()
}

/// Panics unless async-openai understands every payload, so the comparison is fair.
pub fn check_async_openai_reads(payloads: &[String]) {
    for p in payloads {
        serde_json::from_str::<CreateChatCompletionStreamResponse>(p)
            .unwrap_or_else(|e| panic!("async-openai cannot read {p}: {e}"));
    }
}
