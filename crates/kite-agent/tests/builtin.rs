//! The built-in tools, called as the model would call them.

use kite_agent::{CancellationToken, Tool, ToolContext, ToolError, builtin};
use serde_json::{Value, json};
use std::sync::Arc;

fn ctx() -> ToolContext<()> {
    ToolContext {
        context: Arc::new(()),
        call_id: "c".into(),
        cancel: CancellationToken::new(),
    }
}

async fn call(tool: &dyn Tool<()>, args: Value) -> Result<String, String> {
    match tool.call(args, ctx()).await {
        Ok(out) => Ok(out
            .content
            .iter()
            .map(|p| match p {
                kite_core::Part::Text { text } => text.clone(),
                _ => String::new(),
            })
            .collect()),
        Err(ToolError::Model(m)) => Err(m),
        Err(e) => panic!("{e}"),
    }
}

#[tokio::test]
async fn a_programs_own_files_are_never_read_however_they_are_named() {
    let root = tempfile::tempdir().unwrap();
    let r = root.path();
    std::fs::write(r.join("kite.toml"), "admin_keys = [\"sk-admin-secret\"]").unwrap();
    std::fs::create_dir_all(r.join("data/logins")).unwrap();
    std::fs::write(r.join("data/logins/tracker.json"), "the-token").unwrap();
    std::fs::write(r.join("data/conversations.db"), "rows").unwrap();
    std::fs::write(r.join("notes.txt"), "mine").unwrap();
    // Other ways to the same files: a link, and a hard link made before.
    std::os::unix::fs::symlink("kite.toml", r.join("config-link")).unwrap();
    std::fs::hard_link(r.join("kite.toml"), r.join("innocent.txt")).unwrap();
    std::fs::hard_link(r.join("data/conversations.db"), r.join("copy.db")).unwrap();
    let hidden = [r.join("kite.toml"), r.join("data"), r.join("not-yet.db")];
    let read = builtin::read_file::<()>(r, &hidden).unwrap();
    let list = builtin::list_files::<()>(r, &hidden).unwrap();
    for path in [
        "kite.toml",
        "./kite.toml",
        "config-link",
        "innocent.txt",
        "copy.db",
        "data/logins/tracker.json",
        "data/conversations.db",
    ] {
        let err = call(&read, json!({ "path": path })).await.unwrap_err();
        assert!(err.contains("kite's own"), "{path}: {err}");
    }
    // A hidden file made after the tools were (a store's journal, say) is hidden by path.
    std::fs::write(r.join("not-yet.db"), "later").unwrap();
    let err = call(&read, json!({"path": "not-yet.db"}))
        .await
        .unwrap_err();
    assert!(err.contains("kite's own"), "{err}");
    assert_eq!(
        call(&read, json!({"path": "notes.txt"})).await.unwrap(),
        "mine"
    );
    let listing = call(&list, json!({})).await.unwrap();
    for name in ["kite.toml", "data", "innocent.txt", "copy.db", "not-yet.db"] {
        assert!(!listing.contains(name), "{name} listed: {listing}");
    }
    assert!(listing.contains("notes.txt"), "{listing}");
    assert!(call(&list, json!({"path": "data"})).await.is_err());
}

#[tokio::test]
async fn files_are_read_and_listed_only_under_the_root() {
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.txt"), "top secret").unwrap();
    let root = tempfile::tempdir().unwrap();
    std::fs::create_dir(root.path().join("notes")).unwrap();
    std::fs::write(root.path().join("notes/todo.txt"), "buy milk").unwrap();
    std::fs::write(root.path().join("big.txt"), "x".repeat(200_000)).unwrap();
    std::os::unix::fs::symlink(
        outside.path().join("secret.txt"),
        root.path().join("link.txt"),
    )
    .unwrap();

    let read = builtin::read_file::<()>(root.path(), &[]).unwrap();
    let list = builtin::list_files::<()>(root.path(), &[]).unwrap();

    assert_eq!(
        call(&read, json!({"path": "notes/todo.txt"}))
            .await
            .unwrap(),
        "buy milk"
    );
    let big = call(&read, json!({"path": "big.txt"})).await.unwrap();
    assert!(big.len() < 110_000 && big.contains("[cut: the file has 200000 bytes"));

    std::os::unix::fs::symlink(
        outside.path().join("missing.txt"),
        root.path().join("dangling.txt"),
    )
    .unwrap();
    // Two hops: a link inside to a link inside that leads out to nothing.
    std::os::unix::fs::symlink("dangling.txt", root.path().join("hop.txt")).unwrap();
    let secret = outside.path().join("secret.txt");
    let missing = outside.path().join("missing.txt");
    let from_root = |p: &std::path::Path| {
        format!(
            "../{}",
            p.strip_prefix(root.path().parent().unwrap())
                .unwrap_or(p)
                .display()
        )
    };
    // What exists outside and what does not get the same answer.
    for escape in [
        from_root(&secret),
        from_root(&missing),
        "../secret.txt".to_owned(),
        "../missing.txt".to_owned(),
        secret.display().to_string(),
        missing.display().to_string(),
        "link.txt".to_owned(),
        "dangling.txt".to_owned(),
        "hop.txt".to_owned(),
        "notes/../../x".to_owned(),
    ] {
        let err = call(&read, json!({ "path": escape })).await.unwrap_err();
        assert_eq!(
            err,
            format!("`{escape}` is outside the working folder; only paths under it can be read"),
        );
    }
    assert!(
        call(&read, json!({"path": "nope.txt"}))
            .await
            .unwrap_err()
            .contains("No such file")
    );
    assert!(
        call(&read, json!({"path": "notes"}))
            .await
            .unwrap_err()
            .contains("not a file")
    );

    let listing = call(&list, json!({})).await.unwrap();
    assert_eq!(
        listing,
        "big.txt (200000 bytes)\ndangling.txt (link)\nhop.txt (link)\nlink.txt (link)\nnotes/"
    );
    assert_eq!(
        call(&list, json!({"path": "notes"})).await.unwrap(),
        "todo.txt (8 bytes)"
    );
    assert!(
        call(&list, json!({"path": ".."}))
            .await
            .unwrap_err()
            .contains("outside")
    );
}

#[tokio::test]
async fn now_and_calculate_answer() {
    let now = call(&builtin::now::<()>(), json!({})).await.unwrap();
    let v: Value = serde_json::from_str(&now).unwrap();
    assert!(v["utc"].as_str().unwrap().ends_with('Z'));
    assert!(v["unix"].as_u64().unwrap() > 1_700_000_000);
    assert!(v["date"].as_str().unwrap().ends_with(" UTC"), "{v}");

    let calc = builtin::calculate::<()>();
    // An empty expression is not a call the model may make (its grammar and the check of
    // its arguments both go by the schema).
    assert_eq!(
        calc.spec().parameters["properties"]["expression"]["minLength"],
        json!(1)
    );
    assert_eq!(
        call(&calc, json!({"expression": "(2 + 3) * 4 ^ 2 / sqrt(16)"}))
            .await
            .unwrap(),
        "20"
    );
    assert_eq!(
        call(&calc, json!({"expression": "7 / 2"})).await.unwrap(),
        "3.5"
    );
    assert!(
        call(&calc, json!({"expression": "2 +* 3"}))
            .await
            .unwrap_err()
            .contains("unexpected")
    );
    // The schema names what an expression is written with, so that a model writes no
    // placeholders or words.
    let schema = jsonschema::validator_for(&calc.spec().parameters).unwrap();
    for refused in [
        "{2380} / {17.5}",
        "two plus two",
        "x + 1",
        ".5 * 2",
        "1\n+ 2",
    ] {
        assert!(
            !schema.is_valid(&json!({"expression": refused})),
            "{refused}"
        );
    }
    for taken in ["e ^ 2 - 1", "(-0.5) * 2", "17.5% of 2380", "sqrt(16)"] {
        assert!(schema.is_valid(&json!({"expression": taken})), "{taken}");
    }
    let taken = "round(log10(1e3) * pi) % 5";
    assert_eq!(
        call(&calc, json!({"expression": taken})).await.unwrap(),
        "4"
    );
}
