//! Budgets: a run stops before the model call that would take it past its cost or token
//! limit, with a typed reason and its history intact; a pricer prices the calls the
//! provider did not.

use kite_agent::{Agent, Budget, StopReason, tool};
use kite_core::{FinishReason, Message, Part, Response, Role, ToolCall, Usage};
use kite_testkit::ScriptedModel;
use schemars::JsonSchema;
use serde::Deserialize;
use std::sync::Arc;

#[derive(Deserialize, JsonSchema)]
struct City {
    city: String,
}

/// Three tool calls, each with more input than the last, then an answer.
fn model() -> ScriptedModel {
    let step = |i: u64| {
        let mut r = Response::empty(FinishReason::ToolCalls);
        r.message = Message::new(
            Role::Assistant,
            vec![Part::ToolCall(ToolCall::new(
                format!("c{i}"),
                "weather",
                r#"{"city": "Paris"}"#,
            ))],
        );
        r.usage = Usage {
            input_tokens: 100 * i,
            output_tokens: 5,
            ..Usage::default()
        };
        r
    };
    ScriptedModel::new()
        .respond(step(1))
        .respond(step(2))
        .respond(step(3))
        .text("Sunny.")
}

fn agent(model: &ScriptedModel, budget: Budget) -> Agent {
    let weather = tool("weather", "Weather", |c: City, _| async move {
        Ok(format!("Sunny in {}", c.city))
    });
    // A cent per hundred input tokens.
    let pricer = Arc::new(|_: &str, _: &str, u: &Usage| Some(u.input_tokens as f64 / 10_000.0));
    Agent::new(model.clone(), "m")
        .tool(weather)
        .pricer(pricer)
        .budget(budget)
}

#[tokio::test]
async fn a_cost_limit_stops_the_run_before_the_call_that_would_pass_it() {
    let model = model();
    let budget = Budget {
        max_cost: Some(0.035),
        ..Budget::default()
    };
    let run = agent(&model, budget).ask("Weather?").await.unwrap();
    // Spent 0.01 + 0.02; a third call like the second would pass 0.035.
    match run.stop_reason() {
        Some(StopReason::BudgetExceeded { tokens, cost }) => {
            assert_eq!(tokens, 310);
            assert!((cost.unwrap() - 0.03).abs() < 1e-12, "{cost:?}");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(run.turns(), 2);
    assert_eq!(model.remaining(), 2, "the third call was never made");
    // The history is whole: both calls and both results are in it.
    let results = run
        .messages()
        .iter()
        .flat_map(|m| &m.parts)
        .filter(|p| matches!(p, Part::ToolResult(_)))
        .count();
    assert_eq!(results, 2);
    assert!((run.usage().cost.unwrap() - 0.03).abs() < 1e-12);
    model.skip_rest();
}

#[tokio::test]
async fn a_token_limit_stops_it_too_and_a_roomy_budget_does_not() {
    let model = model();
    let budget = Budget {
        max_tokens: Some(400),
        ..Budget::default()
    };
    let run = agent(&model, budget).ask("Weather?").await.unwrap();
    assert!(matches!(
        run.stop_reason(),
        Some(StopReason::BudgetExceeded { tokens: 310, .. })
    ));
    model.skip_rest();

    let model = self::model();
    let budget = Budget {
        max_tokens: Some(10_000),
        max_cost: Some(1.0),
    };
    let run = agent(&model, budget).ask("Weather?").await.unwrap();
    assert!(matches!(
        run.stop_reason(),
        Some(StopReason::Finished { .. })
    ));
    assert_eq!(run.turns(), 4);
}
