//! Skills for programs that bring their own HTTP client: nothing here sends a byte.
//!
//! Built on kite-wire's codecs, for Anthropic Messages, Chat Completions and Responses:
//! [`tools`] and [`system_prompt`] for the request, [`tool_calls`] out of a raw response,
//! [`call_tools`] to run them, and [`assistant_messages`] plus [`results_messages`] to append
//! to the next request. [`run_loop`] does all of it, with the model as an async function
//! from request JSON to response JSON, which is where the program's own client goes:
//!
//! ```no_run
//! use kite_core::{Message, Request};
//! use kite_skills::client::{Format, run_loop};
//! use kite_skills::{RunOptions, Skill, SkillRun, SkillSet};
//! use std::sync::Arc;
//!
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! let mut skills = SkillSet::new();
//! skills.add(Skill::load_dir("skills/release-notes".as_ref())?)?;
//! let run = SkillRun::new(Arc::new(skills), RunOptions::default())?;
//!
//! let http = reqwest::Client::new();
//! let key = std::env::var("ANTHROPIC_API_KEY")?;
//! let model = move |body: serde_json::Value| {
//!     let post = http
//!         .post("https://api.anthropic.com/v1/messages")
//!         .header("x-api-key", &key)
//!         .header("anthropic-version", "2023-06-01")
//!         .json(&body);
//!     async move { post.send().await?.error_for_status()?.json().await }
//! };
//! let request = Request::new("claude-haiku-4-5")
//!     .message(Message::user("Write release notes for version 2.1 from CHANGES.md"));
//! let answer = run_loop(&run, Format::AnthropicMessages, request, 10, model).await?;
//! println!("{}", answer.text());
//! # Ok(()) }
//! ```

use crate::run::SkillRun;
use futures_util::StreamExt;
use kite_agent::{Agent, AgentError, ToolContext, Toolkit};
use kite_core::{Error, EventStream, Message, Model, Request, ToolCall, ToolResult};
use kite_wire::Codec;
use kite_wire::anthropic::Messages;
use kite_wire::openai_chat::ChatCompletions;
use kite_wire::openai_responses::Responses;
use serde_json::Value;
use std::future::Future;

/// A model API's JSON format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// Anthropic Messages (`POST /v1/messages`).
    AnthropicMessages,
    /// OpenAI Chat Completions and the servers like it (`POST /v1/chat/completions`).
    ChatCompletions,
    /// OpenAI Responses (`POST /v1/responses`).
    Responses,
}

impl Format {
    fn codec(self) -> Box<dyn Codec> {
        match self {
            Self::AnthropicMessages => Box::new(Messages::default()),
            Self::ChatCompletions => Box::new(ChatCompletions::default()),
            Self::Responses => Box::new(Responses::default()),
        }
    }

    /// Where a request keeps its conversation.
    fn history_key(self) -> &'static str {
        match self {
            Self::Responses => "input",
            _ => "messages",
        }
    }
}

/// The whole request body (not streamed) for `request`.
pub fn request(format: Format, request: &Request) -> Result<Value, Error> {
    let bytes = format.codec().encode(request, false)?;
    serde_json::from_slice(&bytes).map_err(|e| Error::InvalidRequest(e.to_string()))
}

/// The `tools` parameter for the run's tools, in `format`.
pub fn tools(run: &SkillRun, format: Format) -> Result<Value, Error> {
    let mut probe = Request::new("m").message(Message::user("."));
    probe.tools = run.tools().iter().map(|t| t.spec().clone()).collect();
    let mut body = request(format, &probe)?;
    Ok(body
        .get_mut("tools")
        .map(Value::take)
        .unwrap_or(Value::Null))
}

/// The system prompt for the run's skills: how to use them, and `<available_skills>`.
pub fn system_prompt(run: &SkillRun) -> String {
    run.system_prompt()
}

/// The tool calls in a whole (not streamed) response.
pub fn tool_calls(format: Format, response: &Value) -> Result<Vec<ToolCall>, Error> {
    let body = serde_json::to_vec(response).map_err(|e| Error::Other(e.into()))?;
    let response = format.codec().decode_response(&body)?;
    Ok(response.tool_calls().cloned().collect())
}

/// The response as the messages (or Responses items) that go into the next request.
pub fn assistant_messages(format: Format, response: &Value) -> Result<Vec<Value>, Error> {
    let body = serde_json::to_vec(response).map_err(|e| Error::Other(e.into()))?;
    let response = format.codec().decode_response(&body)?;
    history(format, vec![response.message])
}

/// Tool results as the messages (or Responses items) that go into the next request.
pub fn results_messages(format: Format, results: &[ToolResult]) -> Result<Vec<Value>, Error> {
    history(
        format,
        results.iter().cloned().map(Message::tool_result).collect(),
    )
}

fn history(format: Format, messages: Vec<Message>) -> Result<Vec<Value>, Error> {
    let mut probe = Request::new("m");
    probe.messages = messages;
    let mut body = request(format, &probe)?;
    match body.get_mut(format.history_key()).map(Value::take) {
        Some(Value::Array(items)) => Ok(items),
        _ => Ok(Vec::new()),
    }
}

/// Runs the calls with the run's tools, one after another; a call of an unknown tool or
/// with arguments that are not JSON gets an error result the model can read.
pub async fn call_tools(run: &SkillRun, calls: &[ToolCall]) -> Vec<ToolResult> {
    let tools = run.tools();
    let mut results = Vec::with_capacity(calls.len());
    for call in calls {
        let result = match (
            tools.iter().find(|t| t.spec().name == call.name),
            call.parse_arguments(),
        ) {
            (None, _) => ToolResult::error(&call.id, format!("no tool named {:?}", call.name)),
            (_, Err(e)) => ToolResult::error(&call.id, format!("the arguments are not JSON: {e}")),
            (Some(tool), Ok(args)) => {
                let ctx = ToolContext {
                    context: std::sync::Arc::new(()),
                    call_id: call.id.clone(),
                    cancel: Default::default(),
                };
                match tool.call(args, ctx).await {
                    Ok(out) => ToolResult {
                        call_id: call.id.clone(),
                        name: Some(call.name.clone()),
                        content: out.content,
                        is_error: out.is_error,
                    },
                    Err(e) => ToolResult::error(&call.id, e.to_string()),
                }
            }
        };
        results.push(result);
    }
    results
}

/// Asks `model` (request JSON in, response JSON out) and runs the skills' tools it calls,
/// until it answers or has been asked `max_calls` times. The skills' system prompt goes
/// after `request`'s own.
pub async fn run_loop<F, Fut, E>(
    run: &SkillRun,
    format: Format,
    request: Request,
    max_calls: u32,
    model: F,
) -> Result<kite_agent::Run, AgentError>
where
    F: Fn(Value) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Value, E>> + Send + 'static,
    E: std::fmt::Display,
{
    let history = request.messages.clone();
    let name = request.model.clone();
    let agent = Agent::new(FnModel { format, model }, name)
        .configure(|r| {
            *r = Request {
                messages: Vec::new(),
                ..request
            }
        })
        .max_turns(max_calls)
        .toolkit(run);
    agent.run((), history).await
}

/// A model that is a function from request JSON to response JSON.
struct FnModel<F> {
    format: Format,
    model: F,
}

impl<F, Fut, E> Model for FnModel<F>
where
    F: Fn(Value) -> Fut + Send + Sync,
    Fut: Future<Output = Result<Value, E>> + Send + 'static,
    E: std::fmt::Display,
{
    fn stream(&self, req: &Request) -> EventStream {
        let format = self.format;
        let call = request(format, req).map(|body| (self.model)(body));
        let answer = async move {
            let answer = call?
                .await
                .map_err(|e| Error::Other(format!("the model function failed: {e}").into()))?;
            let body = serde_json::to_vec(&answer).map_err(|e| Error::Other(e.into()))?;
            format.codec().decode_whole(&body)
        };
        Box::pin(futures_util::stream::once(answer).flat_map(|events| {
            let items: Vec<Result<_, Error>> = match events {
                Ok(events) => events.into_iter().map(Ok).collect(),
                Err(e) => vec![Err(e)],
            };
            futures_util::stream::iter(items)
        }))
    }
}
