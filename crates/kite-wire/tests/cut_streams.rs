//! Every recorded stream, cut off in the middle of an event: the decoder keeps what came
//! before, discards the partial event, and reports a closed connection, never a decode
//! error about half an event.

use kite_core::{Error, Event, TransportErrorKind};
use kite_wire::anthropic::Messages;
use kite_wire::openai_chat::ChatCompletions;
use kite_wire::openai_responses::Responses;
use kite_wire::{Codec, StreamDecoder};
use std::path::{Path, PathBuf};

fn streams(api: &str) -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/wire");
    let mut out = Vec::new();
    for provider in std::fs::read_dir(&root).unwrap().flatten() {
        let Ok(cases) = std::fs::read_dir(provider.path().join(api)) else {
            continue;
        };
        for case in cases.flatten() {
            let sse = case.path().join("response.sse");
            if sse.exists() {
                out.push(sse);
            }
        }
    }
    out.sort();
    out
}

/// Where the middle of the `n`th event of `body` is, if at least two more follow it (so
/// the answer is not complete before the cut).
fn middle_of_event(body: &[u8], n: usize) -> Option<usize> {
    let mut starts = vec![0];
    let mut i = 0;
    while i + 1 < body.len() {
        if body[i] == b'\n' && body[i + 1] == b'\n' {
            starts.push(i + 2);
            i += 2;
        } else if body[i..].starts_with(b"\r\n\r\n") {
            starts.push(i + 4);
            i += 4;
        } else {
            i += 1;
        }
    }
    starts.get(n + 3)?;
    let (from, to) = (starts[n], starts[n + 1]);
    (to - from > 8).then_some(from + (to - from) / 2)
}

fn decode(codec: &dyn Codec, body: &[u8]) -> (Vec<Event>, Result<(), Error>) {
    let mut d = codec.stream_decoder();
    let mut out = Vec::new();
    let r = d.decode(body, &mut out).and_then(|()| d.finish(&mut out));
    (out, r)
}

#[test]
fn a_stream_cut_inside_an_event_is_a_closed_connection() {
    let codecs: [(&str, Box<dyn Codec>); 3] = [
        ("chat-completions", Box::new(ChatCompletions::default())),
        ("messages", Box::new(Messages::default())),
        ("responses", Box::new(Responses::default())),
    ];
    let mut checked = 0;
    for (api, codec) in codecs {
        for path in streams(api) {
            let body = std::fs::read(&path).unwrap();
            let Some(cut) = middle_of_event(&body, 1) else {
                continue;
            };
            let (whole, r) = decode(&*codec, &body);
            if r.is_err() {
                continue; // A recorded error stream: nothing to cut.
            }
            let (events, r) = decode(&*codec, &body[..cut]);
            match r {
                Err(Error::Transport(t)) => {
                    assert_eq!(t.kind, TransportErrorKind::ConnectionClosed, "{path:?}")
                }
                other => panic!("{}: {other:?}", path.display()),
            }
            // What came before the cut is kept, and agrees with the whole stream.
            assert_eq!(events[..], whole[..events.len()], "{}", path.display());
            checked += 1;
        }
    }
    assert!(checked >= 20, "only {checked} streams were cut");
}
