//! What kite knows of models: some each provider serves, with their context windows (for
//! compaction and `kite models`), and the provider's own list (`GET /models`).
//!
//! The table is short on purpose: it names models kite has recorded traffic from and the
//! families they belong to; a model missing from it works all the same, and only its
//! context window is unknown.

use super::catalog::{Endpoint, Provider};
use super::{Anthropic, HttpModel, OpenAiCompatible};
use kite_core::Error;
use kite_wire::Api;
use kite_wire::openai_chat::Dialect;

/// A model kite knows, and how many tokens a call to it may hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KnownModel {
    /// The name the provider's API takes.
    pub name: &'static str,
    /// Prompt and answer together, in tokens.
    pub context_window: u32,
}

const fn m(name: &'static str, context_window: u32) -> KnownModel {
    KnownModel {
        name,
        context_window,
    }
}

const OPENAI: &[KnownModel] = &[
    m("gpt-4o-mini", 128_000),
    m("gpt-4o", 128_000),
    m("gpt-4.1", 1_047_576),
    m("gpt-4.1-mini", 1_047_576),
    m("gpt-4.1-nano", 1_047_576),
    m("gpt-5", 400_000),
    m("gpt-5-mini", 400_000),
    m("gpt-5-nano", 400_000),
    m("o3", 200_000),
    m("o4-mini", 200_000),
    m("o3-deep-research", 200_000),
    m("o4-mini-deep-research", 200_000),
];

const ANTHROPIC: &[KnownModel] = &[
    m("claude-haiku-4-5", 200_000),
    m("claude-sonnet-4-5", 200_000),
    m("claude-sonnet-4-0", 200_000),
    m("claude-opus-4-1", 200_000),
];

const MISTRAL: &[KnownModel] = &[
    m("mistral-small-latest", 128_000),
    m("mistral-medium-latest", 128_000),
    m("mistral-large-latest", 128_000),
    m("magistral-medium-latest", 128_000),
    m("codestral-latest", 256_000),
];

const OPENROUTER: &[KnownModel] = &[
    m("openai/gpt-4o-mini", 128_000),
    m("openai/gpt-5-mini", 400_000),
    m("anthropic/claude-haiku-4.5", 200_000),
    m("mistralai/mistral-small", 128_000),
];

const GROQ: &[KnownModel] = &[
    m("llama-3.3-70b-versatile", 131_072),
    m("llama-3.1-8b-instant", 131_072),
    m("openai/gpt-oss-120b", 131_072),
    m("openai/gpt-oss-20b", 131_072),
];

impl Provider {
    /// Models kite knows this provider serves, its default first.
    pub fn known_models(self) -> &'static [KnownModel] {
        match self {
            Provider::OpenAi | Provider::OpenAiResponses => OPENAI,
            Provider::Anthropic => ANTHROPIC,
            Provider::Mistral => MISTRAL,
            Provider::OpenRouter => OPENROUTER,
            Provider::Groq => GROQ,
        }
    }

    /// The provider a model's name belongs to, by the models kite knows and the names
    /// each provider gives its own (`gpt-`, `claude-`, `mistral-`...); `None` for a name of
    /// no provider kite knows (a local server's, say).
    pub fn serving(model: &str) -> Option<Provider> {
        let known = [
            Provider::OpenAi,
            Provider::Anthropic,
            Provider::Mistral,
            Provider::Groq,
            Provider::OpenRouter,
        ];
        if let Some(p) = known
            .into_iter()
            .find(|p| p.known_models().iter().any(|m| m.name == model))
        {
            return Some(p);
        }
        let starts = |prefixes: &[&str]| prefixes.iter().any(|p| model.starts_with(p));
        if starts(&[
            "gpt-",
            "o1",
            "o3",
            "o4",
            "chatgpt-",
            "codex-",
            "text-embedding-",
        ]) {
            Some(Provider::OpenAi)
        } else if starts(&["claude-"]) {
            Some(Provider::Anthropic)
        } else if starts(&[
            "mistral-",
            "codestral",
            "magistral",
            "ministral",
            "pixtral",
            "devstral",
        ]) {
            Some(Provider::Mistral)
        } else {
            None
        }
    }

    /// The models the provider itself lists (`GET /models`), with the key from the
    /// environment, at `endpoint`. Anthropic's list is read page by page.
    pub async fn list_models(self, endpoint: &Endpoint) -> Result<Vec<String>, Error> {
        let base = endpoint.base_url.as_deref().unwrap_or(self.base_url());
        match self {
            Provider::Anthropic => {
                let m = self.connect(Anthropic::new(base), endpoint)?;
                let mut ids = Vec::new();
                let mut query = "?limit=1000".to_owned();
                // At most 50 pages: a server that says "more" for ever is not followed.
                for _ in 0..50 {
                    let page = list_page(&m, &query).await?;
                    let last = page.ids.last().cloned();
                    ids.extend(page.ids);
                    match (page.more, last) {
                        (true, Some(last)) => query = format!("?limit=1000&after_id={last}"),
                        _ => break,
                    }
                }
                ids.sort();
                Ok(ids)
            }
            _ => {
                let m = OpenAiCompatible::new(base, Dialect::Compatible);
                self.connect(m, endpoint)?.list_models().await
            }
        }
    }
}

impl<A: Api + Clone> HttpModel<A> {
    /// The models the server at this model's URL lists (`GET /models` beside the API's
    /// path), sorted.
    pub async fn list_models(&self) -> Result<Vec<String>, Error> {
        let mut ids = list_page(self, "").await?.ids;
        ids.sort();
        Ok(ids)
    }
}

/// One page of a `/models` answer: `data[].id` (OpenAI's shape, which Anthropic shares), and
/// whether there are more (`has_more`, Anthropic's).
struct Page {
    ids: Vec<String>,
    more: bool,
}

async fn list_page<A: Api + Clone>(m: &HttpModel<A>, query: &str) -> Result<Page, Error> {
    let body = m
        .get_beside(&format!("/models{query}"))
        .await?
        .bytes()
        .await?;
    let bad = |why: &str| {
        Error::decode(
            format!("the list of models is not what was expected: {why}"),
            &body,
        )
    };
    let listing: serde_json::Value =
        serde_json::from_slice(&body).map_err(|e| bad(&e.to_string()))?;
    let data = listing["data"]
        .as_array()
        .ok_or_else(|| bad("no `data` list"))?;
    Ok(Page {
        ids: data
            .iter()
            .filter_map(|e| e["id"].as_str().map(str::to_owned))
            .collect(),
        more: listing["has_more"].as_bool().unwrap_or(false),
    })
}

/// The context window of `model`, if kite knows it: by its name, or a dated snapshot of
/// a known name (`claude-haiku-4-5-20251001`).
pub fn context_window(model: &str) -> Option<u32> {
    let all = [OPENAI, ANTHROPIC, MISTRAL, OPENROUTER, GROQ];
    let known = || all.iter().flat_map(|l| l.iter());
    known()
        .find(|k| k.name == model)
        .or_else(|| {
            known()
                .filter(|k| {
                    model.strip_prefix(k.name).is_some_and(|rest| {
                        rest.starts_with('-')
                            && rest[1..].chars().all(|c| c.is_ascii_digit() || c == '-')
                    })
                })
                .max_by_key(|k| k.name.len())
        })
        .map(|k| k.context_window)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snapshots_of_known_models_have_their_windows_and_others_none() {
        assert_eq!(context_window("gpt-4o"), Some(128_000));
        assert_eq!(context_window("claude-haiku-4-5-20251001"), Some(200_000));
        assert_eq!(context_window("gpt-4o-2024-08-06"), Some(128_000));
        assert_eq!(context_window("gpt-4o-mini-tts"), None);
        assert_eq!(context_window("gpt-4o-"), Some(128_000));
        assert_eq!(context_window("mystery"), None);
        for p in Provider::ALL {
            assert_eq!(p.known_models()[0].name, p.default_model(), "{p:?}");
        }
    }
}
