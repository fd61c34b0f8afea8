//! Benchmarks live in `benches/`; this crate holds the shared corpus loader.

use std::path::{Path, PathBuf};

/// The recorded SSE bodies of `provider`'s chat completions streams, with their names.
pub fn chat_streams(provider: &str) -> Vec<(String, Vec<u8>)> {
    let dir: PathBuf = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../testdata/wire")
        .join(provider)
        .join("chat-completions");
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

/// The `data:` payloads of a stream, framed by kite's SSE decoder.
pub fn payloads(body: &[u8]) -> Vec<String> {
    let mut sse = kite_wire::sse::SseDecoder::new();
    sse.feed(body);
    sse.end();
    let mut out = Vec::new();
    while let Some(f) = sse.next_frame() {
        out.push(f.text().into_owned());
    }
    out
}
