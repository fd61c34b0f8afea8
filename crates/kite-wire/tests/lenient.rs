//! What the typed decoders do with what they were not written for: error envelopes of every
//! shape become typed API errors, events and blocks kite has no type for pass through, and
//! a resumed stream is judged by everything it carried.

use kite_core::{ApiErrorKind, Error, Event, TransportErrorKind};
use kite_wire::StreamDecoder;
use kite_wire::anthropic::AnthropicStreamDecoder;
use kite_wire::openai_chat::ChatStreamDecoder;
use kite_wire::openai_responses::{ResponsesStreamDecoder, response_events};

fn run(mut d: impl StreamDecoder, body: &str) -> (Vec<Event>, Result<(), Error>) {
    let mut out = Vec::new();
    let r = d
        .decode(body.as_bytes(), &mut out)
        .and_then(|()| d.finish(&mut out));
    (out, r)
}

fn api(r: Result<(), Error>) -> kite_core::ApiError {
    match r {
        Err(Error::Api(e)) => *e,
        other => panic!("expected an API error, got {other:?}"),
    }
}

#[test]
fn an_anthropic_error_event_with_its_message_at_the_top_is_an_api_error() {
    let (_, r) = run(
        AnthropicStreamDecoder::new(),
        "event: error\ndata: {\"type\":\"error\",\"message\":\"Overloaded\"}\n\n",
    );
    assert!(api(r).message.contains("Overloaded"));
}

#[test]
fn an_anthropic_block_of_a_shape_kite_does_not_read_passes_through() {
    let body = concat!(
        "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\"}}\n\n",
        "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,",
        "\"content_block\":{\"type\":\"future_block\",\"text\":{\"rich\":true},\"name\":7}}\n\n",
        "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,",
        "\"delta\":{\"type\":\"future_delta\",\"text\":[1,2]}}\n\n",
        "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
        "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"}}\n\n",
        "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
    );
    let (events, r) = run(AnthropicStreamDecoder::new(), body);
    r.unwrap();
    let unknown: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            Event::Unknown { kind, .. } => Some(kind.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(unknown.len(), 2, "{events:?}");
}

#[test]
fn a_failed_response_is_an_api_error_whatever_the_shape_of_its_error() {
    for error in [
        r#"{"message":"quota","code":"insufficient_quota"}"#,
        r#"{"message":"upstream","code":502}"#,
        r#""a plain string""#,
    ] {
        let body = format!(
            "event: response.failed\ndata: {{\"type\":\"response.failed\",\"response\":{{\"status\":\"failed\",\"error\":{error}}}}}\n\n"
        );
        let e = api(run(ResponsesStreamDecoder::new(), &body).1);
        assert!(!e.message.is_empty(), "{error}: {e:?}");
    }
    let e = api(run(ResponsesStreamDecoder::new(), &format!(
        "data: {{\"type\":\"response.failed\",\"response\":{{\"status\":\"failed\",\"error\":{}}}}}\n\n",
        r#"{"message":"quota","code":"insufficient_quota"}"#
    )).1);
    assert_eq!(e.kind, ApiErrorKind::QuotaExceeded);
    // A whole body that is an error envelope of any shape.
    for body in [
        r#"{"error":"boom"}"#,
        r#"{"error":{"message":"bad","code":400}}"#,
    ] {
        assert!(
            matches!(response_events(body.as_bytes()), Err(Error::Api(_))),
            "{body}"
        );
    }
}

#[test]
fn a_responses_event_kite_does_not_know_passes_through_whatever_its_delta() {
    let body = concat!(
        "data: {\"type\":\"response.created\",\"response\":{\"id\":\"r\"}}\n\n",
        "data: {\"type\":\"response.future.delta\",\"delta\":{\"a\":[1]}}\n\n",
        "data: {\"type\":\"response.output_text.delta\",\"output_index\":0,\"delta\":\"hi\"}\n\n",
        "data: {\"type\":\"response.completed\",\"response\":{\"status\":\"completed\"}}\n\n",
    );
    let (events, r) = run(ResponsesStreamDecoder::new(), body);
    r.unwrap();
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Event::Unknown { kind, .. } if kind == "response.future.delta"))
    );
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Event::TextDelta { text, .. } if text == "hi"))
    );
}

#[test]
fn a_resumed_stream_that_drops_again_at_once_can_resume_again() {
    let mut d = ResponsesStreamDecoder::new();
    let mut out = Vec::new();
    d.decode(
        concat!(
            "data: {\"type\":\"response.created\",\"sequence_number\":0,",
            "\"response\":{\"id\":\"resp_1\",\"background\":true}}\n\n",
        )
        .as_bytes(),
        &mut out,
    )
    .unwrap();
    d.resumed();
    // The new connection closes before any event: a closed connection, not a body that
    // is "not an event stream", so the caller resumes once more.
    match d.finish(&mut out) {
        Err(Error::Transport(t)) => assert_eq!(t.kind, TransportErrorKind::ConnectionClosed),
        other => panic!("{other:?}"),
    }
    assert!(d.resume_point().is_some());
}

#[test]
fn a_chat_stream_cut_inside_the_usage_chunk_after_its_finish_is_a_closed_connection() {
    let body = concat!(
        "data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"},\"finish_reason\":null}]}\n\n",
        "data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n",
        "data: {\"id\":\"c\",\"choices\":[],\"usage\":{\"prompt_tok",
    );
    match run(ChatStreamDecoder::new(), body).1 {
        Err(Error::Transport(t)) => assert_eq!(t.kind, TransportErrorKind::ConnectionClosed),
        other => panic!("{other:?}"),
    }
}
