//! The local model guide's program (docs/src/guides/local-model.md): the embedded model, in
//! process with no key and no network, made to call a tool and answer from its result.
//!
//! `cargo run -p kite-llm --features local --example local -- "What is the date and time now?"`
//!
//! The model is the one `kite model fetch` installs, or the GGUF file `KITE_LOCAL_MODEL`
//! names.

// ANCHOR: program
use kite::local::{LocalConfig, LocalModel, find_model};
use kite::{Agent, ToolChoice, tool};

/// The tool takes no arguments.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Nothing {}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let question = std::env::args().skip(1).collect::<Vec<_>>().join(" ");
    let model = LocalModel::load(&find_model()?, LocalConfig::default())?;
    let now = tool(
        "now",
        "The time now, in seconds since 1970-01-01 UTC",
        |_: Nothing, _| async {
            let secs = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs());
            Ok(format!("{{\"unix\": {secs}}}"))
        },
    );
    // The small model, left to choose, answers from guesswork: it is made to call first.
    let agent = Agent::new(model, "local")
        .tool(now)
        .configure(|r| r.tool_choice = Some(ToolChoice::Required));
    let run = agent.ask(question).await?;
    for call in run.tool_calls() {
        eprintln!(
            "[tool] {} -> {}",
            call.call.name,
            call.result.text_content()
        );
    }
    println!("{}", run.text());
    // The model works on a thread of its own: let it end before the process does.
    drop(agent);
    kite::local::wait_for_workers(std::time::Duration::from_secs(10));
    Ok(())
}
// ANCHOR_END: program
