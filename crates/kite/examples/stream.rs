//! Streams an answer from the first provider whose API key is set.
//!
//! `OPENAI_API_KEY=... cargo run -p kite-llm --example stream -- "Why is the sky blue?"`

// ANCHOR: program
use kite::{Event, Message, Model, Provider, Request, StreamExt};
use std::io::Write;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), kite::Error> {
    let question = std::env::args().skip(1).collect::<Vec<_>>().join(" ");
    let provider = Provider::detect().ok_or_else(|| {
        kite::Error::Config("set OPENAI_API_KEY or another provider's key".into())
    })?;
    let model = provider.from_env()?;
    let request = Request::new(provider.default_model())
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
