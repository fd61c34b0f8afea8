//! Running a skill's command: in a bubblewrap sandbox where one can be had, never silently
//! without one.
//!
//! Inside the sandbox the command sees `/usr` (and the usual links into it) read-only, a
//! private `/tmp` of a bounded size, `/proc` and `/dev`, the run's workspace at
//! `/workspace` (its working directory, writable) and each skill's folder read-only at
//! `/workspace/skills/NAME`. Nothing else of the machine is there: no home folder, no
//! `/etc` beyond what programs need to start, no network unless the options allow it. It
//! has its own user, process, IPC and UTS namespaces, no capability, no further user
//! namespace, no environment but a few plain variables, a session of its own, and dies
//! with kite; a fresh session keyring, none of kite's descriptors, and a system-call
//! filter (`confine.rs`). As root, it runs as an unprivileged id (`identity.rs`). The workspace and
//! the skills are opened once and mounted from their descriptors (`stage.rs`), so that
//! no link swapped into their paths can redirect them and the id need not reach them.
//!
//! Every command has a time limit, an output cap, a memory cap and a cap on its
//! processes (`limits.rs`): on any of them, on cancel, or when the call is dropped, its
//! whole process group is killed (and with the sandbox's first process, its process
//! namespace). The workspace is a file system of its own whose size the kernel bounds
//! (`workspace.rs`).

mod bwrap;
mod confine;
mod identity;
mod limits;
mod network;
mod stage;
mod tally;
mod workspace;

use bwrap::Prepared;

pub use identity::Id;
pub use network::Cidr;
pub use workspace::{MAX_ENTRIES, Workspace};

use kite_agent::CancellationToken;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::process::{ChildStderr, ChildStdout, Command};

/// How commands run.
#[derive(Clone, Debug)]
pub struct SandboxOptions {
    /// The bubblewrap program (`bwrap`, looked up on kite's `PATH`).
    pub bwrap: PathBuf,
    /// Lets commands reach the internet (through `pasta`), and nothing of the host or of
    /// private networks but those in `allow_networks`.
    pub network: bool,
    /// Networks commands with `network` may reach although they are private (or the
    /// host's own).
    pub allow_networks: Vec<Cidr>,
    /// How long one command may run.
    pub timeout: Duration,
    /// The most bytes of output (stdout and stderr together) kept; past it the command is
    /// stopped.
    pub max_output: usize,
    /// The most processes a command may have at once, where kite can set a cap (a `pids`
    /// cgroup); elsewhere the time limit stops a fork bomb.
    pub max_processes: Option<u32>,
    /// The most memory a command's processes may use together: a memory cgroup, where
    /// kite can make one; elsewhere, an address-space rlimit on each and their private
    /// memory added up while it runs. Its `/tmp` is memory too.
    pub max_memory: Option<u64>,
    /// How many CPUs' time a command may use at once, where a cgroup caps it; elsewhere,
    /// its processes together may use this many times its time limit in CPU time.
    pub max_cpus: Option<f64>,
    /// The size of the sandbox's `/tmp`, and of its `/dev/shm`: each lives in the host's
    /// memory.
    pub max_tmp: Option<u64>,
    /// The most the workspace may hold (also the largest file a command may write): the
    /// size of its file system, in memory, where a write past it fails as on a full disk.
    pub max_workspace: Option<u64>,
    /// Runs commands with no sandbox at all when bubblewrap cannot start one. They can then
    /// read and write whatever kite can: only for skills you trust completely.
    pub dangerously_unsandboxed: bool,
}

impl Default for SandboxOptions {
    fn default() -> Self {
        Self {
            bwrap: PathBuf::from("bwrap"),
            network: false,
            allow_networks: Vec::new(),
            timeout: Duration::from_secs(60),
            max_output: 64 * 1024,
            max_processes: Some(256),
            max_memory: Some(1 << 30),
            max_cpus: Some(1.0),
            max_tmp: Some(64 << 20),
            max_workspace: Some(256 << 20),
            dangerously_unsandboxed: false,
        }
    }
}

/// What became of a command.
#[derive(Debug)]
pub struct Outcome {
    /// The exit status, when it exited by itself.
    pub status: Option<i32>,
    /// Its output, stdout then stderr, each cut at the cap.
    pub stdout: Vec<u8>,
    /// Its standard error.
    pub stderr: Vec<u8>,
    /// Why it was stopped, if it was.
    pub stopped: Option<Stopped>,
}

/// Why a command was stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stopped {
    /// It ran past the time limit.
    TimedOut(Duration),
    /// It wrote more than the output cap.
    TooMuchOutput(usize),
    /// The run was cancelled.
    Cancelled,
    /// It used more memory than the cap (bytes).
    OutOfMemory(u64),
    /// Its processes used more CPU time together than they may in all.
    TooMuchCpu(Duration),
}

/// Why a command could not run.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    /// No sandbox could be started, and running without one was not allowed.
    #[error(
        "scripts are not run without a sandbox, and bubblewrap could not start one here \
         ({0}). Install bubblewrap 0.8 or later (Debian and Ubuntu: apt install bubblewrap), \
         or, only for \
         skills you trust completely, allow running them unconfined \
         (--dangerously-run-scripts-unsandboxed, or SandboxOptions::dangerously_unsandboxed)"
    )]
    NoSandbox(String),
    /// The command could not be started.
    #[error("cannot start the command: {0}")]
    Spawn(std::io::Error),
}

/// Whether bubblewrap can start a sandbox here, over a workspace of its own: `Err` says why
/// not.
pub async fn probe(options: &SandboxOptions) -> Result<(), String> {
    let workspace = Workspace::new(Some(1 << 20), false).map_err(|e| e.to_string())?;
    let prepared = Prepared::new(&workspace, &[], options)
        .map_err(|e| format!("cannot prepare the sandbox: {e}"))?;
    let mut cmd = prepared
        .command(options, None)
        .map_err(|e| format!("cannot prepare the sandbox: {e}"))?;
    cmd.arg("--").arg("true");
    let out = cmd
        .env_clear()
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .output();
    match tokio::time::timeout(Duration::from_secs(10), out).await {
        Err(_) => Err("bubblewrap did not start within 10 s".into()),
        Ok(Err(e)) => Err(format!("{}: {e}", options.bwrap.display())),
        Ok(Ok(o)) if o.status.success() => Ok(()),
        Ok(Ok(o)) => Err(String::from_utf8_lossy(&o.stderr).trim().to_owned()),
    }
}

/// Runs `command` with `sh -c` in `workspace`, with the skills' folders (`(name, dir)`)
/// under `skills/` in it; `sandbox` is what [`probe`] said. As root, the command runs as
/// the workspace's own unprivileged id.
pub async fn run(
    command: &str,
    workspace: &Workspace,
    skills: &[(String, PathBuf)],
    options: &SandboxOptions,
    sandbox: Result<(), String>,
    cancel: &CancellationToken,
) -> Result<Outcome, SandboxError> {
    let cpu = options.max_cpus.map(|cpus| limits::Cpu {
        cpus,
        time: options.timeout,
    });
    let limits = limits::Limits::new(
        options.max_processes,
        options.max_memory,
        cpu,
        options.max_workspace,
    );
    // The folders stay open until bubblewrap has started with them.
    let mut prepared = None;
    let (mut cmd, home) = match sandbox {
        Ok(()) => {
            let p = prepared
                .insert(Prepared::new(workspace, skills, options).map_err(SandboxError::Spawn)?);
            let bounds = limits.for_child(threads(p.runs_as(), limits.pids_capped()).await);
            let mut cmd = p
                .command(options, Some(bounds))
                .map_err(SandboxError::Spawn)?;
            cmd.args(["--", "/bin/sh", "-c", command]);
            (cmd, "/workspace".to_owned())
        }
        Err(why) if !options.dangerously_unsandboxed => return Err(SandboxError::NoSandbox(why)),
        Err(_) => {
            link_skills(workspace.path(), skills);
            let mut cmd = Command::new("/bin/sh");
            cmd.args(["-c", command]).current_dir(workspace.path());
            // SAFETY: getuid(2) has no preconditions and cannot fail.
            let me = unsafe { libc::getuid() };
            let bounds = limits.for_child(threads(Some(me), limits.pids_capped()).await);
            let filter = confine::for_child().map_err(SandboxError::Spawn)?;
            // SAFETY: the closure only calls write(2) and setrlimit(2) (`ChildLimits`),
            // keyctl(2), close_range(2), fcntl(2), prctl(2) and seccomp(2) (`Child`).
            unsafe {
                cmd.pre_exec(move || {
                    bounds.apply()?;
                    confine::Child {
                        keep: &[],
                        filter: Some(filter),
                    }
                    .apply()
                });
            }
            (cmd, workspace.path().display().to_string())
        }
    };
    cmd.env_clear()
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .env("HOME", home)
        .env("LANG", "C.UTF-8")
        .env("TMPDIR", "/tmp")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    let mut child = cmd.spawn().map_err(SandboxError::Spawn)?;
    // The folders' descriptors and mounts' copies are the child's now.
    drop(cmd);
    drop(prepared);
    let mut group = Group(child.id());
    let (out, err) = (child.stdout.take(), child.stderr.take());
    let (mut stdout, mut stderr) = (Vec::new(), Vec::new());
    let cap = options.max_output;
    let uncapped = limits.uncapped();
    let mut stopped = tokio::select! {
        over = collect(out, err, cap, &mut stdout, &mut stderr) => {
            over.then_some(Stopped::TooMuchOutput(cap))
        }
        () = tokio::time::sleep(options.timeout) => Some(Stopped::TimedOut(options.timeout)),
        () = cancel.cancelled() => Some(Stopped::Cancelled),
        past = tally::watch(child.id(), uncapped.0, uncapped.1) => Some(match past {
            tally::Past::Memory(max) => Stopped::OutOfMemory(max),
            tally::Past::Cpu(max) => Stopped::TooMuchCpu(max),
        }),
    };
    // Once the pipes are closed the command has ended, or left children behind that
    // closed them: the group goes either way.
    group.kill();
    let status = match stopped {
        None => child.wait().await.ok().and_then(|s| s.code()),
        Some(_) => {
            let _ = child.wait().await;
            None
        }
    };
    if stopped.is_none() && limits.out_of_memory() {
        stopped = options.max_memory.map(Stopped::OutOfMemory);
    }
    // Removing the cgroup may wait for the kernel to reap the command's processes.
    let _ = tokio::task::spawn_blocking(move || drop(limits)).await;
    stdout.truncate(cap);
    stderr.truncate(cap.saturating_sub(stdout.len()));
    Ok(Outcome {
        status,
        stdout,
        stderr,
        stopped,
    })
}

/// The threads the command's user has already, for the process-count fallback: 0 for an
/// id of kite's own (`runs_as` none); a count of `/proc`, off the runtime's threads, for
/// another user when no pids cgroup caps the command; `None` (no fallback) when one does.
async fn threads(runs_as: Option<u32>, pids_capped: bool) -> Option<u64> {
    match (runs_as, pids_capped) {
        (None, _) => Some(0),
        (Some(_), true) => None,
        (Some(uid), false) => tokio::task::spawn_blocking(move || limits::threads_of(uid))
            .await
            .ok(),
    }
}

/// Reads both pipes to their ends; true when together they passed `cap` bytes.
async fn collect(
    mut out: Option<ChildStdout>,
    mut err: Option<ChildStderr>,
    cap: usize,
    stdout: &mut Vec<u8>,
    stderr: &mut Vec<u8>,
) -> bool {
    let (mut a, mut b) = ([0u8; 8192], [0u8; 8192]);
    while out.is_some() || err.is_some() {
        let (is_out, n) = tokio::select! {
            n = read_some(&mut out, &mut a) => (true, n),
            n = read_some(&mut err, &mut b) => (false, n),
        };
        match (is_out, n) {
            (true, 0) => out = None,
            (false, 0) => err = None,
            (true, n) => stdout.extend_from_slice(&a[..n]),
            (false, n) => stderr.extend_from_slice(&b[..n]),
        }
        if stdout.len() + stderr.len() > cap {
            return true;
        }
    }
    false
}

/// One read from a pipe (0 at its end or on an error); never ready for a closed one.
async fn read_some(pipe: &mut Option<impl AsyncRead + Unpin>, buf: &mut [u8]) -> usize {
    match pipe {
        Some(p) => p.read(buf).await.unwrap_or(0),
        None => std::future::pending().await,
    }
}

/// The command's process group, killed when it is dropped.
struct Group(Option<u32>);

impl Group {
    /// Kills the group once: after the child is reaped its id may be another's.
    fn kill(&mut self) {
        if let Some(pid) = self.0.take().and_then(|p| i32::try_from(p).ok()) {
            // SAFETY: kill(2) with a negative pid signals that process group; no memory is
            // touched.
            unsafe {
                libc::kill(-pid, libc::SIGKILL);
            }
        }
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Without a sandbox, `skills/NAME` in the workspace is a link to the skill's folder.
fn link_skills(workspace: &Path, skills: &[(String, PathBuf)]) {
    let dir = workspace.join("skills");
    let _ = std::fs::create_dir_all(&dir);
    for (name, target) in skills {
        let link = dir.join(name);
        if std::fs::symlink_metadata(&link).is_err() {
            #[cfg(unix)]
            let _ = std::os::unix::fs::symlink(target, &link);
        }
    }
}
