//! How a session's agent is made from the flags: its model's settings, system prompt,
//! tool choice and skills, and what is said of its MCP servers' tools.

use crate::config::choose::{Chosen, SessionArgs};
use crate::terminal::output::errln;
use kite::skills::SkillRun;
use kite::{Agent, Error, ReasoningConfig, ToolChoice};

/// The agent for `args` and `chosen`, offering `skills`, pricing calls at the operator's
/// `prices` first; with `before`, it keeps `before`'s tools.
pub(super) fn agent(
    args: &SessionArgs,
    chosen: &Chosen,
    before: Option<&Agent>,
    skills: Option<&SkillRun>,
    prices: &std::collections::BTreeMap<String, kite::prices::Rate>,
) -> Result<Agent, Error> {
    // Left to choose, the small local model is made to call when the question asks for
    // what a tool does (kite-local's `cues.rs`), and answers freely otherwise.
    let tool_choice = tool_choice(args);
    let mut agent = Agent::shared(chosen.model.clone(), chosen.name.clone())
        .max_turns(args.max_turns.unwrap_or(10))
        .redact(crate::terminal::secrets::known().clone())
        .configure(|r| {
            r.max_tokens = args.max_tokens;
            r.temperature = args.temperature;
            r.tool_choice = tool_choice;
            r.reasoning = args.reasoning.clone().map(ReasoningConfig::effort);
        });
    if let Some(before) = before {
        agent = agent.with_tools(before.tools().clone());
    }
    if let Some(system) = &args.system {
        agent = agent.system(crate::config::choose::with_date(system));
    }
    agent = agent.pricer(crate::commands::prices::pricer(prices));
    if let Some(skills) = skills {
        // The skills' part of the system prompt follows the user's; their tools are
        // replaced by themselves when `before` had them.
        agent = agent.toolkit(skills);
    }
    Ok(agent)
}

/// One line saying what the configured MCP servers added.
pub(super) fn say_servers(hub: &kite::mcp::Hub) {
    let servers = hub.servers();
    if servers.is_empty() {
        return;
    }
    let tools: usize = servers.iter().map(|s| s.tools.len()).sum();
    let up = servers
        .iter()
        .filter(|s| {
            matches!(
                s.status,
                kite::mcp::ServerStatus::Up { .. } | kite::mcp::ServerStatus::Starting
            )
        })
        .count();
    errln!(
        "kite: {tools} tools from {up} of {} MCP servers in kite.toml (--no-mcp leaves them \
         out)",
        servers.len()
    );
}

/// `--tool-choice`.
pub(super) fn tool_choice(args: &SessionArgs) -> Option<ToolChoice> {
    args.tool_choice.as_deref().map(|c| match c {
        "auto" => ToolChoice::Auto,
        "required" => ToolChoice::Required,
        "none" => ToolChoice::None,
        name => ToolChoice::Tool(name.to_owned()),
    })
}

/// Refuses a forced tool choice that names no tool on offer.
pub(super) fn check_tool_choice(agent: &Agent, args: &SessionArgs) -> Result<(), Error> {
    let offered = agent.tools().specs();
    match &tool_choice(args) {
        Some(ToolChoice::Required) if offered.is_empty() => Err(Error::Config(
            "--tool-choice required, but no tool is on offer; offer one with --tool, --tools \
             or kite.toml"
                .into(),
        )),
        Some(ToolChoice::Tool(name)) if !offered.iter().any(|t| &t.name == name) => {
            let names: Vec<&str> = offered.iter().map(|t| t.name.as_str()).collect();
            Err(Error::Config(format!(
                "--tool-choice {name:?} names no tool on offer ({}); offer it with --tool or \
                 kite.toml, or choose auto, required or none",
                if names.is_empty() {
                    "none are".to_owned()
                } else {
                    names.join(", ")
                }
            )))
        }
        _ => Ok(()),
    }
}
