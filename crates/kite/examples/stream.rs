//! Streams an answer from the first provider whose API key is set, else (with the `local`
//! feature) from the embedded local model, with no key and no network.
//!
//! `cargo run -p kite-llm --features local --example stream -- "Why is the sky blue?"`

// ANCHOR: program
use kite::{Event, Message, Model, Request, StreamExt};
use std::io::Write;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), kite::Error> {
    let question = std::env::args().skip(1).collect::<Vec<_>>().join(" ");
    // A provider's key if one is set (OPENAI_API_KEY, ANTHROPIC_API_KEY, ...), else the
    // embedded local model.
    let (model, name) = kite::model_from_env()?;
    let request = Request::new(name)
        .system("Answer in two sentences.")
        .message(Message::user(question));

    let mut events = model.stream(&request);
    while let Some(event) = events.next().await {
        match event? {
            Event::TextDelta { text, .. } => {
                print!("{text}");
                std::io::stdout().flush().ok();
            }
            Event::Usage { usage } => eprintln!(
                "\n[{} tokens in, {} out]",
                usage.input_tokens, usage.output_tokens
            ),
            _ => {}
        }
    }
    Ok(())
}
// ANCHOR_END: program
