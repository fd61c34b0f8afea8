//! The skills guide's program (docs/src/guides/skills.md): an agent that is told of the
//! Agent Skills in a folder and opens one when its task calls for it; the skills' scripts
//! run in a sandbox, in a workspace of the run's own.
//!
//! `OPENAI_API_KEY=... cargo run -p kite-llm --features skills --example skills -- ./skills "Make a PDF of notes.md"`

// ANCHOR: program
use kite::skills::{Root, RunOptions, SkillRun, SkillSet, discover};
use kite::{Agent, Provider};
use std::path::Path;
use std::sync::Arc;

/// `agent` with the skills found under `folder`; the workspace lives as long as the run.
fn agent_with_skills(agent: Agent, folder: &Path) -> std::io::Result<(Agent, SkillRun)> {
    // Archives unpack in a private folder, kept while the skills in it are in use.
    let cache = tempfile::tempdir()?.keep();
    let found = discover(&[Root::explicit(folder)], &cache);
    for problem in found
        .invalid
        .iter()
        .map(ToString::to_string)
        .chain(found.errors.clone())
    {
        eprintln!("[skills: {problem}]");
    }
    let set = SkillSet::from_discovery(&found);
    eprintln!("[skills: {}]", set.names().join(", "));
    let run = SkillRun::new(Arc::new(set), RunOptions::default())?;
    Ok((agent.toolkit(&run), run))
}
// ANCHOR_END: program

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let folder = args.next().ok_or("usage: skills FOLDER QUESTION")?;
    let question = args.collect::<Vec<_>>().join(" ");
    let agent = Agent::new(Provider::OpenAi.from_env()?, "gpt-5-nano");
    let (agent, _run) = agent_with_skills(agent, Path::new(&folder))?;
    let answer = agent.ask(question).await?;
    println!("{}", answer.text());
    Ok(())
}
