//! Progressive disclosure against a scripted model: names and descriptions first, the
//! instructions when asked, a reference file only when asked, a script's output as a tool
//! result, and nothing given twice.

use kite_agent::Agent;
use kite_core::{Message, Part, Request};
use kite_skills::{NativeSkill, Root, RunOptions, SkillRun, SkillSet, discover};
use kite_testkit::ScriptedModel;
use serde_json::json;
use std::path::{Path, PathBuf};
use std::sync::Arc;

fn valid() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/skills/valid")
}

/// The text of the last message (the tool results of the latest turn).
fn last_results(req: &Request) -> String {
    let last: &Message = req.messages.last().unwrap();
    last.parts
        .iter()
        .map(|p| match p {
            Part::ToolResult(r) => r.text_content(),
            _ => String::new(),
        })
        .collect()
}

fn everything(req: &Request) -> String {
    format!("{:?}{:?}", req.system, req.messages)
}

#[tokio::test]
async fn the_model_sees_only_what_it_asked_for() {
    let cache = tempfile::tempdir().unwrap();
    let found = discover(&[Root::explicit(valid())], cache.path());
    assert!(found.invalid.is_empty(), "{:?}", found.invalid);
    let names: Vec<_> = found.skills.iter().map(|s| s.name().to_owned()).collect();
    // The hidden collection's skill is found too.
    for name in [
        "csv-stats",
        "nested-skill",
        "release-notes",
        "word-count",
        "ünïcode",
    ] {
        assert!(names.iter().any(|n| n == name), "{name} not in {names:?}");
    }
    let set = Arc::new(SkillSet::from_discovery(&found));
    let run = SkillRun::new(set.clone(), RunOptions::default()).unwrap();

    let model = ScriptedModel::new()
        .tool_calls(&[("c1", "view", json!({"path": "skills/release-notes/SKILL.md"}))])
        .tool_calls(&[(
            "c2",
            "view",
            json!({"path": "skills/release-notes/references/style.md"}),
        )])
        .tool_calls(&[(
            "c3",
            "bash",
            json!({"command": "python3 skills/csv-stats/scripts/stats.py skills/csv-stats/assets/sample.csv"}),
        )])
        .tool_calls(&[("c4", "view", json!({"path": "skills/release-notes/SKILL.md"}))])
        .text("Done.");
    let agent = Agent::new(model.clone(), "scripted")
        .system("Be brief.")
        .toolkit(&run);
    let answer = agent.ask("Write release notes").await.unwrap();
    assert_eq!(answer.text(), "Done.");
    let requests = model.requests();
    assert_eq!(requests.len(), 5);

    // First: the names, descriptions and locations only.
    let first = &requests[0];
    let system = first.system.as_deref().unwrap();
    assert!(system.starts_with("Be brief.\n\n"), "{system}");
    assert!(system.contains("<available_skills>"));
    for skill in &found.skills {
        assert!(system.contains(&format!("<name>\n{}\n</name>", skill.name())));
        assert!(system.contains(&format!("skills/{}/SKILL.md", skill.name())));
    }
    assert!(system.contains("Writes &quot;release notes&quot; for a new version"));
    let tools: Vec<_> = first.tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(tools, ["view", "create_file", "str_replace", "bash"]);
    for secret in [
        "house style",
        "STYLE-MARKER-7",
        "EXAMPLES-MARKER-9",
        "rows=5",
    ] {
        assert!(
            !everything(first).contains(secret),
            "{secret} sent too early"
        );
    }

    // Asked for the instructions: they come, the reference does not yet.
    let second = last_results(&requests[1]);
    assert!(second.contains("read `references/style.md`"), "{second}");
    assert!(!everything(&requests[1]).contains("STYLE-MARKER-7"));

    // Asked for the reference: it comes, the one it points to does not.
    let third = last_results(&requests[2]);
    assert!(third.contains("STYLE-MARKER-7"), "{third}");
    assert!(!everything(&requests[2]).contains("EXAMPLES-MARKER-9"));

    // The script ran in the sandbox and its output is the result.
    let fourth = last_results(&requests[3]);
    assert!(
        fourth.contains("rows=5 columns=3 sum(price)=42.50"),
        "{fourth}"
    );
    assert!(fourth.contains("[exit status 0]"), "{fourth}");

    // The instructions are not sent again.
    let fifth = last_results(&requests[4]);
    assert!(fifth.contains("already loaded"), "{fifth}");
    assert_eq!(
        everything(&requests[4])
            .matches("Before writing anything")
            .count(),
        1
    );
}

#[tokio::test]
async fn a_native_skill_is_disclosed_and_called_like_any_other() {
    use kite_agent::{ToolError, tool};
    #[derive(serde::Deserialize, schemars::JsonSchema)]
    struct Number {
        /// The invoice's number.
        number: u32,
    }
    let lookup = tool(
        "invoice_total",
        "An invoice's total",
        |a: Number, _| async move { Ok::<_, ToolError>(format!("invoice {}: 120.00 EUR", a.number)) },
    );
    let mut set = SkillSet::new();
    set.add_native(
        NativeSkill::new(
            "invoices",
            "Answers questions about invoices.",
            "Call invoice_total with the number (INVOICE-HOWTO).",
        )
        .tool(lookup),
    )
    .unwrap();
    // Names follow the same rules as a folder's.
    let bad = set.add_native(NativeSkill::new("Bad_Name", "d", "i"));
    assert!(bad.unwrap_err().to_string().contains("must be lowercase"));

    let run = SkillRun::new(Arc::new(set), RunOptions::default()).unwrap();
    let model = ScriptedModel::new()
        .tool_calls(&[("c1", "view", json!({"path": "skills/invoices/SKILL.md"}))])
        .tool_calls(&[("c2", "invoice_total", json!({"number": 7}))])
        .text("120.00 EUR");
    let agent = Agent::new(model.clone(), "scripted").toolkit(&run);
    agent.ask("What is invoice 7's total?").await.unwrap();
    let requests = model.requests();
    assert!(!everything(&requests[0]).contains("INVOICE-HOWTO"));
    assert!(last_results(&requests[1]).contains("INVOICE-HOWTO"));
    assert_eq!(last_results(&requests[2]), "invoice 7: 120.00 EUR");
}
