//! What the sandbox's test files share: the test skills, one command in a sandbox, and the
//! rerun of a file's tests as an ordinary user.

#![allow(dead_code)]

use kite_agent::CancellationToken;
use kite_skills::SandboxOptions;
use kite_skills::sandbox::{self, Outcome, Workspace};
use std::path::{Path, PathBuf};

/// A valid test skill: from `KITE_TEST_SKILLS` when this binary runs as another user
/// (who may not reach the repository), else from the repository.
pub(crate) fn valid(name: &str) -> PathBuf {
    match std::env::var_os("KITE_TEST_SKILLS") {
        Some(dir) => PathBuf::from(dir).join(name),
        None => Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../testdata/skills/valid")
            .join(name),
    }
}

/// Whether these tests run as root.
pub(crate) fn root() -> bool {
    // SAFETY: geteuid(2) has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// Runs `command` in a sandbox over an empty workspace and the word-count skill.
pub(crate) async fn sandboxed(command: &str, options: SandboxOptions) -> (Outcome, Workspace) {
    let ws = Workspace::new(options.max_workspace, false).unwrap();
    let ready = sandbox::probe(&options).await;
    assert!(
        ready.is_ok(),
        "bubblewrap cannot start a sandbox here ({ready:?}); run scripts/setup.sh --tests"
    );
    let skills = [("word-count".to_owned(), valid("word-count"))];
    let out = sandbox::run(
        command,
        &ws,
        &skills,
        &options,
        ready,
        &CancellationToken::new(),
    )
    .await
    .unwrap();
    (out, ws)
}

/// A command's stdout then stderr, as text.
pub(crate) fn text(out: &Outcome) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Runs the calling test binary's other tests again as an ordinary user (as root: `nobody`,
/// through `setpriv`), from copies that user can reach; `me` is the calling test, skipped.
/// Nothing to do when already an ordinary user, or when this is the rerun.
pub(crate) fn rerun_as_ordinary_user(me: &str) {
    if std::env::var_os("KITE_TEST_SKILLS").is_some() {
        return;
    }
    if !root() {
        eprintln!("these tests already run as an ordinary user");
        return;
    }
    // One at a time: an ordinary user's sandboxes share one process count (no cgroup), and
    // the fork bomb would take the others' share.
    as_nobody(&["--skip", me, "--test-threads=1"], &[]);
}

/// Runs this test binary as `nobody` (kite being root), from a copy that user can reach,
/// with `args` (which tests) and `env`; fails unless its tests pass and some ran.
pub(crate) fn as_nobody(args: &[&str], env: &[(&str, String)]) {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let exe = dir.path().join("sandbox-tests");
    // Copied by `cp`, not here: a child another test starts meanwhile would inherit the
    // copy's open handle, and running the copy would fail as "text file busy".
    let copied = std::process::Command::new("cp")
        .arg(std::env::current_exe().unwrap())
        .arg(&exe)
        .status()
        .unwrap();
    assert!(copied.success());
    let skills = dir.path().join("skills");
    for name in ["word-count", "release-notes"] {
        copy_tree(&valid(name), &skills.join(name));
    }
    let out = std::process::Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
        .arg(&exe)
        .args(args)
        .env("KITE_TEST_SKILLS", &skills)
        .env("HOME", dir.path())
        .envs(env.iter().map(|(k, v)| (k, v)))
        .current_dir(dir.path())
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "as uid 65534:\n{said}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(said.contains("test result: ok"), "{said}");
    assert!(!said.contains(" 0 passed"), "{said}");
}

fn copy_tree(from: &Path, to: &Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(to).unwrap();
    std::fs::set_permissions(to, std::fs::Permissions::from_mode(0o755)).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
            std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o644)).unwrap();
        }
    }
}
