//! The book's crate of one's own: a question to whichever model is at hand (a provider's,
//! with its key set; else the embedded local one), with a typed tool whose answer is a
//! struct of its own.

// ANCHOR: program
use kite::schemars::JsonSchema;
use kite::serde::{Deserialize, Serialize};
use kite::{Agent, ToolChoice, ToolError, tool};

/// Two numbers to add.
#[derive(Deserialize, JsonSchema)]
#[serde(crate = "kite::serde")]
#[schemars(crate = "kite::schemars")]
struct Numbers {
    /// The first number.
    a: f64,
    /// The second number.
    b: f64,
}

/// What the tool gives back.
#[derive(Serialize)]
#[serde(crate = "kite::serde")]
struct Sum {
    sum: f64,
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (model, name) = kite::model_from_env()?;
    let add = tool("add", "Adds two numbers.", |n: Numbers, _| async move {
        // `?` on serde's errors: the model is told what was wrong.
        let checked: Numbers = kite::serde_json::from_value(kite::serde_json::json!({"a": n.a, "b": n.b}))?;
        Ok::<_, ToolError>(Sum { sum: checked.a + checked.b })
    });
    let run = Agent::new(model, name)
        .tool(add)
        .configure(|r| r.tool_choice = Some(ToolChoice::Required))
        .ask("What is 19 + 23? Use the add tool.")
        .await?;
    for call in run.tool_calls() {
        eprintln!("called {}: {}", call.call.name, call.result.text_content());
    }
    println!("{}", run.text());
    Ok(())
}
// ANCHOR_END: program
