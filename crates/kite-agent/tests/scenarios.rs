//! The loop's behaviour, scenario by scenario, against a scripted model.

use futures_util::StreamExt;
use kite_agent::{
    Agent, AgentError, AgentEvent, CallStatus, CancellationToken, Conversation, Flow, Hooks, Run,
    StopReason, ToolDecision, ToolError, ToolOutput, ToolRecord, tool,
};
use kite_core::{FinishReason, Message, Part, Request, Role, ToolCall, ToolResult};
use kite_testkit::ScriptedModel;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

#[derive(Deserialize, JsonSchema)]
struct City {
    /// A city name.
    city: String,
}

fn weather<C: Send + Sync + 'static>() -> impl kite_agent::Tool<C> {
    tool(
        "weather",
        "Current weather for a city",
        |a: City, _| async move {
            if a.city.is_empty() {
                return Err(ToolError::model("no city given"));
            }
            Ok(format!("Sunny in {}", a.city))
        },
    )
}

fn agent(model: &ScriptedModel) -> Agent {
    Agent::new(model.clone(), "m")
        .system("Be brief.")
        .tool(weather())
}

/// The tool results the model was sent in its last request.
fn sent_results(req: &Request) -> Vec<ToolResult> {
    req.messages
        .iter()
        .flat_map(|m| &m.parts)
        .filter_map(|p| match p {
            Part::ToolResult(r) => Some(r.clone()),
            _ => None,
        })
        .collect()
}

/// Runs a scenario twice, buffered and streamed, each with a fresh agent from `make`, and
/// checks that both give the same history, usage, tool records, stop reason and context.
async fn both<C>(make: impl Fn() -> Agent<C>, context: C, prompt: &str) -> Run<C>
where
    C: Clone + PartialEq + std::fmt::Debug + Send + Sync + 'static,
{
    let history = vec![Message::user(prompt)];
    let buffered = make().run(context.clone(), history.clone()).await.unwrap();
    let mut stream = make().run_stream(context, history);
    let mut streamed = None;
    while let Some(ev) = stream.next().await {
        if let AgentEvent::Done(run) = ev.unwrap() {
            streamed = Some(run);
        }
    }
    let streamed = streamed.expect("a streamed run ends with Done");
    assert_eq!(streamed.messages(), buffered.messages(), "history");
    assert_eq!(streamed.usage(), buffered.usage(), "usage");
    assert_eq!(
        streamed.stop_reason(),
        buffered.stop_reason(),
        "stop reason"
    );
    assert_eq!(streamed.context, buffered.context, "context");
    let strip = |r: &Run<C>| -> Vec<(ToolCall, ToolResult, CallStatus)> {
        r.tool_calls()
            .iter()
            .map(|t| (t.call.clone(), t.result.clone(), t.status.clone()))
            .collect()
    };
    assert_eq!(strip(&streamed), strip(&buffered), "tool records");
    buffered
}

#[tokio::test]
async fn multi_step_tool_use() {
    let script = || {
        ScriptedModel::new()
            .tool_calls(&[("c1", "weather", json!({"city": "Paris"}))])
            .expect(|r| r.system.as_deref() == Some("Be brief.") && r.tools[0].name == "weather")
            .text("It is sunny in Paris.")
            .expect(|r| sent_results(r)[0].text_content() == "Sunny in Paris")
    };
    let run = both(|| agent(&script()), (), "Weather in Paris?").await;

    assert_eq!(run.text(), "It is sunny in Paris.");
    assert_eq!(
        run.stop_reason(),
        Some(StopReason::Finished {
            finish_reason: FinishReason::Stop
        })
    );
    let roles: Vec<Role> = run.messages().iter().map(|m| m.role).collect();
    assert_eq!(
        roles,
        [Role::User, Role::Assistant, Role::Tool, Role::Assistant]
    );
    assert!(
        run.messages().iter().all(|m| m.role != Role::System),
        "system is never stored"
    );
    assert_eq!(run.turns(), 2);
    assert_eq!(
        run.usage().total_tokens,
        30,
        "usage is summed over model calls"
    );
    let rec = &run.tool_calls()[0];
    assert_eq!(
        (rec.turn, rec.call.name.as_str(), rec.status.clone()),
        (1, "weather", CallStatus::Ran)
    );
    assert_eq!(rec.result.text_content(), "Sunny in Paris");
    assert_eq!(rec.result.name.as_deref(), Some("weather"));
}

#[tokio::test]
async fn parallel_calls_run_together_up_to_the_bound_and_return_in_call_order() {
    for (bound, expected_peak) in [(3, 3), (1, 1)] {
        let in_flight = Arc::new(AtomicUsize::new(0));
        let peak = Arc::new(AtomicUsize::new(0));
        let (f, p) = (in_flight.clone(), peak.clone());
        let slow = tool(
            "slow",
            "waits",
            move |a: City, _: kite_agent::ToolContext<()>| {
                let (f, p) = (f.clone(), p.clone());
                async move {
                    let now = f.fetch_add(1, Ordering::SeqCst) + 1;
                    p.fetch_max(now, Ordering::SeqCst);
                    // Later calls finish first, so order must come from the loop, not timing.
                    let wait = match a.city.as_str() {
                        "a" => 60,
                        "b" => 30,
                        _ => 5,
                    };
                    tokio::time::sleep(Duration::from_millis(wait)).await;
                    f.fetch_sub(1, Ordering::SeqCst);
                    Ok(a.city)
                }
            },
        );
        let model = ScriptedModel::new()
            .tool_calls(&[
                ("1", "slow", json!({"city": "a"})),
                ("2", "slow", json!({"city": "b"})),
                ("3", "slow", json!({"city": "c"})),
            ])
            .text("done");
        let run = Agent::new(model.clone(), "m")
            .tool(slow)
            .concurrency(bound)
            .ask("go")
            .await
            .unwrap();
        assert_eq!(peak.load(Ordering::SeqCst), expected_peak, "bound {bound}");
        let order: Vec<String> = run
            .tool_calls()
            .iter()
            .map(|r| r.result.text_content())
            .collect();
        assert_eq!(order, ["a", "b", "c"]);
        let sent: Vec<String> = sent_results(&model.requests()[1])
            .iter()
            .map(|r| r.call_id.clone())
            .collect();
        assert_eq!(sent, ["1", "2", "3"]);
    }
}

#[tokio::test]
async fn bad_arguments_go_back_to_the_model_which_recovers() {
    let script = || {
        ScriptedModel::new()
            .raw_tool_call("c1", "weather", "{\"city\": \"Par")
            .tool_calls(&[("c2", "weather", json!({"city": 5}))])
            .expect_that(|r| {
                let res = &sent_results(r)[0];
                (res.is_error && res.text_content().contains("not valid JSON"))
                    .then_some(())
                    .ok_or(format!("{res:?}"))
            })
            .tool_calls(&[("c3", "weather", json!({"city": "Paris"}))])
            .expect_that(|r| {
                let res = &sent_results(r)[1];
                (res.is_error
                    && res
                        .text_content()
                        .contains("do not match the tool's schema"))
                .then_some(())
                .ok_or(format!("{res:?}"))
            })
            .text("Sunny.")
    };
    let run = both(|| agent(&script()), (), "Weather?").await;
    let statuses: Vec<CallStatus> = run.tool_calls().iter().map(|r| r.status.clone()).collect();
    assert_eq!(
        statuses,
        [CallStatus::Refused, CallStatus::Refused, CallStatus::Ran]
    );
    assert_eq!(run.text(), "Sunny.");
}

#[tokio::test]
async fn errors_meant_for_the_model_and_unknown_tools_are_results() {
    let script = || {
        ScriptedModel::new()
            .tool_calls(&[
                ("c1", "weather", json!({"city": ""})),
                ("c2", "teleport", json!({"to": "Mars"})),
            ])
            .text("Sorry.")
            .expect_that(|r| {
                let res = sent_results(r);
                let ok = res[0].is_error
                    && res[0].text_content() == "no city given"
                    && res[1].is_error
                    && res[1]
                        .text_content()
                        .contains("unknown tool `teleport`; the tools are: weather");
                ok.then_some(()).ok_or(format!("{res:?}"))
            })
    };
    let run = both(|| agent(&script()), (), "?").await;
    assert_eq!(run.text(), "Sorry.");
}

#[tokio::test]
async fn the_turn_limit_is_an_outcome() {
    let script = || {
        ScriptedModel::new()
            .tool_calls(&[("c1", "weather", json!({"city": "A"}))])
            .tool_calls(&[("c2", "weather", json!({"city": "B"}))])
    };
    let run = both(|| agent(&script()).max_turns(2), (), "loop").await;
    assert_eq!(
        run.stop_reason(),
        Some(StopReason::TurnLimit { max_turns: 2 })
    );
    assert_eq!(run.turns(), 2);
    assert_eq!(
        run.messages().last().unwrap().role,
        Role::Tool,
        "every call has its result"
    );

    // The caller may grant more turns and go on.
    let model2 = ScriptedModel::new().text("Finally.");
    let mut run = run;
    run.extend_turns(1);
    agent(&model2).drive(&mut run).await.unwrap();
    assert_eq!(run.text(), "Finally.");
}

struct StopAfterFirstResult;
impl Hooks<()> for StopAfterFirstResult {
    fn on_tool_result(&self, _: &mut (), _: &ToolCall, result: &mut ToolResult) -> Flow {
        result.content = vec![Part::text("[redacted by hook]")];
        Flow::Stop("seen enough".into())
    }
}

#[tokio::test]
async fn a_hook_can_rewrite_a_result_and_stop_the_run() {
    let script = || ScriptedModel::new().tool_calls(&[("c1", "weather", json!({"city": "Paris"}))]);
    // A second model call would fail the scripted model: the run really stops.
    let run = both(|| agent(&script()).hook(StopAfterFirstResult), (), "?").await;
    assert_eq!(
        run.stop_reason(),
        Some(StopReason::Hook {
            message: "seen enough".into()
        })
    );
    assert_eq!(
        run.tool_calls()[0].result.text_content(),
        "[redacted by hook]"
    );
}

struct Rewrite;
impl Hooks<()> for Rewrite {
    fn before_model(&self, _: &mut (), request: &mut Request) -> Flow {
        request.temperature = Some(0.0);
        Flow::Continue
    }
    fn before_tool(&self, _: &mut (), call: &mut ToolCall) -> ToolDecision {
        call.arguments = call.arguments.to_uppercase().replace("CITY", "city");
        ToolDecision::Run
    }
    fn on_assistant_message(&self, _: &mut (), message: &Message) -> Flow {
        if message.text().contains("forbidden") {
            Flow::Stop("policy".into())
        } else {
            Flow::Continue
        }
    }
}

#[tokio::test]
async fn hooks_rewrite_requests_and_arguments_and_can_stop_on_a_message() {
    let script = || {
        ScriptedModel::new()
            .tool_calls(&[("c1", "weather", json!({"city": "paris"}))])
            .expect(|r| r.temperature == Some(0.0))
            .text("a forbidden answer")
    };
    let run = both(|| agent(&script()).hook(Rewrite), (), "?").await;
    assert_eq!(run.tool_calls()[0].result.text_content(), "Sunny in PARIS");
    assert_eq!(run.tool_calls()[0].call.arguments, r#"{"city":"PARIS"}"#);
    assert_eq!(
        run.stop_reason(),
        Some(StopReason::Hook {
            message: "policy".into()
        })
    );
    assert_eq!(
        run.text(),
        "a forbidden answer",
        "the stopped message is kept"
    );
}

#[derive(Clone, Default, Serialize, Deserialize, PartialEq, Debug)]
struct Session {
    user: String,
    deleted: Vec<String>,
    model_calls: u32,
}

#[derive(Deserialize, JsonSchema)]
struct Path {
    path: String,
}

fn delete_tool(log: Arc<Mutex<Vec<String>>>) -> impl kite_agent::Tool<Session> {
    tool(
        "delete",
        "Delete a file",
        move |a: Path, ctx: kite_agent::ToolContext<Session>| {
            let log = log.clone();
            async move {
                log.lock()
                    .unwrap()
                    .push(format!("{} deleted {}", ctx.context.user, a.path));
                let path = a.path.clone();
                Ok(ToolOutput::text("deleted")
                    .with_patch(move |s: &mut Session| s.deleted.push(path)))
            }
        },
    )
}

struct AskFirst;
impl Hooks<Session> for AskFirst {
    fn before_model(&self, ctx: &mut Session, _: &mut Request) -> Flow {
        ctx.model_calls += 1;
        Flow::Continue
    }
    fn before_tool(&self, _: &mut Session, call: &mut ToolCall) -> ToolDecision {
        if call.name == "delete" {
            ToolDecision::Defer
        } else {
            ToolDecision::Run
        }
    }
}

#[tokio::test]
async fn a_run_deferred_for_approval_is_stored_and_resumed_elsewhere() {
    let log = Arc::new(Mutex::new(Vec::new()));
    let model = ScriptedModel::new().tool_calls(&[
        ("c1", "delete", json!({"path": "a.txt"})),
        ("c2", "delete", json!({"path": "b.txt"})),
    ]);
    let session = Session {
        user: "ana".into(),
        ..Session::default()
    };
    let agent = Agent::with_context(model.clone(), "m")
        .tool(delete_tool(log.clone()))
        .hook(AskFirst);
    let run = agent
        .run(session, vec![Message::user("clean up")])
        .await
        .unwrap();
    assert_eq!(
        run.stop_reason(),
        Some(StopReason::AwaitingApproval {
            call_ids: vec!["c1".into(), "c2".into()]
        })
    );
    assert!(
        log.lock().unwrap().is_empty(),
        "nothing runs before approval"
    );
    let stored = serde_json::to_string(&run).unwrap();
    drop(run);

    // Another process: a new agent, the stored run, a person's decisions.
    let model2 = ScriptedModel::new()
        .text("Deleted a.txt; b.txt was kept.")
        .expect_that(|r| {
            let res = sent_results(r);
            (res[0].text_content() == "deleted" && res[1].text_content() == "not run: keep b")
                .then_some(())
                .ok_or(format!("{res:?}"))
        });
    let mut run: Run<Session> = serde_json::from_str(&stored).unwrap();
    assert!(!run.approve("nope"));
    assert!(run.approve("c1"));
    assert!(run.reject("c2", "keep b"));
    let agent2 = Agent::with_context(model2.clone(), "m")
        .tool(delete_tool(log.clone()))
        .hook(AskFirst);
    let stop = agent2.drive(&mut run).await.unwrap();
    assert_eq!(
        stop,
        StopReason::Finished {
            finish_reason: FinishReason::Stop
        }
    );
    assert_eq!(*log.lock().unwrap(), ["ana deleted a.txt"]);
    assert_eq!(
        run.context.deleted,
        ["a.txt"],
        "the tool's patch reached the context"
    );
    assert_eq!(
        run.context.model_calls, 2,
        "the hook's writes survived the trip"
    );
    let statuses: Vec<CallStatus> = run.tool_calls().iter().map(|r| r.status.clone()).collect();
    assert_eq!(statuses, [CallStatus::Ran, CallStatus::Skipped]);
}

#[derive(Clone, Default, PartialEq, Debug)]
struct Counter {
    seen: Vec<String>,
}

#[tokio::test]
async fn context_patches_reach_later_tools_and_hooks() {
    let remember = tool(
        "remember",
        "Remember a word",
        |a: Path, ctx: kite_agent::ToolContext<Counter>| async move {
            let before = ctx.context.seen.join(",");
            let word = a.path.clone();
            Ok(ToolOutput::text(format!("had [{before}]"))
                .with_patch(move |c: &mut Counter| c.seen.push(word)))
        },
    );
    struct Check(Arc<Mutex<Vec<usize>>>);
    impl Hooks<Counter> for Check {
        fn before_model(&self, ctx: &mut Counter, _: &mut Request) -> Flow {
            self.0.lock().unwrap().push(ctx.seen.len());
            Flow::Continue
        }
    }
    let seen_by_hook = Arc::new(Mutex::new(Vec::new()));
    let script = || {
        ScriptedModel::new()
            .tool_calls(&[
                ("1", "remember", json!({"path": "x"})),
                ("2", "remember", json!({"path": "y"})),
            ])
            .tool_calls(&[("3", "remember", json!({"path": "z"}))])
            .text("ok")
    };
    let tools = kite_agent::ToolSet::new();
    tools.add(remember);
    let run = both(
        || {
            Agent::with_context(script(), "m")
                .with_tools(tools.clone())
                .hook(Check(seen_by_hook.clone()))
        },
        Counter::default(),
        "go",
    )
    .await;
    let results: Vec<String> = run
        .tool_calls()
        .iter()
        .map(|r| r.result.text_content())
        .collect();
    // Calls of one turn share a snapshot; the next turn sees both patches, in call order.
    assert_eq!(results, ["had []", "had []", "had [x,y]"]);
    assert_eq!(run.context.seen, ["x", "y", "z"]);
    assert_eq!(
        *seen_by_hook.lock().unwrap(),
        [0, 2, 3, 0, 2, 3],
        "buffered, then streamed"
    );
}

#[tokio::test]
async fn cancelling_a_hanging_model_call_stops_the_run_cleanly() {
    let model = ScriptedModel::new().hang();
    let agent = agent(&model);
    let mut run = agent.start((), vec![Message::user("?")]);
    let cancel = CancellationToken::new();
    let c = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(50)).await;
        c.cancel();
    });
    let stop = agent.drive_cancellable(&mut run, &cancel).await.unwrap();
    assert_eq!(stop, StopReason::Cancelled);
    assert_eq!(run.messages().len(), 1, "no partial answer is kept");
}

#[tokio::test]
async fn cancelling_during_tools_gives_every_call_a_result() {
    let saw_cancel = Arc::new(AtomicUsize::new(0));
    let s = saw_cancel.clone();
    let stuck = tool(
        "stuck",
        "never ends",
        move |_: Path, ctx: kite_agent::ToolContext<()>| {
            let s = s.clone();
            async move {
                // Work handed to another task learns of the cancellation through the token.
                let token = ctx.cancel.clone();
                tokio::spawn(async move {
                    token.cancelled().await;
                    s.fetch_add(1, Ordering::SeqCst);
                });
                tokio::time::sleep(Duration::from_secs(3600)).await;
                Ok("unreachable")
            }
        },
    );
    let model = ScriptedModel::new().tool_calls(&[("c1", "stuck", json!({"path": "p"}))]);
    let agent = Agent::new(model, "m").tool(stuck);
    let mut stream = agent.run_stream((), vec![Message::user("?")]);
    let mut done = None;
    while let Some(ev) = stream.next().await {
        match ev.unwrap() {
            AgentEvent::ToolStarted { .. } => stream.cancel(),
            AgentEvent::Done(run) => done = Some(run),
            _ => {}
        }
    }
    let run = done.expect("the stream ends with the run");
    assert_eq!(run.stop_reason(), Some(StopReason::Cancelled));
    let last = run.messages().last().unwrap();
    assert_eq!(last.role, Role::Tool);
    assert!(
        run.tool_calls()[0]
            .result
            .text_content()
            .contains("cancelled")
    );
    tokio::time::sleep(Duration::from_millis(20)).await;
    assert_eq!(
        saw_cancel.load(Ordering::SeqCst),
        1,
        "the tool saw its token cancelled"
    );
}

fn script() -> ScriptedModel {
    ScriptedModel::new()
        .tool_calls(&[
            ("c1", "weather", json!({"city": "Paris"})),
            ("c2", "weather", json!({"city": "Rome"})),
        ])
        .tool_calls(&[("c3", "weather", json!({"city": "Oslo"}))])
        .text("Sunny everywhere.")
}

#[tokio::test]
async fn streamed_and_buffered_runs_give_the_same_history() {
    let buffered = agent(&script()).ask("Weather?").await.unwrap();

    let mut stream = agent(&script()).run_stream((), vec![Message::user("Weather?")]);
    let mut kinds = Vec::new();
    let mut streamed = None;
    while let Some(ev) = stream.next().await {
        match ev.unwrap() {
            AgentEvent::Model(_) => kinds.push("model"),
            AgentEvent::ToolStarted { .. } => kinds.push("started"),
            AgentEvent::ToolFinished { .. } => kinds.push("finished"),
            AgentEvent::Done(run) => {
                kinds.push("done");
                streamed = Some(run);
            }
            other => panic!("an event this test does not know: {other:?}"),
        }
    }
    let streamed = streamed.unwrap();
    assert_eq!(streamed.messages(), buffered.messages());
    assert_eq!(streamed.usage(), buffered.usage());
    assert_eq!(kinds.last(), Some(&"done"));
    assert_eq!(kinds.iter().filter(|k| **k == "started").count(), 3);
    assert_eq!(kinds.iter().filter(|k| **k == "finished").count(), 3);
    let first_finished = kinds.iter().position(|k| *k == "finished").unwrap();
    assert!(kinds[..first_finished].contains(&"model"));
}

#[tokio::test]
async fn infrastructure_failures_stop_the_run_with_a_typed_error_and_keep_it_resumable() {
    let flaky = Arc::new(AtomicUsize::new(0));
    let f = flaky.clone();
    let db = tool("db", "query", move |_: Path, _| {
        let f = f.clone();
        async move {
            if f.fetch_add(1, Ordering::SeqCst) == 0 {
                return Err(ToolError::fatal(std::io::Error::other(
                    "connection refused",
                )));
            }
            Ok("rows")
        }
    });
    let model = ScriptedModel::new()
        .tool_calls(&[("c1", "db", json!({"path": "t"}))])
        .text("Here are the rows.");
    let agent = Agent::new(model, "m").tool(db);
    let mut run = agent.start((), vec![Message::user("query")]);
    match agent.drive(&mut run).await {
        Err(AgentError::Tool {
            tool,
            call_id,
            source,
        }) => {
            assert_eq!((tool.as_str(), call_id.as_str()), ("db", "c1"));
            assert!(source.to_string().contains("connection refused"));
        }
        other => panic!("expected a tool error, got {other:?}"),
    }
    // The database is back: driving again retries the step.
    agent.drive(&mut run).await.unwrap();
    assert_eq!(run.text(), "Here are the rows.");
}

#[tokio::test]
async fn a_panicking_tool_is_an_error_not_a_crash() {
    let boom = tool(
        "boom",
        "panics",
        |_: Path, _: kite_agent::ToolContext<()>| async move {
            if true {
                panic!("kaboom");
            }
            Ok("never")
        },
    );
    let model = ScriptedModel::new().tool_calls(&[("c1", "boom", json!({"path": "x"}))]);
    let err = Agent::new(model, "m")
        .tool(boom)
        .ask("?")
        .await
        .unwrap_err();
    assert!(err.to_string().contains("panicked: kaboom"), "{err}");
}

#[tokio::test]
async fn a_model_failure_is_a_typed_error() {
    let model = ScriptedModel::new().error(kite_core::Error::Config("no key".into()));
    match agent(&model).ask("?").await {
        Err(AgentError::Model(kite_core::Error::Config(m))) => assert_eq!(m, "no key"),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn the_audit_sink_sees_every_call_in_order() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s = seen.clone();
    let run = agent(&script())
        .audit(move |r: &ToolRecord| s.lock().unwrap().push(r.call.id.clone()))
        .ask("?")
        .await
        .unwrap();
    assert_eq!(*seen.lock().unwrap(), ["c1", "c2", "c3"]);
    assert_eq!(run.tool_calls().len(), 3);
}

#[tokio::test]
async fn tools_are_added_removed_and_filtered_at_run_time() {
    let model = ScriptedModel::new()
        .text("one")
        .expect(|r| {
            r.tools.iter().map(|t| t.name.as_str()).collect::<Vec<_>>() == ["weather", "calculate"]
        })
        .tool_calls(&[("c1", "calculate", json!({"expression": "1+1"}))])
        .expect(|r| r.tools.iter().map(|t| t.name.as_str()).collect::<Vec<_>>() == ["weather"])
        .text("two")
        .expect_that(|r| {
            let res = &sent_results(r)[0];
            res.text_content()
                .contains("unknown tool `calculate`")
                .then_some(())
                .ok_or(format!("{res:?}"))
        });
    let agent = agent(&model).tool(kite_agent::builtin::calculate());
    agent.ask("a").await.unwrap();
    agent.tools().reject(["calculate"]);
    agent.ask("b").await.unwrap();
    agent.tools().clear_rejects();
    assert!(agent.tools().remove("calculate"));
    assert_eq!(agent.tools().names(), ["weather"]);
}

#[tokio::test]
async fn a_conversation_keeps_history_notes_and_per_call_system_prompts() {
    let model = ScriptedModel::new()
        .text("Hello Ana.")
        .expect(|r| r.system.as_deref() == Some("Be brief.") && r.messages.len() == 1)
        .text("You were on the billing page.")
        .expect(|r| {
            r.system.as_deref() == Some("Answer in French.")
                && r.messages.iter().map(Message::text).collect::<Vec<_>>()
                    == [
                        "I am Ana",
                        "Hello Ana.",
                        "The user opened the billing page.",
                        "Where was I?",
                    ]
        });
    let mut chat = Conversation::new(agent(&model), ());
    chat.send("I am Ana").await.unwrap();
    chat.note("The user opened the billing page.");
    let reply = chat
        .send_with_system("Answer in French.", "Where was I?")
        .await
        .unwrap();
    assert_eq!(reply.text(), "You were on the billing page.");
    assert_eq!(chat.history().len(), 5);
    assert!(chat.history().iter().all(|m| m.role != Role::System));
}

#[tokio::test]
#[should_panic(expected = "unexpected model call #2")]
async fn the_scripted_model_fails_a_test_on_an_unexpected_call() {
    let model = ScriptedModel::new().tool_calls(&[("c1", "weather", json!({"city": "Paris"}))]);
    let _ = agent(&model).ask("?").await;
}

#[test]
#[should_panic(expected = "never requested")]
fn the_scripted_model_fails_a_test_on_a_missing_call() {
    let _ = ScriptedModel::new().text("unused");
}

struct Tripwire;
impl Hooks<()> for Tripwire {
    fn on_event(&self, _: &mut (), event: &kite_core::Event) -> Flow {
        match event {
            kite_core::Event::ToolCallStart { name, .. } if name == "weather" => {
                Flow::Stop("weather is off limits".into())
            }
            _ => Flow::Continue,
        }
    }
}

#[tokio::test]
async fn a_hook_watching_stream_events_can_stop_mid_answer() {
    let script = || ScriptedModel::new().tool_calls(&[("c1", "weather", json!({"city": "Paris"}))]);
    let run = both(|| agent(&script()).hook(Tripwire), (), "?").await;
    assert_eq!(
        run.stop_reason(),
        Some(StopReason::Hook {
            message: "weather is off limits".into()
        })
    );
    assert!(run.tool_calls().is_empty(), "no tool ran");
    assert_eq!(run.messages().len(), 1, "the cut-off answer is not kept");
}

#[tokio::test]
async fn a_forced_tool_choice_is_lifted_once_tools_have_run() {
    use kite_core::ToolChoice;
    let forced =
        |a: Agent| a.configure(|r| r.tool_choice = Some(ToolChoice::Tool("weather".into())));
    let model = ScriptedModel::new()
        .tool_calls(&[("c1", "weather", json!({"city": "Paris"}))])
        .expect(|r| r.tool_choice == Some(ToolChoice::Tool("weather".into())))
        .text("Sunny.")
        .expect(|r| r.tool_choice == Some(ToolChoice::Auto));
    forced(agent(&model)).ask("?").await.unwrap();

    let model = ScriptedModel::new()
        .tool_calls(&[("c1", "weather", json!({"city": "Paris"}))])
        .tool_calls(&[("c2", "weather", json!({"city": "Rome"}))])
        .expect(|r| r.tool_choice == Some(ToolChoice::Tool("weather".into())));
    let run = forced(agent(&model))
        .keep_tool_choice()
        .max_turns(2)
        .ask("?")
        .await
        .unwrap();
    assert_eq!(
        run.stop_reason(),
        Some(StopReason::TurnLimit { max_turns: 2 })
    );
}

#[tokio::test]
async fn a_failed_streamed_run_hands_back_what_it_did_before_the_error() {
    let model = ScriptedModel::new()
        .tool_calls(&[("c1", "weather", json!({"city": "Paris"}))])
        .error(kite_core::Error::decode("the stream broke", "{"));
    let agent = agent(&model);
    let mut stream = agent.run_stream((), vec![Message::user("Weather in Paris?")]);
    assert!(stream.failed_run().is_none(), "nothing failed yet");
    let mut error = None;
    while let Some(item) = stream.next().await {
        if let Err(e) = item {
            error = Some(e);
        }
    }
    assert!(error.is_some(), "the second model call failed");
    let run = stream.failed_run().expect("the run as far as it got");
    let added = run.new_messages();
    assert_eq!(added.len(), 2, "{added:?}");
    assert!(added[0].tool_calls().any(|c| c.id == "c1"));
    assert!(matches!(&added[1].parts[0], Part::ToolResult(r) if r.call_id == "c1"));
    assert!(stream.failed_run().is_none(), "taken once");
}

#[tokio::test]
async fn the_last_calls_usage_is_kept_beside_the_sum() {
    let with_usage = |message: Message, finish, input: u64| {
        let mut r = kite_core::Response::empty(finish);
        r.message = message;
        r.usage.input_tokens = input;
        r.usage.output_tokens = 5;
        r
    };
    let call = Message::new(
        Role::Assistant,
        vec![Part::ToolCall(ToolCall::new(
            "c1",
            "weather",
            r#"{"city":"Paris"}"#,
        ))],
    );
    let model = ScriptedModel::new()
        .respond(with_usage(call, FinishReason::ToolCalls, 100))
        .respond(with_usage(
            Message::assistant("Sunny."),
            FinishReason::Stop,
            180,
        ));
    let run = agent(&model).ask("Weather in Paris?").await.unwrap();
    assert_eq!(run.usage().input_tokens, 280);
    assert_eq!(run.last_call_usage().input_tokens, 180);
    assert_eq!(run.last_call_usage().output_tokens, 5);
}

#[tokio::test]
async fn secrets_in_tool_results_never_reach_the_model_the_stream_or_the_run() {
    let secrets = kite_core::redact::Secrets::of(&["sk-the-gateway-admin-key"]);
    let leaky = tool("leak", "Reads a file", |_: City, _| async move {
        Ok("admin_keys = [\"sk-the-gateway-admin-key\"]")
    });
    let model = ScriptedModel::new()
        .tool_calls(&[("1", "leak", json!({"city": "a"}))])
        .text("done");
    let agent = Agent::new(model.clone(), "m")
        .tool(leaky)
        .redact(secrets.clone());
    let model2 = ScriptedModel::new()
        .tool_calls(&[("2", "echo", json!({"city": "b"}))])
        .text("done");
    let mut stream = agent.run_stream((), vec![Message::user("go")]);
    let mut streamed = Vec::new();
    let mut run = None;
    while let Some(ev) = stream.next().await {
        match ev.unwrap() {
            AgentEvent::ToolFinished { record } => streamed.push(record.result.text_content()),
            AgentEvent::Done(done) => run = Some(done),
            _ => {}
        }
    }
    let run = run.unwrap();
    let sent = sent_results(&model.requests()[1]);
    let all = format!("{streamed:?} {sent:?} {:?}", run.messages());
    assert!(!all.contains("sk-the-gateway-admin-key"), "{all}");
    assert!(all.contains("[redacted]"), "{all}");
    // A token learnt after the list was handed over (an OAuth refresh) is hidden too.
    secrets.add_passing("oauth-token-learnt-later");
    let run = Agent::new(model2.clone(), "m")
        .tool(tool("echo", "Echoes a token", |_: City, _| async move {
            Ok("Bearer oauth-token-learnt-later")
        }))
        .redact(secrets)
        .ask("go")
        .await
        .unwrap();
    let all = format!(
        "{:?} {:?}",
        sent_results(&model2.requests()[1]),
        run.messages()
    );
    assert!(!all.contains("oauth-token-learnt-later"), "{all}");
}
