//! Escapes from the sandbox and the file tools, each refused with a clear error.

mod common;

use common::{root, sandboxed, text, valid};
use kite_agent::{CancellationToken, ToolContext, Toolkit};
use kite_skills::sandbox::{self, SandboxError, Stopped, Workspace};
use kite_skills::{RunOptions, SandboxOptions, Skill, SkillRun, SkillSet};
use serde_json::{Value, json};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

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
    // By the time limit, or sooner by the CPU it took (where no cgroup caps its rate).
    assert!(
        matches!(
            out.stopped,
            Some(Stopped::TimedOut(_) | Stopped::TooMuchCpu(_))
        ),
        "{:?}",
        out.stopped
    );
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
    let options = SandboxOptions::default();
    let ws = Workspace::new(options.max_workspace, false).unwrap();
    let cancel = CancellationToken::new();
    let later = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(500)).await;
        later.cancel();
    });
    let command = format!("sh -c 'sleep 60; echo {marker}' & sh -c 'sleep 61; echo {marker}'");
    let ready = sandbox::probe(&options).await;
    let out = sandbox::run(&command, &ws, &[], &options, ready, &cancel)
        .await
        .unwrap();
    assert_eq!(out.stopped, Some(Stopped::Cancelled));
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(processes_with(&marker), 0);
}

#[tokio::test]
async fn without_a_sandbox_scripts_are_refused_unless_allowed_loudly() {
    let ws = Workspace::new(None, true).unwrap();
    let mut options = SandboxOptions {
        bwrap: "/nonexistent/bwrap".into(),
        ..SandboxOptions::default()
    };
    let ready = sandbox::probe(&options).await;
    assert!(ready.is_err());
    let err = sandbox::run(
        "echo hi",
        &ws,
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
        &ws,
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
    std::os::unix::fs::symlink("/etc", run.workspace().unwrap().join("etc-link")).unwrap();
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

#[tokio::test]
async fn no_privilege_is_left_inside_even_as_root() {
    // Each escape prints ESCAPED when it works. Run as root, the sandbox once kept every
    // capability: remounting /usr read-write and writing the host's /usr worked.
    let command = "\
        id -u; grep -E '^Cap(Eff|Prm|Bnd|Amb)' /proc/self/status; \
        mount -o remount,bind,rw /usr 2>&1 && echo ESCAPED:remount; \
        mount -o remount,rw /workspace/skills/word-count 2>&1 && echo ESCAPED:remount-skill; \
        mount -t tmpfs none /mnt 2>&1 && echo ESCAPED:mount; \
        chroot / true 2>&1 && echo ESCAPED:chroot; \
        unshare -U true 2>&1 && echo ESCAPED:unshare-user; \
        unshare -m true 2>&1 && echo ESCAPED:unshare-mount; \
        unshare -n true 2>&1 && echo ESCAPED:unshare-net; \
        python3 -c 'import socket; socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)' 2>&1 && echo ESCAPED:raw-socket; \
        python3 -c 'import socket; socket.socket(socket.AF_PACKET, socket.SOCK_RAW)' 2>&1 && echo ESCAPED:packet-socket; \
        touch /usr/kite-escaped 2>&1 && echo ESCAPED:usr; \
        touch skills/word-count/kite-escaped 2>&1 && echo ESCAPED:skill-folder; \
        ls /proc/1/root/root /proc/1/root/etc/shadow /proc/1/root/home 2>&1 && echo ESCAPED:proc-root; \
        echo checked";
    let (out, _ws) = sandboxed(command, SandboxOptions::default()).await;
    let shown = text(&out);
    assert!(shown.contains("checked"), "{shown}");
    assert!(!shown.contains("ESCAPED"), "{shown}");
    assert!(!Path::new("/usr/kite-escaped").exists());
    assert!(!valid("word-count").join("kite-escaped").exists());
    // No capability of any kind, and never root's id.
    for line in shown.lines().filter(|l| l.starts_with("Cap")) {
        assert!(line.ends_with("0000000000000000"), "{line}");
    }
    let uid: u32 = shown.lines().next().unwrap().trim().parse().unwrap();
    assert_ne!(uid, 0, "{shown}");
}

#[tokio::test]
async fn folders_behind_a_closed_folder_still_reach_the_command() {
    // As root, the command runs as an id that cannot walk into a 0700 folder of root's,
    // where root's own skills live (/root): every command once failed there.
    let closed = tempfile::tempdir().unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(closed.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
    let skill = closed.path().join("inner/word-count");
    std::fs::create_dir_all(skill.join("scripts")).unwrap();
    for file in ["SKILL.md", "scripts/count.sh"] {
        std::fs::copy(valid("word-count").join(file), skill.join(file)).unwrap();
    }
    let options = SandboxOptions::default();
    let ws = Workspace::new(options.max_workspace, false).unwrap();
    let ready = sandbox::probe(&options).await;
    let out = sandbox::run(
        "echo one two > made && sh skills/word-count/scripts/count.sh made && ls skills",
        &ws,
        &[("word-count".to_owned(), skill.clone())],
        &options,
        ready,
        &CancellationToken::new(),
    )
    .await
    .unwrap();
    let shown = text(&out);
    assert_eq!(out.status, Some(0), "{shown}");
    assert!(shown.contains("words=2"), "{shown}");
    assert!(shown.contains("word-count"), "{shown}");
    assert!(ws.path().join("made").exists());
    assert!(!skill.join("made").exists());
}

#[tokio::test]
async fn memory_is_capped() {
    let options = SandboxOptions {
        max_memory: Some(256 << 20),
        ..SandboxOptions::default()
    };
    let command = "python3 -c 'b = bytearray(2 << 30); b[::4096] = b\"x\" * len(b[::4096]); print(\"ALLOCATED\")'";
    let (out, _ws) = sandboxed(command, options).await;
    let shown = text(&out);
    assert!(!shown.contains("ALLOCATED"), "{shown}");
    // A memory cgroup kills the process; an rlimit makes the allocation fail.
    assert!(
        out.stopped == Some(Stopped::OutOfMemory(256 << 20)) || shown.contains("MemoryError"),
        "{:?} {shown}",
        out.stopped
    );
}

#[tokio::test]
async fn memory_is_capped_for_the_whole_command() {
    let options = SandboxOptions {
        max_memory: Some(512 << 20),
        ..SandboxOptions::default()
    };
    // Each process stays under the cap; together they pass it.
    let command = "for i in 1 2 3 4 5 6; do python3 -c 'import time; b = bytearray(200 << 20); \
                   b[::4096] = b\"x\" * len(b[::4096]); time.sleep(3); print(\"held\")' & done; wait";
    let started = Instant::now();
    let (out, _ws) = sandboxed(command, options).await;
    let shown = text(&out);
    // A cgroup's kernel kills some of them; the tally, the whole command.
    assert!(shown.matches("held").count() < 6, "{shown}");
    assert_eq!(
        out.stopped,
        Some(Stopped::OutOfMemory(512 << 20)),
        "{shown}"
    );
    assert!(started.elapsed() < Duration::from_secs(8), "{shown}");
}

#[tokio::test]
async fn cpu_is_capped() {
    let options = SandboxOptions {
        max_cpus: Some(0.25),
        timeout: Duration::from_secs(10),
        ..SandboxOptions::default()
    };
    // Two processes that would take two seconds of CPU each.
    let command = "for i in 1 2; do timeout 2 sh -c 'while :; do :; done' & done; wait; times";
    let (out, _ws) = sandboxed(command, options).await;
    let shown = text(&out);
    match out.stopped {
        // No cgroup: the CPU time of the whole command (10 s at a quarter of a CPU).
        Some(Stopped::TooMuchCpu(max)) => assert_eq!(max, Duration::from_millis(2500)),
        // A cgroup: a quarter of a CPU at most, while they ran.
        None => {
            let children = shown.lines().nth(1).unwrap_or_else(|| panic!("{shown}"));
            let seconds: f64 = children
                .split_whitespace()
                .filter_map(|t| {
                    let (m, s) = t.strip_suffix('s')?.split_once('m')?;
                    Some(m.parse::<f64>().ok()? * 60.0 + s.parse::<f64>().ok()?)
                })
                .sum();
            assert!(seconds < 0.8, "{seconds} s of CPU: {shown}");
        }
        other => panic!("{other:?}: {shown}"),
    }
}

#[tokio::test]
async fn tmp_has_a_size() {
    let options = SandboxOptions {
        max_tmp: Some(8 << 20),
        ..SandboxOptions::default()
    };
    for tmp in ["/tmp", "/dev/shm"] {
        let (out, _ws) = sandboxed(
            &format!("dd if=/dev/zero of={tmp}/big bs=1M count=64 2>&1; du -m {tmp}/big"),
            options.clone(),
        )
        .await;
        let shown = text(&out);
        assert!(shown.contains("No space left on device"), "{tmp}: {shown}");
        let mib: u64 = shown
            .lines()
            .last()
            .unwrap()
            .split_whitespace()
            .next()
            .unwrap()
            .parse()
            .unwrap();
        assert!(mib <= 8, "{tmp}: {shown}");
    }
    // Nothing else in /dev takes a file; its devices still work.
    let (out, _ws) = sandboxed(
        "echo x > /dev/null && echo null-ok; echo x > /dev/filler 2>&1",
        options,
    )
    .await;
    let shown = text(&out);
    assert!(shown.contains("null-ok"), "{shown}");
    assert!(shown.contains("Read-only file system"), "{shown}");
}

#[tokio::test]
async fn the_workspace_has_a_quota_no_command_outruns() {
    let options = SandboxOptions {
        max_workspace: Some(16 << 20),
        ..SandboxOptions::default()
    };
    // Space reserved at once, with and without the file's size, and written: each stops
    // at the quota, on the spot.
    let command = "fallocate -l 8G big 2>&1; : > kept; fallocate -n -l 8G kept 2>&1; \
                   : > some; fallocate -n -l 12M some && fallocate -n -o 12M -l 8M some 2>&1; \
                   dd if=/dev/zero of=one bs=1M count=64 2>&1; df -k . ; echo done";
    let started = Instant::now();
    let (out, ws) = sandboxed(command, options.clone()).await;
    let shown = text(&out);
    assert!(started.elapsed() < Duration::from_secs(20), "{shown}");
    assert!(shown.contains("done"), "{shown}");
    assert!(shown.contains("No space left on device"), "{shown}");
    assert_eq!(out.stopped, None, "{shown}");
    // What the workspace holds on disk never passed the quota.
    let used: u64 = std::fs::read_dir(ws.path())
        .unwrap()
        .map(|e| {
            use std::os::unix::fs::MetadataExt;
            e.unwrap().metadata().unwrap().blocks() * 512
        })
        .sum();
    assert!(used <= 16 << 20, "{used} bytes: {shown}");
    assert!(ws.free().unwrap() < 1 << 20, "{shown}");
    // Nor does the count of files.
    let (out, _ws) = sandboxed(
        "mkdir d; cd d; i=0; while [ $i -lt 30000 ]; do true > $i || break; i=$((i+1)); done; \
         echo made $i",
        options,
    )
    .await;
    let shown = text(&out);
    let made: u64 = shown
        .lines()
        .find_map(|l| l.strip_prefix("made "))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("{shown}"));
    assert!(made < kite_skills::sandbox::MAX_ENTRIES, "{shown}");
    assert!(shown.contains("No space left on device"), "{shown}");
}

#[tokio::test]
async fn what_commands_and_tools_make_is_private() {
    use std::os::unix::fs::PermissionsExt;
    let mode = |p: &Path| p.symlink_metadata().unwrap().permissions().mode() & 0o777;
    let (run, _copy) = run_with_leaky_skill();
    let top = run.workspace().unwrap().metadata().unwrap();
    assert_eq!(top.permissions().mode() & 0o777, 0o700);
    let (said, err) = call(
        &run,
        "create_file",
        json!({"path": "made/by/tool.txt", "file_text": "tool"}),
    )
    .await;
    assert!(!err, "{said}");
    // The command can use what the tools made, and what it makes is its own alone.
    let (said, err) = call(
        &run,
        "bash",
        json!({"command": "cat made/by/tool.txt && echo more >> made/by/tool.txt && mkdir -p cmd/dir && echo x > cmd/dir/file"}),
    )
    .await;
    assert!(!err && said.contains("tool"), "{said}");
    let ws = run.workspace().unwrap();
    for (path, want) in [
        ("made", 0o700),
        ("made/by", 0o700),
        ("made/by/tool.txt", 0o600),
        ("cmd", 0o700),
        ("cmd/dir", 0o700),
        ("cmd/dir/file", 0o600),
    ] {
        assert_eq!(mode(&ws.join(path)), want, "{path}");
    }
    if root() {
        // Everything is the sandbox's unprivileged id's, not root's.
        use std::os::unix::fs::MetadataExt;
        let owner = ws.metadata().unwrap().uid();
        assert_ne!(owner, 0);
        for path in ["made/by/tool.txt", "cmd/dir/file"] {
            assert_eq!(ws.join(path).metadata().unwrap().uid(), owner, "{path}");
        }
    }
}

#[tokio::test]
async fn a_full_workspace_says_so_and_the_run_goes_on() {
    let mut set = SkillSet::new();
    set.add(Skill::load_dir(&valid("word-count")).unwrap())
        .unwrap();
    let options = RunOptions {
        sandbox: SandboxOptions {
            max_workspace: Some(8 << 20),
            ..SandboxOptions::default()
        },
    };
    let run = SkillRun::new(Arc::new(set), options).unwrap();
    let (said, _) = call(
        &run,
        "bash",
        json!({"command": "for i in 1 2 3; do head -c 4000000 /dev/urandom > f$i; done"}),
    )
    .await;
    assert!(said.contains("No space left on device"), "{said}");
    assert!(said.contains("the workspace is full"), "{said}");
    // The run goes on: a file too large for the room left is refused before it is written,
    // and once room is made, what fits is written.
    let big = "x".repeat(2 << 20);
    let (said, err) = call(
        &run,
        "create_file",
        json!({"path": "big", "file_text": big}),
    )
    .await;
    assert!(err && said.contains("no room"), "{said}");
    assert!(!run.workspace().unwrap().join("big").exists());
    let (said, err) = call(&run, "bash", json!({"command": "rm f1 f2 f3; echo freed"})).await;
    assert!(!err && said.contains("freed"), "{said}");
    let (said, err) = call(
        &run,
        "create_file",
        json!({"path": "big", "file_text": big}),
    )
    .await;
    assert!(!err, "{said}");
    assert_eq!(
        std::fs::metadata(run.workspace().unwrap().join("big"))
            .unwrap()
            .len(),
        2 << 20
    );
}

/// Runs this file's other tests again as an ordinary user: the sandbox must hold either
/// way.
#[test]
fn the_sandbox_holds_for_an_ordinary_user_too() {
    common::rerun_as_ordinary_user("the_sandbox_holds_for_an_ordinary_user_too");
}

#[tokio::test]
async fn a_link_a_command_leaves_in_place_of_the_mount_points_leads_nowhere() {
    let outside = tempfile::tempdir().unwrap();
    let mut set = SkillSet::new();
    set.add(Skill::load_dir(&valid("word-count")).unwrap())
        .unwrap();
    let run = SkillRun::new(Arc::new(set), RunOptions::default()).unwrap();
    let swap = format!(
        "rm -rf skills; ln -s {o} skills; echo swapped",
        o = outside.path().display()
    );
    // Several at once: one at a time they run, and none leads kite out.
    let calls = (0..4).map(|i| {
        let command = match i % 2 {
            0 => swap.clone(),
            _ => "cat skills/word-count/SKILL.md | head -2".to_owned(),
        };
        let run = run.clone();
        async move { call(&run, "bash", json!({ "command": command })).await }
    });
    for (said, _) in futures_util::future::join_all(calls).await {
        assert!(!said.contains("No such file"), "{said}");
    }
    assert_eq!(
        std::fs::read_dir(outside.path()).unwrap().count(),
        0,
        "something was made through the link"
    );
    let (said, err) = call(
        &run,
        "bash",
        json!({"command": "head -2 skills/word-count/SKILL.md"}),
    )
    .await;
    assert!(!err && said.contains("name: word-count"), "{said}");
}
