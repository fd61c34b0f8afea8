//! How the local model chooses tokens for one call, and when it stops: worked out from the
//! request on the caller's thread, so the model's worker never sees the request itself.

use crate::engine::engine;
use crate::grammar;
use kite_core::{Error, Part, Request, ResponseFormat, Role, ToolChoice};
use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::sampling::LlamaSampler;

/// How tokens are chosen, and when generation stops.
pub(crate) struct Plan {
    /// The tool-call grammar, and whether the model must call (else it may answer first).
    grammar: Option<(String, bool)>,
    temperature: Option<f64>,
    top_p: Option<f64>,
    top_k: Option<u32>,
    frequency_penalty: f32,
    presence_penalty: f32,
    seed: Option<i64>,
    pub(crate) max_tokens: Option<u32>,
    pub(crate) stop: Vec<String>,
}

impl Plan {
    pub(crate) fn of(req: &Request) -> Result<Self, Error> {
        if matches!(
            req.response_format,
            Some(ResponseFormat::JsonObject | ResponseFormat::JsonSchema { .. })
        ) {
            return Err(Error::InvalidRequest(
                "the local model cannot hold its answer to a JSON format; use a forced tool \
                 instead"
                    .into(),
            ));
        }
        if let Some(why) = req.foreign_option("local", "the local model") {
            return Err(Error::InvalidRequest(why));
        }
        if let Some(what) = unreadable_question(req) {
            return Err(Error::InvalidRequest(format!(
                "the local model reads text only, and the question carries {what}; ask a \
                 provider that reads it"
            )));
        }
        // The model answers at once: an effort of none, minimal or low asks for little
        // thinking, which that meets (Codex asks for low by default), and a summary alone
        // has none to sum up; more thinking, or a budget for it, would be dropped unseen.
        let little = |e: &str| matches!(e, "none" | "minimal" | "low");
        if req.reasoning.as_ref().is_some_and(|r| {
            r.effort.as_deref().is_some_and(|e| !little(e)) || r.budget_tokens.is_some()
        }) {
            return Err(Error::InvalidRequest(
                "the local model does not reason before it answers; leave out the reasoning \
                 setting (`reasoning_effort`, `reasoning` or `thinking`; --reasoning)"
                    .into(),
            ));
        }
        let has_tools = !req.tools.is_empty();
        let files = crate::cues::named_files(req);
        let grammar = match &req.tool_choice {
            Some(ToolChoice::Required) => {
                Some((grammar::tool_call(&req.tools, None, &files)?, true))
            }
            Some(ToolChoice::Tool(name)) => {
                Some((grammar::tool_call(&req.tools, Some(name), &files)?, true))
            }
            Some(ToolChoice::None) => None,
            // Left to choose, it is made to call when the question asks for a tool.
            _ if has_tools => Some((
                grammar::tool_call(&req.tools, None, &files)?,
                crate::cues::asks_for_a_tool(req),
            )),
            _ => None,
        };
        Ok(Self {
            grammar,
            temperature: req.temperature,
            top_p: req.top_p,
            top_k: req.top_k,
            frequency_penalty: req.frequency_penalty.unwrap_or(0.0) as f32,
            presence_penalty: req.presence_penalty.unwrap_or(0.0) as f32,
            seed: req.seed,
            max_tokens: req.max_tokens,
            stop: req.stop.clone(),
        })
    }
}

impl Plan {
    /// Whether the model writes free text until it opens a call (`auto`): then
    /// [`call_sampler`](Self::call_sampler) takes over once it does.
    pub(crate) fn may_call(&self) -> bool {
        matches!(self.grammar, Some((_, false)))
    }

    /// The grammar when the model must call, then repetition penalty, then greedy choice or
    /// seeded sampling. On `auto`, no grammar: the text is free until the model opens a call.
    ///
    /// llama.cpp's own lazy grammar is not used for that: fed a piece that runs past its
    /// trigger into text the grammar refuses, it throws a C++ exception, which aborts the
    /// process.
    pub(crate) fn sampler(
        &self,
        model: &LlamaModel,
        repeat_penalty: f32,
    ) -> Result<LlamaSampler, Error> {
        match &self.grammar {
            Some((g, true)) => self.chain(model, repeat_penalty, Some(g)),
            _ => self.chain(model, repeat_penalty, None),
        }
    }

    /// On `auto`, once the model has opened a call: the rest of a well-formed call.
    pub(crate) fn call_sampler(
        &self,
        model: &LlamaModel,
        repeat_penalty: f32,
    ) -> Result<LlamaSampler, Error> {
        let rest = self.grammar.as_ref().map(|(g, _)| grammar::after_open(g));
        self.chain(model, repeat_penalty, rest.as_deref())
    }

    fn chain(
        &self,
        model: &LlamaModel,
        repeat_penalty: f32,
        grammar: Option<&str>,
    ) -> Result<LlamaSampler, Error> {
        let mut chain = Vec::new();
        if let Some(g) = grammar {
            // Only tokens the grammar allows are candidates, so the grammar never refuses
            // the token chosen.
            chain.push(
                LlamaSampler::grammar(model, g, "root")
                    .map_err(engine("the tool grammar does not compile"))?,
            );
        }
        if repeat_penalty != 1.0 || self.frequency_penalty != 0.0 || self.presence_penalty != 0.0 {
            chain.push(LlamaSampler::penalties(
                model.n_vocab(),
                64,
                repeat_penalty,
                self.frequency_penalty,
                self.presence_penalty,
            ));
        }
        match self.temperature {
            Some(t) if t > 0.0 => {
                if let Some(k) = self.top_k {
                    chain.push(LlamaSampler::top_k(i32::try_from(k).unwrap_or(i32::MAX)));
                }
                if let Some(p) = self.top_p {
                    chain.push(LlamaSampler::top_p(p as f32, 1));
                }
                chain.push(LlamaSampler::temp(t as f32));
                let seed = self.seed.map_or_else(rand_seed, |s| s as u32);
                chain.push(LlamaSampler::dist(seed));
            }
            _ => chain.push(LlamaSampler::greedy()),
        }
        Ok(LlamaSampler::chain_simple(chain))
    }
}

/// What the newest user message carries that the model cannot read: an image, or a
/// document that is not text. (Earlier messages keep a placeholder in the prompt, so a
/// conversation begun with another model goes on; the question itself must be readable,
/// or the answer would be a guess about what it cannot see.)
fn unreadable_question(req: &Request) -> Option<&'static str> {
    let question = req.messages.iter().rev().find(|m| m.role == Role::User)?;
    question.parts.iter().find_map(|p| match p {
        Part::Image { .. } => Some("an image"),
        Part::Document(d) if d.as_text().is_none() => Some("a document that is not text"),
        _ => None,
    })
}

fn rand_seed() -> u32 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos())
}

#[cfg(test)]
mod tests {
    use super::Plan;
    use kite_core::{Error, ReasoningConfig, Request};

    #[test]
    fn a_question_with_an_image_is_refused_and_an_earlier_one_is_not() {
        use kite_core::{Message, Part};
        let image = Message::new(
            kite_core::Role::User,
            vec![
                Part::text("What colour is this?"),
                Part::image_url("https://example.com/red.png"),
            ],
        );
        let mut req = Request::new("local");
        req.messages = vec![image.clone()];
        let refused = Plan::of(&req).err();
        assert!(
            matches!(&refused, Some(Error::InvalidRequest(m)) if m.contains("an image")),
            "{refused:?}"
        );
        // Answered by another model, then a question in text: the image stays behind.
        req.messages = vec![
            image,
            Message::assistant("Red."),
            Message::user("And what is 2 + 2?"),
        ];
        assert!(Plan::of(&req).is_ok());
    }

    #[test]
    fn a_reasoning_setting_is_refused_not_dropped() {
        let mut req = Request::new("local");
        assert!(Plan::of(&req).is_ok());
        for asked in [
            ReasoningConfig::effort("high"),
            ReasoningConfig::effort("medium"),
            ReasoningConfig {
                budget_tokens: Some(1024),
                ..ReasoningConfig::default()
            },
        ] {
            req.reasoning = Some(asked);
            let refused = Plan::of(&req).err();
            assert!(
                matches!(&refused, Some(Error::InvalidRequest(m)) if m.contains("does not reason")),
                "{refused:?}"
            );
        }
        for little in ["none", "minimal", "low"] {
            req.reasoning = Some(ReasoningConfig::effort(little));
            assert!(Plan::of(&req).is_ok(), "{little}");
        }
        // A summary alone (Codex asks for one by default) has nothing to sum up.
        req.reasoning = Some(ReasoningConfig {
            summary: Some("auto".into()),
            ..ReasoningConfig::default()
        });
        assert!(Plan::of(&req).is_ok());
    }
}
