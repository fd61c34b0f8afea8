//! Every recorded transcription: what the service meant, streamed answers split anywhere.

mod fixtures;

use fixtures::root;
use kite_core::{Error, Segment, Transcript, TranscriptEvent};
use kite_wire::audio::{TranscriptStream, decode_response};

fn read(case: &str, file: &str) -> Vec<u8> {
    std::fs::read(root().join(case).join(file)).unwrap()
}

const SAID: &str = "Ruby is a programming language designed for developer happiness.";

fn stream(chunks: &[&[u8]]) -> Result<Vec<TranscriptEvent>, Error> {
    let mut dec = TranscriptStream::new();
    let mut out = Vec::new();
    for c in chunks {
        dec.decode(c, &mut out)?;
    }
    dec.finish(&mut out)?;
    Ok(out)
}

fn done(events: &[TranscriptEvent]) -> &Transcript {
    match events.last() {
        Some(TranscriptEvent::Done(t)) => t,
        other => panic!("no final transcript: {other:?}"),
    }
}

#[test]
fn whole_answers_mean_what_the_service_said() {
    let whisper = decode_response(
        &read("openai/audio-transcriptions/whisper-json", "response.json"),
        false,
    )
    .unwrap();
    assert_eq!(whisper.text, SAID);
    assert_eq!(whisper.audio_seconds, Some(4.0));
    assert_eq!(whisper.usage.total_tokens, 0);

    let diarized = decode_response(
        &read("openai/audio-transcriptions/diarize-json", "response.json"),
        false,
    )
    .unwrap();
    assert_eq!(diarized.text, SAID);
    assert_eq!(diarized.duration, Some(3.7));
    assert_eq!(
        diarized.segments,
        [Segment {
            id: Some("seg_0".into()),
            start: 0.0,
            end: 3.1499999999999995,
            text: format!(" {SAID}"),
            speaker: Some("A".into()),
        }]
    );
    assert_eq!(
        (
            diarized.usage.input_tokens,
            diarized.usage.output_tokens,
            diarized.usage.total_tokens
        ),
        (37, 144, 181)
    );

    let mistral = decode_response(
        &read("mistral/audio-transcriptions/voxtral-json", "response.json"),
        false,
    )
    .unwrap();
    assert_eq!(mistral.text, SAID);
    assert_eq!(mistral.language, None);
    assert_eq!(mistral.audio_seconds, Some(3.0));
    assert_eq!(
        (
            mistral.usage.input_tokens,
            mistral.usage.output_tokens,
            mistral.usage.total_tokens
        ),
        (3, 11, 389)
    );

    let openrouter = decode_response(
        &read(
            "openrouter/audio-transcriptions/gpt-4o-mini-transcribe-json",
            "response.json",
        ),
        false,
    )
    .unwrap();
    assert_eq!(openrouter.text, SAID);
    assert_eq!(openrouter.usage.total_tokens, 49);
    assert_eq!(openrouter.usage.cost, Some(0.00010625));
}

#[test]
fn text_answers_and_errors() {
    let t = decode_response(format!("{SAID}\n").as_bytes(), true).unwrap();
    assert_eq!(t.text, SAID);
    let err = decode_response(
        br#"{"error":{"message":"Invalid file format.","type":"invalid_request_error","param":"file","code":null}}"#,
        false,
    )
    .unwrap_err();
    assert_eq!(err.api().unwrap().param.as_deref(), Some("file"));
    assert!(matches!(
        decode_response(b"<html>", false),
        Err(Error::Decode(_))
    ));
    assert!(matches!(
        decode_response(b"{\"x\":1}", false),
        Err(Error::Decode(_))
    ));
}

#[test]
fn streamed_transcripts_split_anywhere_give_the_same_events() {
    for case in ["gpt-4o-transcribe-stream", "diarize-stream"] {
        let sse = read(
            &format!("openai/audio-transcriptions/{case}"),
            "response.sse",
        );
        let whole = stream(&[&sse]).unwrap();
        let t = done(&whole);
        assert_eq!(t.text, SAID, "{case}");
        assert!(t.usage.total_tokens > 0, "{case}");
        for at in 0..sse.len() {
            assert_eq!(
                stream(&[&sse[..at], &sse[at..]]).unwrap(),
                whole,
                "{case} split at {at}"
            );
        }
        let bytes: Vec<&[u8]> = sse.chunks(1).collect();
        assert_eq!(stream(&bytes).unwrap(), whole, "{case} byte by byte");
    }
    let deltas = stream(&[&read(
        "openai/audio-transcriptions/gpt-4o-transcribe-stream",
        "response.sse",
    )])
    .unwrap();
    let text: String = deltas
        .iter()
        .filter_map(|e| match e {
            TranscriptEvent::TextDelta { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(text, SAID);
    assert_eq!(done(&deltas).usage.output_tokens, 12);

    let diarized = stream(&[&read(
        "openai/audio-transcriptions/diarize-stream",
        "response.sse",
    )])
    .unwrap();
    assert!(
        matches!(&diarized[0], TranscriptEvent::Segment(s) if s.speaker.as_deref() == Some("A") && s.end == 3.25)
    );
    assert_eq!(done(&diarized).segments.len(), 1);
}

#[test]
fn a_cut_or_broken_stream_is_a_typed_error() {
    let sse = read(
        "openai/audio-transcriptions/gpt-4o-transcribe-stream",
        "response.sse",
    );
    // Cut after a whole event, or inside one (which is discarded): the stream ended early.
    let end_of_event = sse.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
    for cut in [end_of_event, end_of_event + 20] {
        assert!(matches!(
            stream(&[&sse[..cut]]),
            Err(Error::Transport(t)) if t.kind == kite_core::TransportErrorKind::ConnectionClosed
        ));
    }
    assert!(matches!(
        stream(&[b"data: {not json\n\n"]),
        Err(Error::Decode(_))
    ));
    let err = stream(&[b"data: {\"type\":\"error\",\"error\":{\"message\":\"boom\",\"type\":\"server_error\"}}\n\n"]).unwrap_err();
    assert!(err.api().is_some(), "{err:?}");
}

#[test]
fn verbose_json_keeps_language_segments_and_words() {
    // The shape OpenAI documents for `response_format=verbose_json` with word timestamps.
    let body = br#"{"task":"transcribe","language":"english","duration":3.7,
        "text":"Ruby is a programming language designed for developer happiness.",
        "segments":[{"id":0,"seek":0,"start":0.0,"end":3.32,"text":" Ruby is a programming language",
                     "tokens":[50364,13040],"temperature":0.0,"avg_logprob":-0.2,"compression_ratio":0.9,"no_speech_prob":0.01},
                    {"id":1,"seek":0,"start":3.32,"end":3.7,"text":" designed for developer happiness.","tokens":[],"temperature":0.0}],
        "words":[{"word":"Ruby","start":0.0,"end":0.4},{"word":"is","start":0.4,"end":0.52}],
        "usage":{"type":"duration","seconds":4}}"#;
    let t = decode_response(body, false).unwrap();
    assert_eq!(t.text, SAID);
    assert_eq!(t.language.as_deref(), Some("english"));
    assert_eq!(t.duration, Some(3.7));
    let ids: Vec<_> = t.segments.iter().map(|s| s.id.clone().unwrap()).collect();
    assert_eq!(ids, ["0", "1"]);
    assert_eq!(t.segments[1].start, 3.32);
    assert_eq!((t.words[1].word.as_str(), t.words[1].end), ("is", 0.52));
    assert_eq!(t.audio_seconds, Some(4.0));
}
