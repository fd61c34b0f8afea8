//! `POST /v1/messages/count_tokens`: how many input tokens a Messages request takes. A
//! route whose provider counts them (Anthropic) is asked, so the count is its own, exact;
//! for any other, the count is the `o200k_base` tokenizer's (OpenAI's current one) over
//! what the model would read: the system prompt, each message's text, calls and results,
//! and each tool's name, description and schema, with OpenAI's few tokens of framing per
//! message: for models with other tokenizers, an estimate.

use crate::Gateway;
use crate::errors::{Api, unknown_model, upstream_error};
use crate::handlers::{betas, invalid};
use axum::body::Bytes;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use kite_core::{Part, Request};
use kite_wire::anthropic::serve as messages;
use serde_json::json;
use std::sync::{Arc, OnceLock};

/// Tokens of framing each message takes (its role, its bounds), as OpenAI counts them.
const PER_MESSAGE: u64 = 3;

pub(crate) async fn count_tokens(
    State(gw): State<Arc<Gateway>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let mut request = match messages::decode_count_request(&body) {
        Ok(r) => r,
        Err(e) => return invalid(Api::Messages, &e),
    };
    let Some((route, upstream)) = gw.route(&request.model) else {
        return unknown_model(Api::Messages, &request.model);
    };
    request.model = upstream;
    let betas = betas(&headers);
    if !betas.is_empty() {
        request
            .provider_hints
            .insert("anthropic", "beta", json!(betas));
    }
    let count = match route.model.count_tokens(&request) {
        Some(asked) => match asked.await {
            Ok(n) => n,
            Err(e) => return upstream_error(Api::Messages, &e),
        },
        None => {
            let counted = tokio::task::spawn_blocking(move || estimate(&request)).await;
            match counted {
                Ok(n) => n,
                Err(_) => {
                    let e = kite_core::Error::Engine("the token count failed".into());
                    return upstream_error(Api::Messages, &e);
                }
            }
        }
    };
    axum::Json(json!({"input_tokens": count})).into_response()
}

/// The tokenizer, made once (it takes a moment).
fn tokenizer() -> Option<&'static tiktoken_rs::CoreBPE> {
    static BPE: OnceLock<Option<tiktoken_rs::CoreBPE>> = OnceLock::new();
    BPE.get_or_init(|| tiktoken_rs::o200k_base().ok()).as_ref()
}

/// The tokenizer's count of what the model would read of `request`.
pub(crate) fn estimate(request: &Request) -> u64 {
    let mut texts: Vec<String> = request.system.iter().cloned().collect();
    for m in &request.messages {
        for p in &m.parts {
            match p {
                Part::Text { text } | Part::Refusal { text } => texts.push(text.clone()),
                Part::ToolCall(c) => texts.push(format!("{}{}", c.name, c.arguments)),
                Part::ToolResult(r) => texts.push(r.text_content()),
                Part::Reasoning(r) => texts.push(r.text.clone()),
                _ => {}
            }
        }
    }
    for t in &request.tools {
        texts.push(format!("{}{}{}", t.name, t.description, t.parameters));
    }
    let words: u64 = match tokenizer() {
        Some(bpe) => texts
            .iter()
            .map(|t| bpe.encode_ordinary(t).len() as u64)
            .sum(),
        // No tokenizer: about four characters a token.
        None => texts.iter().map(|t| t.len() as u64 / 4).sum(),
    };
    words + PER_MESSAGE * request.messages.len() as u64
}
