//! End to end through the real HTTP transport: a loopback server replays recorded provider
//! bytes in small pieces, and misbehaves in the ways real networks and providers do.

use futures_util::StreamExt;
use kite::http::{ReqwestTransport, RetryPolicy, Timeouts};
use kite::wire::StreamDecoder;
use kite::wire::openai_chat::{ChatStreamDecoder, Dialect};
use kite::{
    ApiErrorKind, Error, Event, FinishReason, Message, Model, OpenAiCompatible, Request,
    TransportErrorKind,
};
use kite_testkit::{ReplayServer, Reply, fixture};
use std::time::{Duration, Instant};

const KEY: &str = "sk-test-0123456789abcdefSECRET";

fn fast_retries() -> RetryPolicy {
    RetryPolicy {
        max_retries: 3,
        rate_limit_base: Duration::from_millis(10),
        server_error_base: Duration::from_millis(10),
        transport_base: Duration::from_millis(10),
        max_delay: Duration::from_secs(5),
        give_up_after: None,
    }
}

fn model(server: &ReplayServer) -> OpenAiCompatible {
    let transport = ReqwestTransport::new(Timeouts {
        connect: Duration::from_secs(2),
        response: Duration::from_secs(5),
        idle: Duration::from_millis(400),
    })
    .unwrap();
    OpenAiCompatible::new(format!("{}/v1", server.url()), Dialect::OpenAi)
        .api_key(KEY)
        .transport(transport)
        .retry(fast_retries())
}

fn request() -> Request {
    Request::new("gpt-5-nano").message(Message::user("What's the weather in Berlin?"))
}

/// Every event up to and including an error.
async fn events(model: &OpenAiCompatible) -> (Vec<Event>, Option<Error>) {
    let mut s = model.stream(&request());
    let mut out = Vec::new();
    while let Some(item) = s.next().await {
        match item {
            Ok(e) => out.push(e),
            Err(e) => return (out, Some(e)),
        }
    }
    (out, None)
}

fn decoded_whole(body: &[u8]) -> Vec<Event> {
    let mut dec = ChatStreamDecoder::new();
    let mut out = Vec::new();
    dec.decode(body, &mut out).unwrap();
    dec.finish(&mut out).unwrap();
    out
}

const TOOL_STREAM: &str = "openai/chat-completions/stream-tool-call-fragments/response.sse";
const TEXT_STREAM: &str = "openai/chat-completions/stream-text-with-usage/response.sse";

#[tokio::test]
async fn recorded_stream_in_small_delayed_pieces_gives_the_recorded_events() {
    let body = fixture(TOOL_STREAM);
    let server = ReplayServer::start(vec![
        Reply::sse(body.clone()).chunked(7, Duration::from_millis(1)),
    ])
    .await;
    let (got, err) = events(&model(&server)).await;
    assert!(err.is_none(), "{err:?}");
    assert_eq!(got, decoded_whole(&body));
    let call = got
        .iter()
        .find_map(|e| match e {
            Event::ToolCallEnd { call, .. } => Some(call.clone()),
            _ => None,
        })
        .expect("a tool call");
    assert_eq!(call.name, "weather");
    assert_eq!(call.parse_arguments().unwrap()["latitude"], "52.5200");

    let reqs = server.requests();
    assert_eq!(reqs.len(), 1);
    assert_eq!(reqs[0].method, "POST");
    assert_eq!(reqs[0].path, "/v1/chat/completions");
    assert_eq!(
        reqs[0].header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
    let sent: serde_json::Value = serde_json::from_slice(&reqs[0].body).unwrap();
    assert_eq!(sent["stream"], true);
    assert_eq!(sent["model"], "gpt-5-nano");
}

#[tokio::test]
async fn complete_buffers_the_same_stream() {
    let server = ReplayServer::start(vec![
        Reply::sse(fixture(TEXT_STREAM)).chunked(13, Duration::ZERO),
    ])
    .await;
    let r = model(&server).complete(&request()).await.unwrap();
    assert_eq!(r.text(), "1\n2\n3");
    assert_eq!(r.finish_reason, FinishReason::Stop);
    assert_eq!(r.usage.input_tokens, 13);
    assert_eq!(
        r.id.as_deref(),
        Some("chatcmpl-DoZGwo7RT9RGQpIKxv7lOQs0f0GnJ")
    );
}

#[tokio::test]
async fn a_429_is_retried_after_the_delay_the_server_asked_for() {
    let limited = br#"{"error":{"message":"Rate limit reached for gpt-4o-mini on tokens per min (TPM): Limit 200000, Used 199000, Requested 2000. Please try again in 300ms.","type":"tokens","param":null,"code":"rate_limit_exceeded"}}"#.to_vec();
    let server = ReplayServer::start(vec![
        Reply::json(429, limited).header("retry-after", "1"),
        Reply::sse(fixture(TEXT_STREAM)),
    ])
    .await;
    let started = Instant::now();
    let r = model(&server).complete(&request()).await.unwrap();
    assert_eq!(r.text(), "1\n2\n3");
    assert_eq!(server.requests().len(), 2);
    // The policy's own 429 delay is 10 ms: only Retry-After explains a wait of a second.
    assert!(
        started.elapsed() >= Duration::from_millis(950),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn a_request_too_large_for_the_rate_limit_is_not_retried() {
    let too_large =
        fixture("openai/chat-completions/error-429-request-too-large-tpm/response.json");
    let server = ReplayServer::start(vec![
        Reply::json(429, too_large).header("retry-after", "1"),
        Reply::sse(fixture(TEXT_STREAM)),
    ])
    .await;
    let started = Instant::now();
    let err = model(&server).complete(&request()).await.unwrap_err();
    let api = err.api().expect("an API error");
    assert_eq!(api.kind, kite::ApiErrorKind::RequestTooLarge);
    assert!(!api.is_retryable());
    assert_eq!(server.requests().len(), 1);
    assert!(started.elapsed() < Duration::from_millis(900));
}

#[tokio::test]
async fn a_stream_that_sends_only_keep_alive_comments_is_a_closed_connection() {
    let server = ReplayServer::start(vec![Reply::sse(
        b": OPENROUTER PROCESSING\n\n: OPENROUTER PROCESSING\n\n".to_vec(),
    )])
    .await;
    let err = model(&server).complete(&request()).await.unwrap_err();
    match err {
        Error::Transport(t) => {
            assert_eq!(t.kind, TransportErrorKind::ConnectionClosed);
            assert!(t.message.contains("no answer"), "{}", t.message);
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn a_stream_closed_inside_an_event_is_a_closed_connection() {
    let body = fixture(TEXT_STREAM);
    let second = body.windows(2).position(|w| w == b"\n\n").unwrap() + 2;
    let cut = second + 30;
    let server = ReplayServer::start(vec![Reply::sse(body[..cut].to_vec())]).await;
    let mut events = model(&server).stream(&request());
    let mut got = Vec::new();
    let err = loop {
        match events.next().await {
            Some(Ok(e)) => got.push(e),
            Some(Err(e)) => break e,
            None => panic!("the stream ended without an error"),
        }
    };
    assert!(matches!(got[0], Event::Start { .. }), "{got:?}");
    assert!(
        matches!(&err, Error::Transport(t) if t.kind == TransportErrorKind::ConnectionClosed),
        "{err:?}"
    );
}

#[tokio::test]
async fn a_burst_of_server_errors_is_retried() {
    let server = ReplayServer::start(vec![
        Reply::status(500),
        Reply::json(502, br#"{"error":{"message":"bad gateway"}}"#.to_vec()),
        Reply::status(503),
        Reply::sse(fixture(TEXT_STREAM)),
    ])
    .await;
    let r = model(&server).complete(&request()).await.unwrap();
    assert_eq!(r.text(), "1\n2\n3");
    assert_eq!(server.requests().len(), 4);
}

#[tokio::test]
async fn retries_stop_after_the_limit_with_the_last_error() {
    let server = ReplayServer::start(vec![
        Reply::status(500),
        Reply::status(500),
        Reply::status(500),
        Reply::json(
            500,
            br#"{"error":{"message":"still broken","type":"server_error"}}"#.to_vec(),
        )
        .header("x-request-id", "req_last"),
        Reply::sse(fixture(TEXT_STREAM)),
    ])
    .await;
    let err = model(&server).complete(&request()).await.unwrap_err();
    let api = err.api().expect("an API error");
    assert_eq!(api.status, Some(500));
    assert_eq!(api.kind, ApiErrorKind::Server);
    assert_eq!(api.message, "still broken");
    assert_eq!(api.request_id.as_deref(), Some("req_last"));
    assert_eq!(server.requests().len(), 4, "1 try + 3 retries");
    assert_eq!(server.unused(), 1);
}

#[tokio::test]
async fn a_spent_quota_is_not_retried() {
    let body = br#"{"error":{"message":"You exceeded your current quota","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}"#;
    let server = ReplayServer::start(vec![
        Reply::json(429, body.to_vec()),
        Reply::sse(fixture(TEXT_STREAM)),
    ])
    .await;
    let err = model(&server).complete(&request()).await.unwrap_err();
    assert_eq!(err.api().unwrap().kind, ApiErrorKind::QuotaExceeded);
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn a_reset_before_the_first_byte_is_retried() {
    let server = ReplayServer::start(vec![Reply::reset(), Reply::sse(fixture(TEXT_STREAM))]).await;
    let r = model(&server).complete(&request()).await.unwrap();
    assert_eq!(r.text(), "1\n2\n3");
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn a_reset_after_the_first_event_ends_the_stream_with_a_typed_error_and_no_retry() {
    let body = fixture(TOOL_STREAM);
    let first_event_end = body.windows(2).position(|w| w == b"\n\n").unwrap() + 2;
    let server = ReplayServer::start(vec![
        Reply::sse(body.clone()).reset_after(first_event_end + 40),
        Reply::sse(body),
    ])
    .await;
    let (got, err) = events(&model(&server)).await;
    assert!(matches!(got.first(), Some(Event::Start { .. })), "{got:?}");
    assert!(
        matches!(got.get(1), Some(Event::ToolCallStart { .. })),
        "{got:?}"
    );
    match err {
        Some(Error::Transport(t)) => {
            assert_eq!(t.kind, TransportErrorKind::ConnectionClosed, "{t}")
        }
        other => panic!("expected a transport error, got {other:?}"),
    }
    assert_eq!(
        server.requests().len(),
        1,
        "a started stream is not retried"
    );
}

#[tokio::test]
async fn a_stalled_stream_ends_with_an_idle_timeout() {
    let body = fixture(TEXT_STREAM);
    let first_event_end = body.windows(2).position(|w| w == b"\n\n").unwrap() + 2;
    let server = ReplayServer::start(vec![Reply::sse(body).stall_after(first_event_end)]).await;
    let (got, err) = events(&model(&server)).await;
    assert!(matches!(got.first(), Some(Event::Start { .. })), "{got:?}");
    match err {
        Some(Error::Transport(t)) => assert_eq!(t.kind, TransportErrorKind::IdleTimeout),
        other => panic!("expected an idle timeout, got {other:?}"),
    }
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn garbage_is_a_typed_error_not_a_panic() {
    // Not HTTP at all.
    let server =
        ReplayServer::start(vec![Reply::raw(b"\x00\xff\xfe garbage \r\n\r\n".to_vec())]).await;
    let err = model(&server)
        .retry(RetryPolicy::none())
        .complete(&request())
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Transport(_)), "{err:?}");

    // An event stream of random bytes.
    let mut noise = Vec::new();
    let mut x: u32 = 12345;
    for _ in 0..4096 {
        x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
        noise.push((x >> 16) as u8);
    }
    let server = ReplayServer::start(vec![Reply::sse(noise).chunked(100, Duration::ZERO)]).await;
    let err = model(&server).complete(&request()).await.unwrap_err();
    match err {
        Error::Decode(d) => assert!(
            d.message.contains("not a server-sent event stream"),
            "{d:?}"
        ),
        other => panic!("expected a decode error, got {other:?}"),
    }

    // Well framed, but the payload is not JSON: the error carries the payload.
    let server =
        ReplayServer::start(vec![Reply::sse(b"data: {\"choices\": [oops\n\n".to_vec())]).await;
    match model(&server).complete(&request()).await.unwrap_err() {
        Error::Decode(d) => assert!(d.payload.contains("[oops"), "{d:?}"),
        other => panic!("expected a decode error, got {other:?}"),
    }
}

#[tokio::test]
async fn provider_errors_are_typed_and_never_show_the_key() {
    let body = format!(
        r#"{{"error":{{"message":"Incorrect API key provided: {KEY}.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}}}"#
    );
    let server = ReplayServer::start(vec![
        Reply::json(401, body.into_bytes()).header("x-request-id", "req_abc"),
    ])
    .await;
    let m = model(&server);
    let err = m.complete(&request()).await.unwrap_err();
    let api = err.api().unwrap();
    assert_eq!(api.status, Some(401));
    assert_eq!(api.kind, ApiErrorKind::Authentication);
    assert_eq!(api.code.as_deref(), Some("invalid_api_key"));
    assert_eq!(api.request_id.as_deref(), Some("req_abc"));
    for shown in [err.to_string(), format!("{err:?}"), format!("{m:?}")] {
        assert!(!shown.contains(KEY), "key leaked: {shown}");
    }
    assert!(
        err.to_string()
            .contains("Incorrect API key provided: [redacted]")
    );
    assert_eq!(server.requests().len(), 1, "401 is not retried");
}

#[tokio::test]
async fn a_server_that_ignores_stream_true_is_understood() {
    let server = ReplayServer::start(vec![Reply::json(
        200,
        fixture("openai/chat-completions/tool-calls-parallel-two-tools/response.json"),
    )])
    .await;
    let r = model(&server).complete(&request()).await.unwrap();
    let names: Vec<_> = r.tool_calls().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["weather", "best_language_to_learn"]);
}

#[tokio::test]
async fn an_unreachable_server_is_a_connect_error() {
    // Bind then drop, so the port is very likely closed.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let m = OpenAiCompatible::new(format!("http://127.0.0.1:{port}/v1"), Dialect::Compatible)
        .retry(RetryPolicy::none());
    match m.complete(&request()).await.unwrap_err() {
        Error::Transport(t) => assert_eq!(t.kind, TransportErrorKind::Connect, "{t}"),
        other => panic!("expected a connect error, got {other:?}"),
    }
}

#[tokio::test]
async fn a_redirect_to_another_origin_is_not_followed() {
    let elsewhere = ReplayServer::start(vec![Reply::sse(fixture(
        "openai/chat-completions/stream-after-tool-result/response.sse",
    ))])
    .await;
    let redirecting = ReplayServer::start(vec![Reply::status(307).header(
        "location",
        &format!("{}/v1/chat/completions", elsewhere.url()),
    )])
    .await;
    let (_, error) = events(&model(&redirecting)).await;
    let error = error.expect("the redirect is an error");
    assert!(error.to_string().contains("307"), "{error}");
    assert!(
        elsewhere.requests().is_empty(),
        "the prompt went nowhere else"
    );
}
