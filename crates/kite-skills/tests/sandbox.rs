//! Escapes from the sandbox and the file tools, each refused with a clear error.

use kite_agent::{CancellationToken, ToolContext, Toolkit};
use kite_skills::sandbox::{self, Outcome, SandboxError, Stopped};
use kite_skills::{RunOptions, SandboxOptions, Skill, SkillRun, SkillSet};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn valid(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../testdata/skills/valid")
        .join(name)
}

/// Runs `command` in a sandbox over an empty workspace and the word-count skill.
async fn sandboxed(command: &str, options: SandboxOptions) -> (Outcome, tempfile::TempDir) {
    let ws = tempfile::tempdir().unwrap();
    let ready = sandbox::probe(&options).await;
    assert!(
        ready.is_ok(),
        "bubblewrap cannot start a sandbox here ({ready:?}); run scripts/setup.sh"
    );
    let skills = [("word-count".to_owned(), valid("word-count"))];
    let out = sandbox::run(
        command,
        ws.path(),
        &skills,
        &options,
        ready,
        &CancellationToken::new(),
    )
    .await
    .unwrap();
    (out, ws)
}

fn text(out: &Outcome) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[tokio::test]
async fn nothing_outside_the_workspace_is_writable() {
    let outside = tempfile::tempdir().unwrap();
    let target = outside.path().join("escaped");
    let command = format!(
        "echo x > {t}; echo x > /usr/escaped; echo x > /etc/escaped; \
         echo x > skills/word-count/escaped; echo x > inside; echo done",
        t = target.display()
    );
    let (out, ws) = sandboxed(&command, SandboxOptions::default()).await;
    let shown = text(&out);
    assert!(shown.contains("done"), "{shown}");
    assert!(!target.exists() && !Path::new("/usr/escaped").exists());
    assert!(!Path::new("/etc/escaped").exists());
    assert!(!valid("word-count").join("escaped").exists());
    assert!(shown.contains("Read-only file system"), "{shown}");
    assert!(ws.path().join("inside").exists());
}

#[tokio::test]
async fn secrets_on_the_machine_cannot_be_read() {
    let home = tempfile::tempdir().unwrap();
    std::fs::create_dir(home.path().join(".ssh")).unwrap();
    std::fs::write(home.path().join(".ssh/id_ed25519"), "SECRET-KEY-MATERIAL").unwrap();
    let command = format!(
        "cat {h}/.ssh/id_ed25519; cat ~/.ssh/id_ed25519; cat /etc/shadow; ls /root /home; \
         env",
        h = home.path().display()
    );
    let (out, _ws) = sandboxed(&command, SandboxOptions::default()).await;
    let shown = text(&out);
    assert!(!shown.contains("SECRET-KEY-MATERIAL"), "{shown}");
    assert!(shown.contains("/etc/shadow: No such file"), "{shown}");
    // The environment is a few plain variables, none of kite's.
    assert!(
        !shown.contains("CARGO") && !shown.contains("KITE"),
        "{shown}"
    );
}

#[tokio::test]
async fn there_is_no_network_unless_allowed() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let command = format!(
        "python3 -c \"import socket; socket.create_connection(('127.0.0.1', {port}), 2); \
         print('CONNECTED')\""
    );
    let (out, _ws) = sandboxed(&command, SandboxOptions::default()).await;
    let shown = text(&out);
    assert!(!shown.contains("CONNECTED"), "{shown}");
    assert!(
        shown.contains("Connection refused") || shown.contains("unreachable"),
        "{shown}"
    );
    assert!(
        listener.accept().is_err(),
        "the host's listener was reached"
    );
    assert_ne!(out.status, Some(0));
}

/// Processes whose command line holds `marker`.
fn processes_with(marker: &str) -> usize {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| std::fs::read(e.ok()?.path().join("cmdline")).ok())
        .filter(|c| String::from_utf8_lossy(c).contains(marker))
        .count()
}

#[tokio::test]
async fn a_fork_bomb_is_stopped_and_leaves_nothing_behind() {
    let marker = format!("bomb{}", std::process::id());
    let options = SandboxOptions {
        timeout: Duration::from_secs(2),
        ..SandboxOptions::default()
    };
    let started = Instant::now();
    // Silenced, so the shell's "fork: retry" complaints under a process
    // cap cannot end the run by the output cap before the time limit.
    let command =
        format!("exec 2>/dev/null; {marker}() {{ {marker} | {marker} & }}; {marker}; sleep 60");
    let (out, _ws) = sandboxed(&command, options).await;
    assert_eq!(out.stopped, Some(Stopped::TimedOut(Duration::from_secs(2))));
    assert!(started.elapsed() < Duration::from_secs(20));
    let mut left = usize::MAX;
    for _ in 0..50 {
        left = processes_with(&marker);
        if left == 0 {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(left, 0, "processes of the bomb outlived it");
}

#[tokio::test]
async fn endless_output_is_capped() {
    let started = Instant::now();
    let (out, _ws) = sandboxed("yes gigabytes", SandboxOptions::default()).await;
    assert_eq!(out.stopped, Some(Stopped::TooMuchOutput(64 * 1024)));
    assert!(out.stdout.len() + out.stderr.len() <= 64 * 1024);
    assert!(started.elapsed() < Duration::from_secs(20));
}

#[tokio::test]
async fn cancelling_kills_the_whole_group() {
    let marker = format!("cancel{}", std::process::id());
    let ws = tempfile::tempdir().unwrap();
    let options = SandboxOptions::default();
    let cancel = CancellationToken::new();
    let later = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(500)).await;
        later.cancel();
    });
    let command = format!("sh -c 'sleep 60; echo {marker}' & sh -c 'sleep 61; echo {marker}'");
    let ready = sandbox::probe(&options).await;
    let out = sandbox::run(&command, ws.path(), &[], &options, ready, &cancel)
        .await
        .unwrap();
    assert_eq!(out.stopped, Some(Stopped::Cancelled));
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(processes_with(&marker), 0);
}

#[tokio::test]
async fn without_a_sandbox_scripts_are_refused_unless_allowed_loudly() {
    let ws = tempfile::tempdir().unwrap();
    let mut options = SandboxOptions {
        bwrap: "/nonexistent/bwrap".into(),
        ..SandboxOptions::default()
    };
    let ready = sandbox::probe(&options).await;
    assert!(ready.is_err());
    let err = sandbox::run(
        "echo hi",
        ws.path(),
        &[],
        &options,
        ready.clone(),
        &CancellationToken::new(),
    )
    .await
    .unwrap_err();
    assert!(matches!(err, SandboxError::NoSandbox(_)));
    let said = err.to_string();
    assert!(said.contains("apt install bubblewrap"), "{said}");
    assert!(
        said.contains("--dangerously-run-scripts-unsandboxed"),
        "{said}"
    );

    options.dangerously_unsandboxed = true;
    let out = sandbox::run(
        "echo hi",
        ws.path(),
        &[],
        &options,
        ready,
        &CancellationToken::new(),
    )
    .await
    .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "hi\n");
}

/// A run over a copy of the release-notes skill, which has a link pointing out.
fn run_with_leaky_skill() -> (SkillRun, tempfile::TempDir) {
    let copy = tempfile::tempdir().unwrap();
    let dir = copy.path().join("release-notes");
    std::fs::create_dir_all(dir.join("references")).unwrap();
    std::fs::copy(
        valid("release-notes").join("SKILL.md"),
        dir.join("SKILL.md"),
    )
    .unwrap();
    std::os::unix::fs::symlink("/etc/passwd", dir.join("references/leak.md")).unwrap();
    let mut set = SkillSet::new();
    set.add(Skill::load_dir(&dir).unwrap()).unwrap();
    let run = SkillRun::new(Arc::new(set), RunOptions::default()).unwrap();
    (run, copy)
}

async fn call(run: &SkillRun, name: &str, args: Value) -> (String, bool) {
    let tools = run.tools();
    let tool = tools.iter().find(|t| t.spec().name == name).unwrap();
    let ctx = ToolContext {
        context: Arc::new(()),
        call_id: "c".into(),
        cancel: CancellationToken::new(),
    };
    match tool.call(args, ctx).await {
        Ok(out) => (format!("{:?}", out.content), out.is_error),
        Err(e) => (e.to_string(), true),
    }
}

#[tokio::test]
async fn the_file_tools_stay_inside() {
    let existed = (Path::new("/etc/x").exists(), Path::new("/tmp/x").exists());
    let (run, _copy) = run_with_leaky_skill();
    std::os::unix::fs::symlink("/etc", run.workspace().join("etc-link")).unwrap();
    for (tool, args, says) in [
        (
            "view",
            json!({"path": "../../etc/passwd"}),
            "`..` is refused",
        ),
        (
            "view",
            json!({"path": "skills/release-notes/../../x"}),
            "`..` is refused",
        ),
        (
            "view",
            json!({"path": "/etc/passwd"}),
            "absolute paths are refused",
        ),
        ("view", json!({"path": "etc-link/passwd"}), "leads outside"),
        (
            "view",
            json!({"path": "skills/release-notes/references/leak.md"}),
            "leads outside",
        ),
        (
            "view",
            json!({"path": "skills/nope/SKILL.md"}),
            "no skill named `nope`",
        ),
        (
            "create_file",
            json!({"path": "etc-link/x", "file_text": "x"}),
            "leads outside",
        ),
        (
            "create_file",
            json!({"path": "/tmp/x", "file_text": "x"}),
            "absolute",
        ),
        (
            "create_file",
            json!({"path": "skills/release-notes/x", "file_text": "x"}),
            "read-only",
        ),
        (
            "str_replace",
            json!({"path": "etc-link/passwd", "old_str": "root", "new_str": "x"}),
            "leads outside",
        ),
    ] {
        let (shown, is_error) = call(&run, tool, args.clone()).await;
        assert!(is_error, "{tool} {args}: {shown}");
        assert!(shown.contains(says), "{tool} {args}: {shown}");
        assert!(!shown.contains("root:x:0"), "{shown}");
    }
    // Nothing was made there (whatever another program may have put there before).
    assert_eq!(
        (Path::new("/etc/x").exists(), Path::new("/tmp/x").exists()),
        existed
    );
}

#[tokio::test]
async fn the_file_tools_work_in_the_workspace() {
    let (run, _copy) = run_with_leaky_skill();
    let (said, err) = call(
        &run,
        "create_file",
        json!({"path": "notes/a.md", "file_text": "one two one"}),
    )
    .await;
    assert!(!err, "{said}");
    let (said, err) = call(
        &run,
        "str_replace",
        json!({"path": "notes/a.md", "old_str": "one", "new_str": "1"}),
    )
    .await;
    assert!(err && said.contains("occurs 2 times"), "{said}");
    let (said, err) = call(
        &run,
        "str_replace",
        json!({"path": "notes/a.md", "old_str": "two", "new_str": "2"}),
    )
    .await;
    assert!(!err, "{said}");
    let (said, _) = call(&run, "view", json!({"path": "notes/a.md"})).await;
    assert!(said.contains("one 2 one"), "{said}");
    let (said, _) = call(&run, "view", json!({"path": "."})).await;
    assert!(said.contains("notes/a.md"), "{said}");
    let (said, _) = call(
        &run,
        "bash",
        json!({"command": "cat notes/a.md; ls skills"}),
    )
    .await;
    assert!(
        said.contains("one 2 one") && said.contains("release-notes"),
        "{said}"
    );
}
