//! The README's and the guides' commands, run as written on the default local model with no
//! key: each gives a sensible answer. Each command is read from its page, so a page that
//! changes it changes what is run. (The README's first command is `ask.rs`'s
//! `without_a_key_the_local_model_makes_a_forced_tool_call_and_answers`, and the gateway
//! guide's `kite serve --tool now` is `serve_tools.rs`'s.)

mod common;

use common::{Run, kite, local_model_installed, run};

/// The arguments of `command` (after `kite`), which `page` (from the repository's root)
/// shows as written.
fn documented(page: &str, command: &str) -> Vec<String> {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
    let text = std::fs::read_to_string(format!("{root}/{page}")).unwrap();
    assert!(text.contains(command), "{page} no longer shows `{command}`");
    let mut args = Vec::new();
    let mut rest = command.strip_prefix("kite ").expect("a kite command");
    while !rest.is_empty() {
        rest = rest.trim_start();
        let (arg, after) = match rest.strip_prefix('"') {
            Some(quoted) => quoted.split_once('"').expect("a closed quote"),
            None => rest.split_once(' ').unwrap_or((rest, "")),
        };
        args.push(arg.to_owned());
        rest = after;
    }
    args
}

/// Runs the command `page` shows in `dir`, and checks it answered.
async fn ran(page: &str, command: &str, dir: &std::path::Path, store: &str) -> Run {
    let r = run(kite()
        .args(documented(page, command))
        .current_dir(dir)
        .env("KITE_STORE_URL", store))
    .await;
    assert_eq!(r.code, 0, "{command}: {}", r.stderr);
    assert!(!r.stdout.trim().is_empty(), "{command}: no answer");
    for leak in ["<tool_call>", "<tool_response>", "</", "<|im_"] {
        assert!(!r.stdout.contains(leak), "{command}: {}", r.stdout);
    }
    r
}

/// The calls `r` shows on stderr, as `name(arguments)`.
fn calls(r: &Run) -> Vec<&str> {
    r.stderr
        .lines()
        .filter_map(|l| l.strip_prefix("[tool] "))
        .filter(|l| l.contains('(') && !l.contains(" -> ") && !l.contains(" failed "))
        .collect()
}

#[tokio::test]
async fn the_documented_questions_are_answered_sensibly_by_the_local_model() {
    if !local_model_installed() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("Cargo.toml"),
        "[package]\nname = \"harbour-lights\"\nversion = \"0.3.1\"\nedition = \"2024\"\n",
    )
    .unwrap();
    let store = dir.path().join("conversations.db");
    let store = store.to_str().unwrap();

    // A question of the time calls the clock, and the answer says what it said.
    for (page, command) in [
        (
            "docs/src/introduction.md",
            r#"kite ask --tool now "What time is it?""#,
        ),
        (
            "docs/src/guides/tracing-and-costs.md",
            r#"kite ask --tools "What day is it?""#,
        ),
    ] {
        let r = ran(page, command, dir.path(), store).await;
        assert_eq!(
            calls(&r).first(),
            Some(&"now({})"),
            "{command}: {}",
            r.stderr
        );
        let told = common::what_the_clock_said(&r);
        assert!(
            told.iter().any(|t| r.stdout.contains(t.as_str())),
            "{command}: {:?} says none of {told:?}",
            r.stdout
        );
    }

    // A file named is the file read, not one the model imagines.
    let command = r#"kite ask --tool read_file "Summarize Cargo.toml in two sentences.""#;
    let r = ran("README.md", command, dir.path(), store).await;
    assert_eq!(
        calls(&r),
        [r#"read_file({"path":"Cargo.toml"})"#],
        "{}",
        r.stderr
    );
    assert!(!r.stderr.contains(" failed "), "{}", r.stderr);

    // A sum is written as the calculator reads it.
    let command = r#"kite ask --tools "What is 17.5% of 2380, and what day is it?""#;
    let r = ran("docs/src/guides/tools.md", command, dir.path(), store).await;
    // (Only the first: what comes after the clock's answer changes with the time.)
    let first = r
        .stderr
        .lines()
        .find(|l| l.starts_with("[tool] calculate "));
    assert!(
        first.is_some_and(|l| l.starts_with("[tool] calculate -> ")),
        "{command}: {}",
        r.stderr
    );

    // A question needing no tool is answered, and the next one continues it.
    let page = "docs/src/guides/conversations.md";
    let store = dir.path().join("rivers.db");
    let store = store.to_str().unwrap();
    let r = ran(
        page,
        r#"kite ask "Name three rivers in France.""#,
        dir.path(),
        store,
    )
    .await;
    let rivers = ["Loire", "Seine", "Rhône", "Rhone", "Garonne", "Dordogne"];
    assert!(
        rivers.iter().any(|river| r.stdout.contains(river)),
        "{}",
        r.stdout
    );
    let r = ran(
        page,
        r#"kite ask -c "Which is the longest?""#,
        dir.path(),
        store,
    )
    .await;
    assert!(
        rivers.iter().any(|river| r.stdout.contains(river)),
        "{}",
        r.stdout
    );
    let shown = run(kite()
        .args(["conversations", "list", "--json"])
        .env("KITE_STORE_URL", store))
    .await;
    assert_eq!(
        shown.stdout.lines().count(),
        1,
        "one conversation: {}",
        shown.stdout
    );

    // `-v` says one line per call, and `--json`'s usage line carries the cost.
    let page = "docs/src/guides/tracing-and-costs.md";
    let r = ran(page, r#"kite ask -v "Hi""#, dir.path(), store).await;
    assert!(r.stderr.contains("kite: chat local"), "{}", r.stderr);
    let r = ran(page, r#"kite ask --json "Hi""#, dir.path(), store).await;
    let usage = r.stdout.lines().find(|l| l.contains("\"usage\"")).unwrap();
    assert!(usage.contains("\"cost\":0"), "{usage}");
}
