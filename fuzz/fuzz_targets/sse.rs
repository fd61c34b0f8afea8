//! The SSE framer: any bytes, cut anywhere, give the same frames as when fed whole.
#![no_main]

#[path = "common.rs"]
mod common;

use kite::wire::sse::SseDecoder;
use libfuzzer_sys::fuzz_target;

#[derive(Debug, PartialEq)]
struct Owned {
    event: String,
    data: Vec<u8>,
    id: Option<String>,
    retry: Option<u64>,
}

fn frames(pieces: &[&[u8]]) -> Vec<Owned> {
    let mut d = SseDecoder::new();
    let mut out = Vec::new();
    let mut take = |d: &mut SseDecoder| {
        while let Some(f) = d.next_frame() {
            out.push(Owned {
                event: f.event.to_owned(),
                data: f.data.to_vec(),
                id: f.id.map(str::to_owned),
                retry: f.retry,
            });
        }
    };
    for p in pieces {
        d.feed(p);
        take(&mut d);
    }
    d.end();
    take(&mut d);
    out
}

fuzz_target!(|input: (Vec<u8>, Vec<u16>)| {
    let (bytes, cuts) = input;
    let whole = frames(&[&bytes]);
    let cut = frames(&common::pieces(&bytes, &cuts));
    assert_eq!(whole, cut, "cutting the stream changed its frames");
});
