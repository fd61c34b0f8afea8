//! Resources, prompts, roots, sampling and elicitation against real servers.

mod common;

use common::{everything, python, text};
use kite_core::Role;
use kite_mcp::{ElicitAnswer, Elicitation, Error, Hub, HubOptions, ModelSampler, ResourceContent};
use kite_testkit::ScriptedModel;
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};

#[tokio::test]
async fn resources_are_listed_and_read_as_text_and_bytes() {
    let hub = Hub::new();
    hub.add("everything", everything()).await.unwrap();
    hub.add("py", python()).await.unwrap();

    let listed = hub.resources("everything").await.unwrap();
    assert!(!listed.is_empty());
    assert!(
        listed
            .iter()
            .all(|r| !r.uri.is_empty() && !r.name.is_empty())
    );

    let text_resource = hub
        .read_resource("everything", "demo://resource/dynamic/text/1")
        .await
        .unwrap();
    match &text_resource[..] {
        [ResourceContent::Text { uri, text, .. }] => {
            assert_eq!(uri, "demo://resource/dynamic/text/1");
            assert!(
                text.starts_with("Resource 1: This is a plaintext resource"),
                "{text}"
            );
        }
        other => panic!("{other:?}"),
    }
    let blob = hub
        .read_resource("everything", "demo://resource/dynamic/blob/1")
        .await
        .unwrap();
    match &blob[..] {
        [ResourceContent::Blob { bytes, .. }] => {
            assert!(
                String::from_utf8_lossy(bytes).starts_with("Resource 1: This is a base64 blob"),
                "{bytes:?}"
            );
        }
        other => panic!("{other:?}"),
    }
    let missing = hub
        .read_resource("everything", "demo://resource/nowhere")
        .await
        .unwrap_err();
    assert!(matches!(missing, Error::Server { .. }), "{missing:?}");

    let py = hub.resources("py").await.unwrap();
    assert_eq!(
        py.iter().map(|r| r.uri.as_str()).collect::<Vec<_>>(),
        ["test://greeting"]
    );
    assert_eq!(py[0].description.as_deref(), Some("A greeting."));
    assert!(matches!(
        &hub.read_resource("py", "test://greeting").await.unwrap()[..],
        [ResourceContent::Text { text, .. }] if text == "hello resource"
    ));
    hub.shutdown();
}

#[tokio::test]
async fn prompts_are_listed_with_their_arguments_and_filled_in() {
    let hub = Hub::new();
    hub.add("everything", everything()).await.unwrap();
    hub.add("py", python()).await.unwrap();

    let prompts = hub.prompts("everything").await.unwrap();
    let args = prompts.iter().find(|p| p.name == "args-prompt").unwrap();
    let arguments: Vec<(&str, bool)> = args
        .arguments
        .iter()
        .map(|a| (a.name.as_str(), a.required))
        .collect();
    assert_eq!(arguments, [("city", true), ("state", false)]);

    let filled = hub
        .prompt(
            "everything",
            "args-prompt",
            json!({"city": "Paris"}).as_object().unwrap().clone(),
        )
        .await
        .unwrap();
    assert_eq!(filled.messages.len(), 1);
    assert_eq!(filled.messages[0].role, Role::User);
    assert_eq!(filled.messages[0].text(), "What's weather in Paris?");

    let ask = hub
        .prompt(
            "py",
            "ask",
            json!({"topic": "kites"}).as_object().unwrap().clone(),
        )
        .await
        .unwrap();
    assert_eq!(ask.messages[0].text(), "Tell me about kites");
    let missing_argument = hub.prompt("py", "ask", Default::default()).await;
    assert!(missing_argument.is_err(), "{missing_argument:?}");
    hub.shutdown();
}

#[tokio::test]
async fn roots_are_given_to_servers_that_ask() {
    let hub = Hub::with_options(HubOptions {
        roots: vec![("file:///srv/project".into(), Some("project".into()))],
        ..HubOptions::default()
    });
    hub.add("everything", everything()).await.unwrap();
    let roots = hub
        .call("everything", "get-roots-list", json!({}))
        .await
        .unwrap();
    let said = text(&roots);
    assert!(
        said.contains("file:///srv/project") && said.contains("project"),
        "{said}"
    );
    hub.shutdown();
}

#[tokio::test]
async fn sampling_requests_go_to_a_kite_model() {
    let model = ScriptedModel::new().text("Kites fly on wind.");
    let hub = Hub::with_options(HubOptions {
        sampler: Some(Arc::new(ModelSampler::new(
            model.clone(),
            "scripted-sampler",
        ))),
        ..HubOptions::default()
    });
    hub.add("everything", everything()).await.unwrap();
    let names: Vec<String> = hub.servers()[0].tools.iter().map(|t| t.0.clone()).collect();
    assert!(
        names.iter().any(|n| n == "trigger-sampling-request"),
        "{names:?}"
    );

    let result = hub
        .call(
            "everything",
            "trigger-sampling-request",
            json!({"prompt": "why do kites fly?", "maxTokens": 20}),
        )
        .await
        .unwrap();
    let said = text(&result);
    assert!(said.contains("Kites fly on wind."), "{said}");
    // The model that answered, as it names itself.
    assert!(said.contains(r#""model": "scripted""#), "{said}");
    assert!(said.contains("endTurn"), "{said}");

    let requests = model.requests();
    let asked = &requests[0];
    assert_eq!(asked.model, "scripted-sampler");
    assert_eq!(
        asked.system.as_deref(),
        Some("You are a helpful test server.")
    );
    assert_eq!(asked.max_tokens, Some(20));
    assert!(asked.messages[0].text().contains("why do kites fly?"));
    hub.shutdown();
}

/// Prices every answer at a cent, as a session's pricer would.
struct Cent(ModelSampler);

impl kite_mcp::Sampler for Cent {
    fn sample(
        &self,
        server: &str,
        request: kite_core::Request,
    ) -> kite_core::ModelFuture<'static, Result<kite_core::Response, kite_core::Error>> {
        let answer = self.0.sample(server, request);
        Box::pin(async move {
            let mut r = answer.await?;
            r.usage.cost = Some(0.01);
            Ok(r)
        })
    }
}

#[tokio::test]
async fn a_server_gets_short_answers_few_to_a_call_and_none_past_their_cost() {
    let model = ScriptedModel::new();
    let model = (0..20).fold(model, |m, i| m.text(&format!("answer {i}")));
    let hub = Hub::with_options(HubOptions {
        sampler: Some(Arc::new(Cent(ModelSampler::new(model.clone(), "m")))),
        sampling: kite_mcp::SamplingLimits {
            max_tokens: 100,
            max_requests: 3,
            max_cost: Some(0.055),
        },
        ..HubOptions::default()
    });
    hub.add("py", python()).await.unwrap();
    let ask = || {
        hub.call(
            "py",
            "ask_many",
            json!({"times": 25, "max_tokens": 100_000_000}),
        )
    };
    let said: Value = serde_json::from_str(&text(&ask().await.unwrap())).unwrap();
    // Three of a call's 25, each cut to 100 tokens.
    assert_eq!(said["answered"].as_array().unwrap().len(), 3, "{said}");
    assert_eq!(said["refused"].as_array().unwrap().len(), 22, "{said}");
    assert!(
        said["refused"][0].as_str().unwrap().contains("more than 3"),
        "{said}"
    );
    assert!(model.requests().iter().all(|r| r.max_tokens == Some(100)));
    // Another call counts afresh, until the answers' cost reaches its limit.
    let said: Value = serde_json::from_str(&text(&ask().await.unwrap())).unwrap();
    assert_eq!(said["answered"].as_array().unwrap().len(), 3, "{said}");
    let said: Value = serde_json::from_str(&text(&ask().await.unwrap())).unwrap();
    assert!(said["answered"].as_array().unwrap().is_empty(), "{said}");
    assert!(
        said["refused"][0].as_str().unwrap().contains("cost"),
        "{said}"
    );
    assert_eq!(model.requests().len(), 6);
    hub.shutdown();
}

#[tokio::test]
async fn without_hooks_servers_are_not_offered_sampling_or_elicitation() {
    let hub = Hub::new();
    hub.add("everything", everything()).await.unwrap();
    let names: Vec<String> = hub.servers()[0].tools.iter().map(|t| t.0.clone()).collect();
    assert!(
        !names.iter().any(|n| n.starts_with("trigger-sampling")),
        "{names:?}"
    );
    assert!(
        !names.iter().any(|n| n.starts_with("trigger-elicitation")),
        "{names:?}"
    );
    hub.shutdown();
}

#[tokio::test]
async fn elicitation_reaches_the_callback_and_defaults_fill_the_rest() {
    let asked: Arc<Mutex<Vec<(String, Elicitation)>>> = Arc::default();
    let log = asked.clone();
    let elicitor = move |server: String, request: Elicitation| {
        log.lock().unwrap().push((server, request));
        async move {
            ElicitAnswer::Accept(
                json!({"name": "Ann", "check": true})
                    .as_object()
                    .unwrap()
                    .clone(),
            )
        }
    };
    let hub = Hub::with_options(HubOptions {
        elicitor: Some(Arc::new(elicitor)),
        ..HubOptions::default()
    });
    hub.add("everything", everything()).await.unwrap();
    let result = hub
        .call("everything", "trigger-elicitation-request", json!({}))
        .await
        .unwrap();
    assert!(!result.is_error, "{result:?}");
    let said = text(&result);
    // The server echoes what it got back: the answer and the schema's defaults.
    for want in ["Ann", "It was a dark and stormy night.", "42", "Monica"] {
        assert!(said.contains(want), "{want} missing from {said}");
    }
    let (server, request) = asked.lock().unwrap()[0].clone();
    assert_eq!(server, "everything");
    assert!(request.message.contains("Please provide inputs"));
    assert_eq!(
        request.schema["properties"]["integer"]["default"],
        Value::from(42)
    );

    // A declined question is reported as such.
    let decline = |_: String, _: Elicitation| async { ElicitAnswer::Decline };
    let hub2 = Hub::with_options(HubOptions {
        elicitor: Some(Arc::new(decline)),
        ..HubOptions::default()
    });
    hub2.add("everything", everything()).await.unwrap();
    let declined = hub2
        .call("everything", "trigger-elicitation-request", json!({}))
        .await
        .unwrap();
    assert!(
        text(&declined).to_lowercase().contains("decline"),
        "{}",
        text(&declined)
    );
    hub.shutdown();
    hub2.shutdown();
}
