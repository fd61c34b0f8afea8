//! Servers' requests for the model's answer (sampling): shown on the terminal and answered
//! only once a person says yes (or, with `[mcp.sampling] ask = false`, at once), each
//! priced at the model's price so that the hub holds them to `[mcp.sampling] max_cost`.
//! Without a terminal to ask on, they are refused. The hub also caps each answer's tokens
//! and how many one tool call may ask for (`kite_mcp::SamplingLimits`).

use crate::terminal::output::{err, errln};
use crate::terminal::text::printable;
use kite::mcp::{ModelSampler, Sampler};
use kite::{Model, ModelFuture, Request, Response};
use std::io::{BufRead, IsTerminal, Write};
use std::sync::Arc;

/// Answers sampling with the session's model, once approved, and prices the answers.
pub(super) struct Approving {
    model: ModelSampler,
    provider: String,
    price: kite::agent::Pricer,
    ask: bool,
}

impl Approving {
    pub(super) fn new(
        model: Arc<dyn Model>,
        name: String,
        price: kite::agent::Pricer,
        ask: bool,
    ) -> Self {
        Self {
            provider: model.origin().provider,
            model: ModelSampler::new(model, name),
            price,
            ask,
        }
    }
}

impl Sampler for Approving {
    fn sample(
        &self,
        server: &str,
        request: Request,
    ) -> ModelFuture<'static, Result<Response, kite::Error>> {
        let refuse = |why: String| -> ModelFuture<'static, Result<Response, kite::Error>> {
            Box::pin(std::future::ready(Err(kite::Error::InvalidRequest(why))))
        };
        if self.ask {
            if !std::io::stdin().is_terminal() {
                errln!(
                    "kite: MCP server {server:?} asked for the model's answer (refused: no \
                     terminal to ask on; [mcp.sampling] ask = false answers without asking)"
                );
                return refuse("the person using kite was not there to allow it".into());
            }
            if !approved(server, &request) {
                return refuse("the person using kite did not allow it".into());
            }
        }
        let (provider, price) = (self.provider.clone(), self.price.clone());
        let answer = self.model.sample(server, request);
        Box::pin(async move {
            let mut response = answer.await?;
            let model = response.model.clone().unwrap_or_default();
            if response.usage.cost.is_none() {
                response.usage.cost = price(&provider, &model, &response.usage);
            }
            Ok(response)
        })
    }
}

/// Asks on the terminal whether `server` may have the model answer `request`.
fn approved(server: &str, request: &Request) -> bool {
    let asked: String = request
        .messages
        .last()
        .map(|m| m.text())
        .unwrap_or_default()
        .chars()
        .take(300)
        .collect();
    // What the server wrote is shown, never obeyed.
    errln!(
        "\nkite: MCP server {server:?} asks the model to answer (at most {} tokens): {}",
        request.max_tokens.unwrap_or_default(),
        printable(&asked)
    );
    err!("allow it? [y]es, [N]o: ");
    let _ = std::io::stderr().flush();
    let mut line = String::new();
    match std::io::stdin().lock().read_line(&mut line) {
        Ok(n) if n > 0 => matches!(line.trim(), "y" | "yes"),
        _ => false,
    }
}
