//! A model that plays a script, for tests of code built on kite.

use futures_util::StreamExt;
use kite_core::{
    Error, Event, EventStream, FinishReason, Message, Model, Part, Request, Response, Role,
    ToolCall, Usage,
};
use serde_json::Value;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

type Check = Box<dyn Fn(&Request) -> Result<(), String> + Send>;

enum Reply {
    Response(Box<Response>),
    Error(Error),
    /// A stream that never yields: for cancellation tests.
    Hang,
}

struct Step {
    reply: Reply,
    check: Option<Check>,
}

#[derive(Default)]
struct Script {
    steps: VecDeque<Step>,
    requests: Vec<Request>,
}

impl Drop for Script {
    fn drop(&mut self) {
        if !self.steps.is_empty() && !std::thread::panicking() {
            panic!(
                "ScriptedModel: {} scripted repl{} never requested (the code under test made {} model call{})",
                self.steps.len(),
                if self.steps.len() == 1 {
                    "y was"
                } else {
                    "ies were"
                },
                self.requests.len(),
                if self.requests.len() == 1 { "" } else { "s" },
            );
        }
    }
}

/// A [`Model`] that answers with scripted replies, in order, and fails the test on a call
/// beyond the script (a panic naming it), on a request a check rejects, or — when the last
/// clone is dropped — on replies never requested.
///
/// ```
/// use kite_testkit::ScriptedModel;
/// use serde_json::json;
///
/// let model = ScriptedModel::new()
///     .tool_calls(&[("call_1", "weather", json!({"city": "Paris"}))])
///     .expect(|req| req.tools.iter().any(|t| t.name == "weather"))
///     .text("It is sunny in Paris.");
/// # model.skip_rest();
/// ```
#[derive(Clone, Default)]
pub struct ScriptedModel {
    script: Arc<Mutex<Script>>,
}

impl ScriptedModel {
    /// An empty script.
    pub fn new() -> Self {
        Self::default()
    }

    fn push(self, reply: Reply) -> Self {
        self.lock().steps.push_back(Step { reply, check: None });
        self
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Script> {
        self.script.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Next, answer with this response.
    pub fn respond(self, response: Response) -> Self {
        self.push(Reply::Response(Box::new(response)))
    }

    /// Next, answer with text.
    pub fn text(self, text: &str) -> Self {
        self.respond(response(vec![Part::text(text)], FinishReason::Stop))
    }

    /// Next, ask for these tool calls: `(id, name, arguments)`.
    pub fn tool_calls(self, calls: &[(&str, &str, Value)]) -> Self {
        let parts = calls
            .iter()
            .map(|(id, name, args)| Part::ToolCall(ToolCall::new(*id, *name, args.to_string())))
            .collect();
        self.respond(response(parts, FinishReason::ToolCalls))
    }

    /// Next, ask for a tool call whose arguments are this raw text (to test bad JSON).
    pub fn raw_tool_call(self, id: &str, name: &str, arguments: &str) -> Self {
        let parts = vec![Part::ToolCall(ToolCall::new(id, name, arguments))];
        self.respond(response(parts, FinishReason::ToolCalls))
    }

    /// Next, fail with this error.
    pub fn error(self, error: Error) -> Self {
        self.push(Reply::Error(error))
    }

    /// Next, stream nothing, ever (until the caller gives up).
    pub fn hang(self) -> Self {
        self.push(Reply::Hang)
    }

    /// Checks the request of the step added last; a `false` fails the test.
    pub fn expect(self, check: impl Fn(&Request) -> bool + Send + 'static) -> Self {
        self.expect_that(move |r| {
            if check(r) {
                Ok(())
            } else {
                Err("the request did not pass the check".into())
            }
        })
    }

    /// Checks the request of the step added last; an `Err` fails the test with its message.
    pub fn expect_that(
        self,
        check: impl Fn(&Request) -> Result<(), String> + Send + 'static,
    ) -> Self {
        if let Some(step) = self.lock().steps.back_mut() {
            step.check = Some(Box::new(check));
        }
        self
    }

    /// The requests received so far.
    pub fn requests(&self) -> Vec<Request> {
        self.lock().requests.clone()
    }

    /// How many scripted replies are left.
    pub fn remaining(&self) -> usize {
        self.lock().steps.len()
    }

    /// Drops the unplayed rest of the script, so that leaving it unused is not a failure.
    pub fn skip_rest(&self) {
        self.lock().steps.clear();
    }
}

fn response(parts: Vec<Part>, finish_reason: FinishReason) -> Response {
    Response {
        id: None,
        model: Some("scripted".into()),
        message: Message::new(Role::Assistant, parts),
        finish_reason,
        usage: Usage {
            input_tokens: 10,
            output_tokens: 5,
            total_tokens: 15,
            ..Usage::default()
        },
    }
}

impl Model for ScriptedModel {
    fn stream(&self, request: &Request) -> EventStream {
        let step = {
            let mut script = self.lock();
            script.requests.push(request.clone());
            let n = script.requests.len();
            match script.steps.pop_front() {
                Some(step) => step,
                None => {
                    drop(script);
                    panic!(
                        "ScriptedModel: unexpected model call #{n}; the last message was {:?}",
                        request.messages.last()
                    );
                }
            }
        };
        if let Some(check) = &step.check
            && let Err(why) = check(request)
        {
            panic!("ScriptedModel: request rejected: {why}\nrequest: {request:#?}");
        }
        match step.reply {
            Reply::Response(r) => {
                let events: Vec<Result<Event, Error>> =
                    r.into_events().into_iter().map(Ok).collect();
                futures_util::stream::iter(events).boxed()
            }
            Reply::Error(e) => futures_util::stream::iter([Err(e)]).boxed(),
            Reply::Hang => futures_util::stream::pending().boxed(),
        }
    }
}
