//! The MCP guide's program (docs/src/guides/mcp.md): an agent whose tools are an MCP
//! server's, the server's sampling requests answered by the agent's own model.
//!
//! The first argument is the question, the rest the server's command:
//!
//! `OPENAI_API_KEY=... cargo run -p kite-llm --features mcp --example mcp -- "What files are here?" npx -y @modelcontextprotocol/server-filesystem .`

// ANCHOR: program
use kite::mcp::{Hub, HubOptions, ModelSampler, ServerConfig};
use kite::{Agent, Model, Provider};
use std::sync::Arc;

/// An agent on `model` with the tools of `servers` (an id and how to reach it, each).
async fn agent_with_servers(
    model: Arc<dyn Model>,
    servers: Vec<(&str, ServerConfig)>,
) -> Result<(Agent, Hub), kite::mcp::Error> {
    let hub = Hub::with_options(HubOptions {
        // Servers' sampling requests go to the agent's own model.
        sampler: Some(Arc::new(ModelSampler::new(model.clone(), "gpt-5-nano"))),
        ..HubOptions::default()
    });
    for (id, config) in servers {
        hub.add(id, config).await?;
    }
    let agent = Agent::shared(model, "gpt-5-nano");
    hub.bind(agent.tools()); // the agent's tools follow the servers' from now on
    Ok((agent, hub)) // the servers live as long as the hub: keep it while the agent runs
}
// ANCHOR_END: program

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let question = args.next().ok_or("usage: mcp QUESTION COMMAND [ARG...]")?;
    let command = args.next().ok_or("usage: mcp QUESTION COMMAND [ARG...]")?;
    let server = ServerConfig::stdio(command, args.collect::<Vec<_>>());

    let model = Provider::OpenAi.from_env()?;
    let (agent, hub) = agent_with_servers(model, vec![("server", server)]).await?;
    eprintln!("[tools: {}]", agent.tools().names().join(", "));
    let run = agent.ask(question).await?;
    println!("{}", run.text());
    hub.close().await;
    Ok(())
}
