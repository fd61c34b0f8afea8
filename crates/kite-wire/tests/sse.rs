//! SSE framing: what real providers send (comments, every line ending, a BOM, data split
//! anywhere), what the end of a stream does to an event cut off, and the bound on one event.

use kite_wire::StreamDecoder;
use kite_wire::openai_chat::ChatStreamDecoder;
use kite_wire::sse::{MAX_EVENT, SseDecoder};

fn frames(chunks: &[&[u8]]) -> Vec<(String, String, Option<String>, Option<u64>)> {
    let mut d = SseDecoder::new();
    let mut out = Vec::new();
    let mut take = |d: &mut SseDecoder| {
        while let Some(f) = d.next_frame() {
            out.push((
                f.event.to_owned(),
                f.text().into_owned(),
                f.id.map(str::to_owned),
                f.retry,
            ));
        }
    };
    for c in chunks {
        d.feed(c);
        take(&mut d);
    }
    d.end();
    take(&mut d);
    out
}

#[test]
fn every_line_ending_is_accepted() {
    for body in [
        &b"data: a\n\ndata: b\n\n"[..],
        b"data: a\r\n\r\ndata: b\r\n\r\n",
        b"data: a\r\rdata: b\r\r",
        b"data: a\r\n\rdata: b\n\r\n",
    ] {
        let got: Vec<String> = frames(&[body]).into_iter().map(|f| f.1).collect();
        assert_eq!(got, ["a", "b"], "{body:?}");
    }
}

#[test]
fn a_crlf_split_between_reads_is_one_line_end() {
    let got = frames(&[b"data: a\r", b"\ndata: b\r", b"\n\r", b"\n"]);
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].1, "a\nb");
}

#[test]
fn comments_fields_ids_and_retry() {
    let got = frames(&[b"\xEF\xBB\xBF: OPENROUTER PROCESSING\n\nid: 7\nretry: 1500\nevent: error\ndata:{\"x\":1}   \nunknown: y\ndata\n\n"]);
    assert_eq!(
        got,
        [(
            "error".into(),
            "{\"x\":1}   \n".into(),
            Some("7".into()),
            Some(1500)
        )]
    );
}

#[test]
fn an_event_cut_off_by_the_end_is_discarded_and_empty_events_are_dropped() {
    let got = frames(&[b"event: ping\n\ndata: x\n\ndata: tail"]);
    assert_eq!(got, [(String::new(), "x".into(), None, None)]);
    let got = frames(&[b"data: whole line, no blank line\n"]);
    assert_eq!(got, []);
}

#[test]
fn what_a_stream_held_is_counted() {
    let mut d = SseDecoder::new();
    d.feed(b": keep-alive\n\n: again\n\n");
    assert!(d.next_frame().is_none());
    d.end();
    let seen = d.seen();
    assert_eq!(
        (seen.lines, seen.comments, seen.fields, seen.frames),
        (2, 2, 0, 0)
    );
    assert!(!seen.cut);

    let mut d = SseDecoder::new();
    d.feed(b"data: {\"a\":1}\n\ndata: {\"b\"");
    assert!(d.next_frame().is_some());
    assert!(d.next_frame().is_none());
    d.end();
    assert!(d.next_frame().is_none());
    assert!(d.seen().cut);
}

#[test]
fn a_bom_split_across_reads_is_skipped() {
    let got = frames(&[b"\xEF", b"\xBB\xBFdata: x\n\n"]);
    assert_eq!(got[0].1, "x");
}

#[test]
fn an_event_with_no_end_is_refused_once_it_passes_the_bound() {
    let mut d = ChatStreamDecoder::new();
    let mut out = Vec::new();
    let piece = vec![b'x'; 1 << 20];
    d.decode(b"data: ", &mut out).unwrap();
    let mut fed = 0;
    let err = loop {
        match d.decode(&piece, &mut out) {
            Ok(()) => fed += piece.len(),
            Err(e) => break e,
        }
        assert!(fed <= MAX_EVENT, "still reading past the bound");
    };
    assert!(err.to_string().contains("an event larger than"), "{err}");
}
