//! Driving a run from outside the crate: deciding calls, reporting what became of them,
//! and what a run refuses; and tool sets shared or forked between agents.

use kite_agent::builtin::{calculate, now};
use kite_agent::{Agent, CallStatus, Decision, Next, Run, StepError, ToolRecord, ToolSet};
use kite_core::{FinishReason, Message, Part, Response, Role, ToolCall, ToolResult};
use kite_testkit::ScriptedModel;

fn asked_for_two_calls() -> Run {
    let mut run = Run::new((), vec![Message::user("go")], 5);
    let mut answer = Response::empty(FinishReason::ToolCalls);
    answer.message = Message::new(
        Role::Assistant,
        vec![
            Part::ToolCall(ToolCall::new("a", "now", "{}")),
            Part::ToolCall(ToolCall::new("b", "calculate", r#"{"expression":"1+1"}"#)),
        ],
    );
    run.model_answered(answer);
    run
}

fn record(run: &Run, id: &str, name: &str) -> ToolRecord {
    ToolRecord::new(
        run.turns(),
        ToolCall::new(id, name, "{}"),
        ToolResult::text(id, "ok"),
        CallStatus::Ran,
    )
}

#[test]
fn calls_are_decided_from_outside_and_records_must_match_them() {
    let mut run = asked_for_two_calls();
    assert_eq!(run.next(), Next::DecideTools);
    assert!(!run.decide("nope", Decision::Run));
    assert!(run.decide("a", Decision::Run));
    assert_eq!(run.next(), Next::DecideTools);
    assert!(run.decide("b", Decision::Skip("not today".into())));
    assert!(
        !run.decide("b", Decision::Run),
        "a decided call stays decided"
    );
    assert!(matches!(run.next(), Next::RunTools(p) if p.len() == 2));

    // Too few, or out of order: refused, and the run is as it was.
    let before = run.messages().len();
    let one = vec![record(&run, "a", "now")];
    assert!(matches!(run.tools_ran(one), Err(StepError(_))));
    let swapped = vec![record(&run, "b", "calculate"), record(&run, "a", "now")];
    assert!(run.tools_ran(swapped).is_err());
    assert_eq!(run.messages().len(), before);
    assert!(matches!(run.next(), Next::RunTools(_)));

    let both = vec![record(&run, "a", "now"), record(&run, "b", "calculate")];
    run.tools_ran(both).unwrap();
    assert_eq!(run.next(), Next::CallModel);
    assert_eq!(run.tool_calls().len(), 2);
    // Nothing is planned now: a late report is refused.
    assert!(run.tools_ran(vec![record(&run, "a", "now")]).is_err());
}

#[test]
fn a_deferred_call_is_decided_like_an_undecided_one() {
    let mut run = asked_for_two_calls();
    assert!(run.decide("a", Decision::Deferred));
    assert!(run.decide("b", Decision::Run));
    assert!(matches!(run.next(), Next::Stopped(_)));
    assert!(run.decide("a", Decision::Skip("no".into())));
    assert!(matches!(run.next(), Next::RunTools(_)));
}

#[test]
fn clones_share_a_tool_set_and_a_fork_does_not() {
    let model = ScriptedModel::new();
    model.skip_rest();
    let first: Agent = Agent::new(model, "m").tool(now());
    let shared = first.clone().tool(calculate());
    assert_eq!(first.tools().names(), ["now", "calculate"]);

    let own = first.clone().with_tools(first.tools().fork());
    own.tools().remove("now");
    assert_eq!(own.tools().names(), ["calculate"]);
    assert_eq!(first.tools().names(), ["now", "calculate"]);
    assert_eq!(shared.tools().names(), ["now", "calculate"]);
    let empty: ToolSet = ToolSet::new();
    assert!(empty.fork().names().is_empty());
}

#[test]
fn the_specs_a_set_offers_share_their_schemas() {
    let set: ToolSet = ToolSet::new();
    set.add(calculate());
    let (first, second) = (set.specs(), set.specs());
    assert!(std::sync::Arc::ptr_eq(
        &first[0].parameters,
        &second[0].parameters
    ));
}

#[test]
fn records_for_calls_not_yet_decided_are_refused() {
    let mut run = asked_for_two_calls();
    assert!(run.decide("a", Decision::Run));
    assert!(run.decide("b", Decision::Deferred));
    let both = vec![record(&run, "a", "now"), record(&run, "b", "calculate")];
    assert!(run.tools_ran(both).is_err(), "b waits for approval");
    assert_eq!(run.tool_calls().len(), 0);
}
