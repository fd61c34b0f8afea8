//! What a hostile workspace, skill folder or shared folder cannot do: hang the run on a
//! FIFO, lose a file's text through an edit, lead bubblewrap out through a link, or slip
//! skills in through a folder someone else owns.

use kite_agent::{CancellationToken, ToolContext, Toolkit};
use kite_skills::{Root, RunOptions, Skill, SkillRun, SkillSet, discover};
use serde_json::{Value, json};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

fn valid(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../testdata/skills/valid")
        .join(name)
}

fn run_over(names: &[&str]) -> SkillRun {
    let mut set = SkillSet::new();
    for name in names {
        set.add(Skill::load_dir(&valid(name)).unwrap()).unwrap();
    }
    SkillRun::new(Arc::new(set), RunOptions::default()).unwrap()
}

/// Calls the run's tool `name`; the text it gives and whether it is an error. Each call
/// has 10 s: none of them may wait on anything.
async fn call(run: &SkillRun, name: &str, args: Value) -> (String, bool) {
    let tools = run.tools();
    let tool = tools.iter().find(|t| t.spec().name == name).unwrap();
    let ctx = ToolContext {
        context: Arc::new(()),
        call_id: "c".into(),
        cancel: CancellationToken::new(),
    };
    let called = tokio::time::timeout(Duration::from_secs(10), tool.call(args, ctx));
    match called.await.expect("the tool answered in time") {
        Ok(out) => (format!("{:?}", out.content), out.is_error),
        Err(e) => (e.to_string(), true),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_fifo_is_refused_not_waited_on() {
    let run = run_over(&["word-count"]);
    let fifo = run.workspace().unwrap().join("pipe");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    for (tool, args) in [
        ("view", json!({"path": "pipe"})),
        ("create_file", json!({"path": "pipe", "file_text": "x"})),
        (
            "str_replace",
            json!({"path": "pipe", "old_str": "a", "new_str": "b"}),
        ),
    ] {
        let (said, err) = call(&run, tool, args).await;
        assert!(err, "{tool}: {said}");
        assert!(
            said.contains("not a regular file") || said.contains("No such device"),
            "{tool}: {said}"
        );
    }
}

#[tokio::test]
async fn large_and_binary_files_are_never_cut_by_an_edit() {
    let run = run_over(&["word-count"]);
    let ws = run.workspace().unwrap().to_owned();
    // 1 MiB of numbered lines: more than `view` shows at once.
    let big: String = (1..=100_000).map(|n| format!("line {n:06}\n")).collect();
    std::fs::write(ws.join("big.txt"), &big).unwrap();
    let (said, err) = call(
        &run,
        "str_replace",
        json!({"path": "big.txt", "old_str": "line 099999", "new_str": "LINE 99999"}),
    )
    .await;
    assert!(!err, "{said}");
    let after = std::fs::read_to_string(ws.join("big.txt")).unwrap();
    assert_eq!(after.len(), big.len() - 1, "the whole file is kept");
    assert!(after.contains("LINE 99999\nline 100000\n"));

    // The lines past what one view shows can still be reached by a range.
    let (said, err) = call(
        &run,
        "view",
        json!({"path": "big.txt", "view_range": [99_999, 100_000]}),
    )
    .await;
    assert!(!err, "{said}");
    assert!(
        said.contains("LINE 99999") && said.contains("line 100000"),
        "{said}"
    );
    let (said, _) = call(&run, "view", json!({"path": "big.txt"})).await;
    assert!(said.contains("only 256 KiB are shown"), "{said}");

    // A binary file is not edited as text.
    let binary = [0u8, 159, 146, 150, 255, 0, 1];
    std::fs::write(ws.join("blob.bin"), binary).unwrap();
    let (said, err) = call(
        &run,
        "str_replace",
        json!({"path": "blob.bin", "old_str": "binary", "new_str": "x"}),
    )
    .await;
    assert!(err && said.contains("not text"), "{said}");
    assert_eq!(std::fs::read(ws.join("blob.bin")).unwrap(), binary);
}

#[tokio::test]
async fn a_link_left_where_the_skills_are_mounted_leads_nowhere() {
    let run = run_over(&["word-count"]);
    let outside = tempfile::tempdir().unwrap();
    // Where the skills are mounted, an earlier run left a link out of the workspace: in
    // place of `skills`, then in place of `skills/word-count`.
    let skills = run.workspace().unwrap().join("skills");
    for link in [skills.clone(), skills.join("word-count")] {
        if skills.is_dir() {
            let _ = std::fs::remove_dir_all(&link);
        }
        std::os::unix::fs::symlink(outside.path(), &link).unwrap();
        let (said, err) = call(
            &run,
            "bash",
            json!({"command": "sh skills/word-count/scripts/count.sh skills/word-count/assets/poem.txt"}),
        )
        .await;
        assert!(!err, "{said}");
        assert!(said.contains("words=29"), "{said}");
        assert_eq!(
            std::fs::read_dir(outside.path()).unwrap().count(),
            0,
            "bubblewrap made something outside the workspace"
        );
    }
}

#[test]
fn a_conventional_folder_others_may_write_in_is_left_out() {
    let dir = tempfile::tempdir().unwrap();
    let skills = dir.path().join(".agents/skills");
    let copy = skills.join("word-count");
    std::fs::create_dir_all(copy.join("scripts")).unwrap();
    std::fs::copy(valid("word-count/SKILL.md"), copy.join("SKILL.md")).unwrap();
    let cache = tempfile::tempdir().unwrap();
    let roots = [Root::conventional(&skills)];

    let found = discover(&roots, cache.path());
    assert_eq!(found.skills.len(), 1, "{:?}", found.errors);

    std::fs::set_permissions(
        dir.path().join(".agents"),
        std::fs::Permissions::from_mode(0o777),
    )
    .unwrap();
    let found = discover(&roots, cache.path());
    assert!(found.skills.is_empty());
    assert!(
        found
            .errors
            .iter()
            .any(|e| e.contains("others may write in")),
        "{:?}",
        found.errors
    );
    // Named by the user, the same folder is searched.
    let found = discover(&[Root::explicit(&skills)], cache.path());
    assert_eq!(found.skills.len(), 1, "{:?}", found.errors);

    // A skill's own folder that others may write in, inside a private one, is left out.
    std::fs::set_permissions(
        dir.path().join(".agents"),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    std::fs::set_permissions(&copy, std::fs::Permissions::from_mode(0o777)).unwrap();
    let found = discover(&roots, cache.path());
    assert!(found.skills.is_empty(), "{:?}", found.skills);
    assert!(
        found
            .errors
            .iter()
            .any(|e| e.contains("word-count") && e.contains("others may write in")),
        "{:?}",
        found.errors
    );

    // So is one with anything inside that others may change: a folder, a script, at any
    // depth (only the folder and SKILL.md were once looked at).
    std::fs::set_permissions(&copy, std::fs::Permissions::from_mode(0o755)).unwrap();
    let script = copy.join("scripts/count.sh");
    std::fs::copy(valid("word-count/scripts/count.sh"), &script).unwrap();
    std::os::unix::fs::symlink("/etc/hostname", copy.join("scripts/link")).unwrap();
    assert_eq!(discover(&roots, cache.path()).skills.len(), 1);
    let mode = |path: &Path, mode| {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap()
    };
    let left_out = |because: &str| {
        let found = discover(&roots, cache.path());
        assert!(found.skills.is_empty(), "{:?}", found.skills);
        assert!(
            found.errors.iter().any(|e| e.contains(because)),
            "{:?}",
            found.errors
        );
    };
    mode(&copy.join("scripts"), 0o777);
    left_out("others may write in");
    mode(&copy.join("scripts"), 0o755);
    mode(&script, 0o666);
    left_out("count.sh");
    mode(&script, 0o644);
    assert_eq!(discover(&roots, cache.path()).skills.len(), 1);
    // A SKILL.md that is a link is judged where it leads: kite reads it itself.
    let elsewhere = tempfile::tempdir().unwrap();
    let outside = elsewhere.path().join("SKILL.md");
    std::fs::copy(copy.join("SKILL.md"), &outside).unwrap();
    mode(&outside, 0o666);
    std::fs::remove_file(copy.join("SKILL.md")).unwrap();
    std::os::unix::fs::symlink(&outside, copy.join("SKILL.md")).unwrap();
    left_out("SKILL.md");
    mode(&outside, 0o644);
    assert_eq!(discover(&roots, cache.path()).skills.len(), 1);
    // SAFETY: geteuid(2) has no preconditions and cannot fail.
    if unsafe { libc::geteuid() } == 0 {
        std::os::unix::fs::lchown(&script, Some(65534), None).unwrap();
        left_out("belongs to another user");
    }
}
