//! The stream decoders, structure-aware: a recorded stream is cut into pieces, truncated
//! or mutated, and decoded. Whatever the bytes, nothing panics, and cutting them anywhere
//! gives the same events and the same error as decoding them whole.
#![no_main]

#[path = "common.rs"]
mod common;

use kite::Error;
use kite::wire::StreamDecoder;
use kite::wire::anthropic::AnthropicStreamDecoder;
use kite::wire::audio::TranscriptStream;
use kite::wire::openai_chat::ChatStreamDecoder;
use kite::wire::openai_responses::ResponsesStreamDecoder;
use libfuzzer_sys::arbitrary::{self, Arbitrary};
use libfuzzer_sys::fuzz_target;
use std::path::Path;
use std::sync::OnceLock;

#[derive(Clone, Copy, Debug)]
enum Api {
    Chat,
    Anthropic,
    Responses,
    Audio,
}

/// Every recorded stream, with the API that speaks it.
fn seeds() -> &'static [(Api, Vec<u8>)] {
    static SEEDS: OnceLock<Vec<(Api, Vec<u8>)>> = OnceLock::new();
    SEEDS.get_or_init(|| {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../testdata/wire");
        let mut out = Vec::new();
        collect(&root, &mut out);
        out.sort_by(|a, b| a.1.cmp(&b.1));
        out
    })
}

fn collect(dir: &Path, out: &mut Vec<(Api, Vec<u8>)>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            collect(&p, out);
        } else if p.extension().is_some_and(|x| x == "sse") {
            let s = p.to_string_lossy();
            let api = if s.contains("/anthropic/") {
                Api::Anthropic
            } else if s.contains("/responses/") {
                Api::Responses
            } else if s.contains("audio-transcriptions") {
                Api::Audio
            } else {
                Api::Chat
            };
            if let Ok(bytes) = std::fs::read(&p) {
                out.push((api, bytes));
            }
        }
    }
}

#[derive(Debug, Arbitrary)]
enum Mutation {
    None,
    Truncate(u16),
    Flip(Vec<(u16, u8)>),
    Insert(u16, Vec<u8>),
    Remove(u16, u16),
    /// Not a recorded stream at all: these bytes, for the API the seed names.
    Raw(Vec<u8>),
}

#[derive(Debug, Arbitrary)]
struct Input {
    seed: u16,
    mutation: Mutation,
    cuts: Vec<u16>,
}

fn mutate(seed: &[u8], m: Mutation) -> Vec<u8> {
    let mut b = seed.to_vec();
    let at = |i: u16, len: usize| usize::from(i) % (len + 1);
    match m {
        Mutation::None => {}
        Mutation::Truncate(n) => b.truncate(at(n, b.len())),
        Mutation::Flip(edits) => {
            for (i, x) in edits {
                if !b.is_empty() {
                    let i = usize::from(i) % b.len();
                    b[i] ^= x;
                }
            }
        }
        Mutation::Insert(i, bytes) => {
            let i = at(i, b.len());
            b.splice(i..i, bytes);
        }
        Mutation::Remove(i, n) => {
            let i = at(i, b.len());
            let end = (i + usize::from(n)).min(b.len());
            b.drain(i..end);
        }
        Mutation::Raw(bytes) => b = bytes,
    }
    b
}

/// What decoding `pieces` gives, as text: the events and the error, if any. `step` is
/// given each piece, then `None` for the end of the stream.
fn feed<E: std::fmt::Debug>(
    pieces: &[&[u8]],
    mut step: impl FnMut(Option<&[u8]>, &mut Vec<E>) -> Result<(), Error>,
) -> String {
    let mut out = Vec::new();
    let mut end = pieces.iter().try_for_each(|p| step(Some(p), &mut out));
    if end.is_ok() {
        end = step(None, &mut out);
    }
    format!("{out:?} {:?}", end.map_err(|e| e.to_string()))
}

fn stream(mut d: impl StreamDecoder, pieces: &[&[u8]]) -> String {
    feed(pieces, |piece, out| match piece {
        Some(b) => d.decode(b, out),
        None => d.finish(out),
    })
}

fn run(api: Api, pieces: &[&[u8]]) -> String {
    match api {
        Api::Chat => stream(ChatStreamDecoder::new(), pieces),
        Api::Anthropic => stream(AnthropicStreamDecoder::new(), pieces),
        Api::Responses => stream(ResponsesStreamDecoder::new(), pieces),
        Api::Audio => {
            let mut d = TranscriptStream::new();
            feed(pieces, |piece, out| {
                piece.map_or(Ok(()), |b| d.decode(b, out))
            })
        }
    }
}

fuzz_target!(|input: Input| {
    let seeds = seeds();
    assert!(!seeds.is_empty(), "no recorded streams under testdata/wire");
    let (api, seed) = &seeds[usize::from(input.seed) % seeds.len()];
    let bytes = mutate(seed, input.mutation);
    let whole = run(*api, &[&bytes]);
    let cut = run(*api, &common::pieces(&bytes, &input.cuts));
    assert_eq!(
        whole, cut,
        "{api:?}: cutting the stream changed what it decodes to"
    );
});
