//! What a server may ask of kite: a model's answer (`sampling/createMessage`) and the
//! user's input (`elicitation/create`). Neither is offered unless a hook is set, so a server
//! never sees a capability kite cannot serve.

use kite_core::{FinishReason, Message, Model, ModelFuture, Request, Response, Role};
use serde_json::{Map, Value, json};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

/// Answers servers' `sampling/createMessage` requests.
///
/// The request arrives as a kite [`Request`]: the server's messages, its system prompt,
/// `maxTokens`, `temperature` and stop sequences, and as `model` the first model name the
/// server hinted at (empty when it gave none). A hook may refuse (an error goes back to
/// the server) or ask a person first; [`ModelSampler`] sends it to a kite model as it is.
pub trait Sampler: Send + Sync + 'static {
    /// The answer to `request` from the server with id `server`.
    fn sample(
        &self,
        server: &str,
        request: Request,
    ) -> ModelFuture<'static, Result<Response, kite_core::Error>>;
}

/// Sends every sampling request to one kite model.
pub struct ModelSampler {
    model: Arc<dyn Model>,
    name: String,
}

impl ModelSampler {
    /// Sampling by `model`, asked for by `name`.
    pub fn new(model: impl Model + 'static, name: impl Into<String>) -> Self {
        Self {
            model: Arc::new(model),
            name: name.into(),
        }
    }
}

impl Sampler for ModelSampler {
    fn sample(
        &self,
        server: &str,
        mut request: Request,
    ) -> ModelFuture<'static, Result<Response, kite_core::Error>> {
        tracing::info!(server, model = %self.name, "sampling for an MCP server");
        request.model = self.name.clone();
        let answer = self.model.complete(&request);
        let name = self.name.clone();
        Box::pin(async move {
            let mut response = answer.await?;
            response.model.get_or_insert(name);
            Ok(response)
        })
    }
}

/// A server's request for the user's input (form mode).
#[derive(Clone, Debug, PartialEq)]
pub struct Elicitation {
    /// What the server says it wants, for the user to read.
    pub message: String,
    /// The JSON Schema of the answer: an object of flat properties (strings, numbers,
    /// booleans, enums), some with a `default`.
    pub schema: Value,
}

/// The user's answer to an [`Elicitation`].
#[derive(Clone, Debug, PartialEq)]
pub enum ElicitAnswer {
    /// The values given. Properties left out that have a `default` in the schema are
    /// filled in with it before the answer is sent.
    Accept(Map<String, Value>),
    /// The user said no; the server carries on without.
    Decline,
    /// The user dismissed the question.
    Cancel,
}

/// Surfaces servers' `elicitation/create` requests, for instance by asking at a terminal.
pub trait Elicitor: Send + Sync + 'static {
    /// The user's answer to `request` from the server with id `server`.
    fn elicit(
        &self,
        server: &str,
        request: Elicitation,
    ) -> Pin<Box<dyn Future<Output = ElicitAnswer> + Send + 'static>>;
}

impl<F, Fut> Elicitor for F
where
    F: Fn(String, Elicitation) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ElicitAnswer> + Send + 'static,
{
    fn elicit(
        &self,
        server: &str,
        request: Elicitation,
    ) -> Pin<Box<dyn Future<Output = ElicitAnswer> + Send + 'static>> {
        Box::pin(self(server.to_owned(), request))
    }
}

/// Fills in what the user left out from the schema's defaults (SEP-1034).
pub(crate) fn with_defaults(schema: &Value, mut content: Map<String, Value>) -> Map<String, Value> {
    if let Some(properties) = schema["properties"].as_object() {
        for (name, property) in properties {
            if let Some(default) = property.get("default")
                && !content.contains_key(name)
            {
                content.insert(name.clone(), default.clone());
            }
        }
    }
    content
}

/// A `sampling/createMessage` request's params, as JSON, to a kite request.
pub(crate) fn sampling_request(params: &Value) -> Request {
    let mut request = Request::new(
        params["modelPreferences"]["hints"][0]["name"]
            .as_str()
            .unwrap_or_default(),
    );
    request.system = params["systemPrompt"].as_str().map(str::to_owned);
    request.max_tokens = params["maxTokens"]
        .as_u64()
        .map(|n| n.min(u32::MAX as u64) as u32);
    request.temperature = params["temperature"].as_f64();
    request.stop = params["stopSequences"]
        .as_array()
        .map(|s| {
            s.iter()
                .filter_map(|s| s.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    for message in params["messages"].as_array().into_iter().flatten() {
        let role = match message["role"].as_str() {
            Some("assistant") => Role::Assistant,
            _ => Role::User,
        };
        let blocks = match &message["content"] {
            Value::Array(blocks) => blocks.clone(),
            block => vec![block.clone()],
        };
        let parts = blocks.iter().map(crate::tool::part).collect();
        request.messages.push(Message::new(role, parts));
    }
    request
}

/// A kite response as a `sampling/createMessage` result, as JSON.
pub(crate) fn sampling_result(response: &Response) -> Value {
    let stop = match &response.finish_reason {
        FinishReason::Stop => "endTurn".to_owned(),
        FinishReason::Length => "maxTokens".to_owned(),
        FinishReason::ToolCalls => "toolUse".to_owned(),
        FinishReason::ContentFilter => "contentFilter".to_owned(),
        other => other.as_str().to_owned(),
    };
    json!({
        "role": "assistant",
        "content": {"type": "text", "text": response.message.text()},
        "model": response.model.clone().unwrap_or_default(),
        "stopReason": stop,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use kite_core::Part;

    #[test]
    fn defaults_fill_only_what_is_missing() {
        let schema = json!({"type": "object", "properties": {
            "name": {"type": "string", "default": "Ann"},
            "age": {"type": "integer", "default": 30},
            "email": {"type": "string"}
        }});
        let given = json!({"name": "Bo"}).as_object().unwrap().clone();
        assert_eq!(
            Value::Object(with_defaults(&schema, given)),
            json!({"name": "Bo", "age": 30})
        );
    }

    #[test]
    fn a_sampling_request_becomes_a_kite_request() {
        let params = json!({
            "messages": [
                {"role": "user", "content": {"type": "text", "text": "hi"}},
                {"role": "assistant", "content": [{"type": "text", "text": "yes?"}]},
                {"role": "user", "content": {"type": "image", "data": "AAAA", "mimeType": "image/png"}}
            ],
            "systemPrompt": "be brief",
            "maxTokens": 50,
            "temperature": 0.5,
            "stopSequences": ["END"],
            "modelPreferences": {"hints": [{"name": "claude-3"}]}
        });
        let r = sampling_request(&params);
        assert_eq!(r.model, "claude-3");
        assert_eq!(r.system.as_deref(), Some("be brief"));
        assert_eq!((r.max_tokens, r.temperature), (Some(50), Some(0.5)));
        assert_eq!(r.stop, ["END"]);
        assert_eq!(r.messages.len(), 3);
        assert_eq!(r.messages[1].role, Role::Assistant);
        assert_eq!(r.messages[1].text(), "yes?");
        assert!(matches!(r.messages[2].parts[0], Part::Image { .. }));
    }
}
