//! What servers may ask of the model ([`SamplingLimits`]), held by the hub around whatever
//! [`Sampler`] answers them: each answer at most `max_tokens` long (a server that asks for
//! more gets that many), at most `max_requests` answers while one tool call of the server
//! runs (counted afresh at each of its calls), and at most `max_cost` dollars in all, as the
//! sampler prices its answers (`Usage::cost`). A request past a limit is refused, and the
//! server hears why; the model is never asked.

use crate::Sampler;
use kite_core::{ModelFuture, Request, Response};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// What servers may ask of the model.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SamplingLimits {
    /// The most tokens one answer may have (default 4,096).
    pub max_tokens: u32,
    /// The most answers a server may ask for during one of its tool calls, and between two
    /// (default 3).
    pub max_requests: u32,
    /// The most dollars all answers may cost together, as the sampler prices them (none:
    /// no limit).
    pub max_cost: Option<f64>,
}

impl Default for SamplingLimits {
    fn default() -> Self {
        Self {
            max_tokens: 4_096,
            max_requests: 3,
            max_cost: None,
        }
    }
}

/// A sampler held to limits.
pub(crate) struct Limited {
    inner: Arc<dyn Sampler>,
    limits: SamplingLimits,
    state: Arc<Mutex<State>>,
}

#[derive(Default)]
struct State {
    /// Answers asked by each server since its last tool call began.
    asked: HashMap<String, u32>,
    /// Dollars the answers have cost.
    spent: f64,
}

impl Limited {
    pub(crate) fn new(inner: Arc<dyn Sampler>, limits: SamplingLimits) -> Self {
        Self {
            inner,
            limits,
            state: Arc::default(),
        }
    }

    /// A tool call of `server` begins: its answers are counted afresh.
    pub(crate) fn call_begins(&self, server: &str) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.asked.remove(server);
    }
}

impl Sampler for Limited {
    fn sample(
        &self,
        server: &str,
        mut request: Request,
    ) -> ModelFuture<'static, Result<Response, kite_core::Error>> {
        let refused = |why: String| -> ModelFuture<'static, Result<Response, kite_core::Error>> {
            tracing::warn!(server, "a sampling request was refused: {why}");
            Box::pin(std::future::ready(Err(kite_core::Error::InvalidRequest(
                why,
            ))))
        };
        {
            let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(max) = self.limits.max_cost
                && state.spent >= max
            {
                return refused(format!(
                    "the model's answers to MCP servers have cost ${:.4}, their limit ${max}",
                    state.spent
                ));
            }
            let asked = state.asked.entry(server.to_owned()).or_default();
            if *asked >= self.limits.max_requests {
                return refused(format!(
                    "server {server:?} asked for more than {} of the model's answers in one \
                     tool call",
                    self.limits.max_requests
                ));
            }
            *asked += 1;
        }
        let cap = self.limits.max_tokens;
        request.max_tokens = Some(request.max_tokens.map_or(cap, |asked| asked.min(cap)));
        let answer = self.inner.sample(server, request);
        let state = self.state.clone();
        Box::pin(async move {
            let response = answer.await?;
            let mut state = state.lock().unwrap_or_else(|e| e.into_inner());
            state.spent += response.usage.cost.unwrap_or(0.0);
            Ok(response)
        })
    }
}
