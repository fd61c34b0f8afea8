//! The agent loop's own overhead per step: a scripted model that answers instantly and a
//! tool that does nothing, so what is measured is kite (request building, event folding,
//! argument checks, bookkeeping). A step is one model call plus one tool call.
//!
//! Run: `cargo bench -p kite-bench --bench agent_loop`.

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use kite_agent::{Agent, ToolError, tool};
use kite_core::Message;
use kite_testkit::ScriptedModel;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

#[derive(Deserialize, JsonSchema)]
struct Args {
    n: u32,
}

const STEPS: u32 = 10;

fn script() -> ScriptedModel {
    let mut model = ScriptedModel::new();
    for i in 0..STEPS {
        model = model.tool_calls(&[(&format!("c{i}"), "noop", json!({"n": i}))]);
    }
    model.text("done")
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let mut g = c.benchmark_group("agent_loop");
    g.bench_function(format!("{STEPS}_steps"), |b| {
        b.iter_batched(
            || {
                let noop = tool("noop", "does nothing", |a: Args, _| async move {
                    Ok::<_, ToolError>(a.n.to_string().into())
                });
                Agent::new(script(), "m").tool(noop).max_turns(STEPS + 1)
            },
            |agent| {
                let run = rt
                    .block_on(agent.run((), vec![Message::user("go")]))
                    .unwrap();
                assert_eq!(run.turns(), STEPS + 1);
                run
            },
            BatchSize::SmallInput,
        )
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
