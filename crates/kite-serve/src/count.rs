//! `POST /v1/messages/count_tokens`: how many input tokens a Messages request takes. A
//! route whose provider counts them (Anthropic) is asked, so the count is its own, exact;
//! for any other, the count is the `o200k_base` tokenizer's (OpenAI's current one) over
//! what the model would read: the system prompt, each message's text, calls and results,
//! and each tool's name, description and schema, with OpenAI's few tokens of framing per
//! message, and a page's worth for each image or PDF: for models with other tokenizers,
//! an estimate. A server of Anthropic's API without the endpoint gets the estimate too.

use crate::Gateway;
use crate::errors::{Api, unknown_model, upstream_error};
use crate::handlers::{invalid, offer_betas};
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

/// What an image or a PDF is counted as, unread: about what a page-sized image takes.
const PER_FILE: u64 = 1_500;

pub(crate) async fn count_tokens(
    State(gw): State<Arc<Gateway>>,
    axum::extract::Extension(caller): axum::extract::Extension<crate::keys::Caller>,
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
    if let crate::keys::Caller::Key(k) = &caller
        && !k.may_use(&request.model)
    {
        return crate::errors::not_allowed(Api::Messages, &request.model);
    }
    request.model = upstream;
    offer_betas(&headers, &mut request);
    let asked = match route.model.count_tokens(&request) {
        Some(asked) => Some(asked.await),
        None => None,
    };
    let count = match asked {
        Some(Ok(n)) => Some(n),
        // A server of Anthropic's API without the endpoint: the estimate will do.
        Some(Err(kite_core::Error::Api(e))) if e.kind == kite_core::ApiErrorKind::NotFound => {
            estimate_off_thread(request).await
        }
        Some(Err(e)) => return upstream_error(Api::Messages, &e, &gw.secrets.all()),
        None => estimate_off_thread(request).await,
    };
    match count {
        Some(n) => axum::Json(json!({"input_tokens": n})).into_response(),
        None => {
            let e = kite_core::Error::Engine("the token count failed".into());
            upstream_error(Api::Messages, &e, &gw.secrets.all())
        }
    }
}

/// [`estimate`], on a thread that may block (the tokenizer is made on first use).
async fn estimate_off_thread(request: Request) -> Option<u64> {
    tokio::task::spawn_blocking(move || estimate(&request))
        .await
        .ok()
}

/// The tokenizer, made once (it takes a moment).
fn tokenizer() -> Option<&'static tiktoken_rs::CoreBPE> {
    static BPE: OnceLock<Option<tiktoken_rs::CoreBPE>> = OnceLock::new();
    BPE.get_or_init(|| tiktoken_rs::o200k_base().ok()).as_ref()
}

/// The tokenizer's count of what the model would read of `request`.
pub(crate) fn estimate(request: &Request) -> u64 {
    let mut texts: Vec<String> = request.system.iter().cloned().collect();
    let mut files = 0;
    for m in &request.messages {
        for p in &m.parts {
            let inner = match p {
                Part::ToolResult(r) => r.content.as_slice(),
                other => std::slice::from_ref(other),
            };
            if let Part::ToolResult(r) = p {
                texts.push(r.call_id.clone());
            }
            for p in inner {
                match p {
                    Part::Text { text } | Part::Refusal { text } => texts.push(text.clone()),
                    Part::ToolCall(c) => texts.push(format!("{}{}", c.name, c.arguments)),
                    Part::Reasoning(r) => texts.push(r.text.clone()),
                    Part::Document(d) => match d.as_text() {
                        Some(text) => texts.push(text),
                        None => files += 1,
                    },
                    Part::Image { .. } => files += 1,
                    _ => {}
                }
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
    words + PER_MESSAGE * request.messages.len() as u64 + PER_FILE * files
}
