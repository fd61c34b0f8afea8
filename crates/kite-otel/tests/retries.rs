//! A retried model call: the retry shows as an event of the call's span, and the span
//! ends with the answer that came on the second attempt.

use kite::http::RetryPolicy;
use kite::wire::openai_chat::Dialect;
use kite::{FinishReason, Message, Model, OpenAiCompatible, Request, Response};
use kite_otel::{GenAiExporter, Telemetry};
use kite_testkit::render::{Shape, sse};
use kite_testkit::{ReplayServer, Reply};
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider};
use std::time::Duration;
use tracing_subscriber::layer::SubscriberExt as _;

#[tokio::test(flavor = "current_thread")]
async fn a_retry_is_an_event_of_the_calls_span() {
    let spans = InMemorySpanExporter::default();
    let tracer = SdkTracerProvider::builder()
        .with_simple_exporter(GenAiExporter::new(spans.clone()))
        .build();
    let telemetry = Telemetry::with_providers(tracer, None);
    let _guard =
        tracing::subscriber::set_default(tracing_subscriber::registry().with(telemetry.layer()));

    let mut answer = Response::empty(FinishReason::Stop);
    answer.message = Message::assistant("Second time lucky.");
    let server = ReplayServer::start(vec![
        Reply::json(
            503,
            r#"{"error": {"message": "overloaded", "type": "server_error"}}"#,
        ),
        Reply::sse(sse(Shape::Chat, &answer, 1)),
    ])
    .await;
    let policy = RetryPolicy {
        server_error_base: Duration::from_millis(10),
        ..RetryPolicy::default()
    };
    let model = OpenAiCompatible::new(format!("{}/v1", server.url()), Dialect::OpenAi)
        .api_key("sk-retry-test")
        .retry(policy);
    let response = model
        .complete(&Request::new("gpt-5-nano").message(Message::user("Hi")))
        .await
        .unwrap();
    assert_eq!(response.text(), "Second time lucky.");

    let finished = spans.get_finished_spans().unwrap();
    let chat = finished
        .iter()
        .find(|s| s.name == "chat gpt-5-nano")
        .expect("a chat span");
    let events: Vec<String> = chat.events.iter().map(|e| e.name.to_string()).collect();
    assert!(
        events.iter().any(|e| e.contains("retrying request")),
        "{events:?}"
    );
    assert!(
        !chat
            .attributes
            .iter()
            .any(|kv| kv.key.as_str() == "error.type"),
        "the call succeeded in the end"
    );
    telemetry.shutdown(Duration::from_secs(1)).unwrap();
}
