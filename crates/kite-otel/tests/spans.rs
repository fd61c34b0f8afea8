//! A scripted run with two tool calls, over kite's real HTTP model and a loopback server,
//! exported to in-memory exporters: the span tree, names, attributes, usage, finish
//! reasons and tool call ids; the metrics; message content only when asked for; and no key
//! anywhere. (One test: the content switch is an environment variable.)

use kite::wire::openai_chat::Dialect;
use kite::{Agent, FinishReason, Message, OpenAiCompatible, Part, Response, Role, ToolCall, Usage};
use kite_otel::{GenAiExporter, Telemetry};
use kite_testkit::render::{Shape, sse};
use kite_testkit::{ReplayServer, Reply};
use opentelemetry::{Array, Value};
use opentelemetry_sdk::metrics::data::{AggregatedMetrics, MetricData};
use opentelemetry_sdk::metrics::{InMemoryMetricExporter, PeriodicReader, SdkMeterProvider};
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use std::collections::HashMap;
use tracing_subscriber::layer::SubscriberExt as _;

const KEY: &str = "sk-otel-test-SECRET-0123456789";

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Pair {
    a: i64,
    b: i64,
}

fn replies() -> Vec<Reply> {
    let calls = Response {
        id: Some("chatcmpl-1".into()),
        model: Some("gpt-5-nano-2025-08-07".into()),
        message: Message::new(
            Role::Assistant,
            vec![
                Part::ToolCall(ToolCall::new("call_add", "add", r#"{"a": 19, "b": 23}"#)),
                Part::ToolCall(ToolCall::new("call_mul", "mul", r#"{"a": 6, "b": 7}"#)),
            ],
        ),
        finish_reason: FinishReason::ToolCalls,
        usage: Usage {
            input_tokens: 120,
            output_tokens: 40,
            total_tokens: 160,
            cached_input_tokens: 64,
            cache_write_tokens: 0,
            reasoning_tokens: 16,
            cost: None,
        },
    };
    let answer = Response {
        id: Some("chatcmpl-2".into()),
        message: Message::assistant("19 + 23 = 42 and 6 × 7 = 42."),
        finish_reason: FinishReason::Stop,
        usage: Usage {
            input_tokens: 200,
            output_tokens: 12,
            total_tokens: 212,
            ..Usage::default()
        },
        ..calls.clone()
    };
    vec![
        Reply::sse(sse(Shape::Chat, &calls, 1)),
        Reply::sse(sse(Shape::Chat, &answer, 2)),
    ]
}

/// Runs the scripted exchange with telemetry going to in-memory exporters.
async fn traced_run() -> (
    Vec<SpanData>,
    Vec<opentelemetry_sdk::metrics::data::ResourceMetrics>,
) {
    let spans = InMemorySpanExporter::default();
    let metrics = InMemoryMetricExporter::default();
    let tracer = SdkTracerProvider::builder()
        .with_simple_exporter(GenAiExporter::new(spans.clone()))
        .build();
    let meter = SdkMeterProvider::builder()
        .with_reader(PeriodicReader::builder(metrics.clone()).build())
        .build();
    let telemetry = Telemetry::with_providers(tracer, Some(meter.clone()));
    let subscriber = tracing_subscriber::registry().with(telemetry.layer());
    let _guard = tracing::subscriber::set_default(subscriber);

    let server = ReplayServer::start(replies()).await;
    let model = OpenAiCompatible::new(format!("{}/v1", server.url()), Dialect::OpenAi)
        .api_key(KEY)
        .retry(kite::http::RetryPolicy::none());
    let agent = Agent::new(model, "gpt-5-nano")
        .system("Answer with the tools.")
        .tool(kite::tool("add", "Adds.", |p: Pair, _ctx| async move {
            Ok(kite::ToolOutput::text((p.a + p.b).to_string()))
        }))
        .tool(kite::tool(
            "mul",
            "Multiplies.",
            |p: Pair, _ctx| async move { Ok(kite::ToolOutput::text((p.a * p.b).to_string())) },
        ));
    let run = agent.ask("What are 19 + 23 and 6 × 7?").await.unwrap();
    assert!(run.text().contains("= 42"), "{}", run.text());
    meter.force_flush().unwrap();
    let finished = spans.get_finished_spans().unwrap();
    let exported = metrics.get_finished_metrics().unwrap();
    telemetry
        .shutdown(std::time::Duration::from_secs(1))
        .unwrap();
    (finished, exported)
}

fn attrs(span: &SpanData) -> HashMap<String, Value> {
    span.attributes
        .iter()
        .map(|kv| (kv.key.to_string(), kv.value.clone()))
        .collect()
}

fn int(a: &HashMap<String, Value>, key: &str) -> i64 {
    match a.get(key) {
        Some(Value::I64(n)) => *n,
        other => panic!("{key}: {other:?}"),
    }
}

fn text(a: &HashMap<String, Value>, key: &str) -> String {
    match a.get(key) {
        Some(v) => v.as_str().into_owned(),
        None => panic!("no {key} in {a:?}"),
    }
}

#[tokio::test(flavor = "current_thread")]
async fn a_run_with_two_tool_calls_becomes_a_tree_of_genai_spans() {
    let (spans, metrics) = traced_run().await;
    let names: Vec<&str> = spans.iter().map(|s| s.name.as_ref()).collect();
    let agent = spans
        .iter()
        .find(|s| s.name == "invoke_agent")
        .unwrap_or_else(|| panic!("no agent span in {names:?}"));
    let chats: Vec<&SpanData> = spans
        .iter()
        .filter(|s| s.name == "chat gpt-5-nano")
        .collect();
    let tools: Vec<&SpanData> = spans
        .iter()
        .filter(|s| s.name.starts_with("execute_tool "))
        .collect();
    assert_eq!(chats.len(), 2, "{names:?}");
    assert_eq!(tools.len(), 2, "{names:?}");
    let agent_id = agent.span_context.span_id();
    for s in chats.iter().chain(&tools) {
        assert_eq!(
            s.parent_span_id, agent_id,
            "{} is not the run's child",
            s.name
        );
        assert_eq!(s.span_context.trace_id(), agent.span_context.trace_id());
    }
    assert_eq!(chats[0].span_kind, opentelemetry::trace::SpanKind::Client);

    // The first call: what was asked, who answered, what it used, why it ended.
    let first = attrs(chats[0]);
    assert_eq!(text(&first, "gen_ai.operation.name"), "chat");
    assert_eq!(text(&first, "gen_ai.provider.name"), "openai");
    assert_eq!(text(&first, "gen_ai.request.model"), "gpt-5-nano");
    assert_eq!(
        text(&first, "gen_ai.response.model"),
        "gpt-5-nano-2025-08-07"
    );
    assert_eq!(text(&first, "gen_ai.response.id"), "chatcmpl-1");
    assert_eq!(text(&first, "server.address"), "127.0.0.1");
    assert!(int(&first, "server.port") > 0);
    assert_eq!(int(&first, "gen_ai.usage.input_tokens"), 120);
    assert_eq!(int(&first, "gen_ai.usage.output_tokens"), 40);
    assert_eq!(int(&first, "gen_ai.usage.cache_read.input_tokens"), 64);
    assert_eq!(int(&first, "gen_ai.usage.reasoning.output_tokens"), 16);
    assert_eq!(
        first.get("gen_ai.response.finish_reasons"),
        Some(&Value::Array(Array::String(vec!["tool_call".into()])))
    );
    match first.get("gen_ai.response.time_to_first_chunk") {
        Some(Value::F64(s)) => assert!(*s > 0.0 && *s < 30.0, "{s}"),
        other => panic!("time to first chunk: {other:?}"),
    }
    let second = attrs(chats[1]);
    assert_eq!(text(&second, "gen_ai.response.id"), "chatcmpl-2");
    assert_eq!(
        second.get("gen_ai.response.finish_reasons"),
        Some(&Value::Array(Array::String(vec!["stop".into()])))
    );

    // The tools: names and the ids the model gave.
    let mut ids: Vec<(String, String)> = tools
        .iter()
        .map(|t| {
            let a = attrs(t);
            (
                text(&a, "gen_ai.tool.name"),
                text(&a, "gen_ai.tool.call.id"),
            )
        })
        .collect();
    ids.sort();
    assert_eq!(
        ids,
        [
            ("add".to_owned(), "call_add".to_owned()),
            ("mul".to_owned(), "call_mul".to_owned())
        ]
    );
    assert!(tools.iter().any(|t| t.name == "execute_tool add"));

    // The run's span adds up both calls.
    let run = attrs(agent);
    assert_eq!(int(&run, "gen_ai.usage.input_tokens"), 320);
    assert_eq!(int(&run, "gen_ai.usage.output_tokens"), 52);

    // No content by default, and the key nowhere.
    let everything = format!("{spans:?}");
    for key in [
        "gen_ai.input.messages",
        "gen_ai.output.messages",
        "gen_ai.system_instructions",
        "gen_ai.tool.call.arguments",
        "gen_ai.tool.call.result",
    ] {
        assert!(!everything.contains(key), "{key} was recorded");
    }
    assert!(!everything.contains(KEY) && !everything.contains("SECRET"));

    // The metrics: one duration per call, and the tokens by type.
    let shown = format!("{metrics:?}");
    assert!(
        shown.contains("gen_ai.client.operation.duration"),
        "{shown}"
    );
    let mut token_sums = HashMap::new();
    for rm in &metrics {
        for sm in rm.scope_metrics() {
            for m in sm.metrics() {
                if m.name() == "gen_ai.client.token.usage" {
                    assert_eq!(m.unit(), "{token}");
                    let AggregatedMetrics::U64(MetricData::Histogram(h)) = m.data() else {
                        panic!("not a histogram: {m:?}");
                    };
                    for p in h.data_points() {
                        let kind = p
                            .attributes()
                            .find(|kv| kv.key.as_str() == "gen_ai.token.type")
                            .map(|kv| kv.value.to_string())
                            .unwrap();
                        *token_sums.entry(kind).or_insert(0) += p.sum();
                    }
                }
            }
        }
    }
    assert_eq!(token_sums.get("input"), Some(&320), "{token_sums:?}");
    assert_eq!(token_sums.get("output"), Some(&52), "{token_sums:?}");

    // Asked for, the content is there (and still no key).
    // SAFETY: this binary's only test; nothing else reads the environment meanwhile.
    unsafe {
        std::env::set_var(
            "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT",
            "SPAN_ONLY",
        );
    }
    let (spans, _) = traced_run().await;
    let chat = spans.iter().find(|s| s.name == "chat gpt-5-nano").unwrap();
    let a = attrs(chat);
    assert!(text(&a, "gen_ai.input.messages").contains("What are 19 + 23"));
    assert!(text(&a, "gen_ai.system_instructions").contains("Answer with the tools."));
    assert!(text(&a, "gen_ai.output.messages").contains("\"tool_call\""));
    let add = spans.iter().find(|s| s.name == "execute_tool add").unwrap();
    let a = attrs(add);
    assert!(text(&a, "gen_ai.tool.call.arguments").contains("19"));
    assert_eq!(text(&a, "gen_ai.tool.call.result"), "42");
    assert!(!format!("{spans:?}").contains(KEY));
}
