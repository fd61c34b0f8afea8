//! Running a skill's command: in a bubblewrap sandbox where one can be had, never silently
//! without one.
//!
//! Inside the sandbox the command sees `/usr` (and the usual links into it) read-only, a
//! private `/tmp`, `/proc` and `/dev`, the run's workspace at `/workspace` (its working
//! directory, writable) and each skill's folder read-only at `/workspace/skills/NAME`.
//! Nothing else of the machine is there: no home folder, no `/etc` beyond what programs
//! need to start, no network unless the options allow it. It has its own process, IPC
//! and UTS namespaces, no environment but a few plain variables, and dies with kite.
//!
//! Every command has a time limit and an output cap; on either, on cancel, or when the call
//! is dropped, its whole process group is killed (and with the sandbox's first process, its
//! process namespace).

mod cgroup;

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
    /// Lets commands reach the network.
    pub network: bool,
    /// How long one command may run.
    pub timeout: Duration,
    /// The most bytes of output (stdout and stderr together) kept; past it the command is
    /// stopped.
    pub max_output: usize,
    /// The most processes a command may have at once, where kite can set a cap (a `pids`
    /// cgroup); elsewhere the time limit stops a fork bomb.
    pub max_processes: Option<u32>,
    /// Runs commands with no sandbox at all when bubblewrap cannot start one. They can then
    /// read and write whatever kite can: only for skills you trust completely.
    pub dangerously_unsandboxed: bool,
}

impl Default for SandboxOptions {
    fn default() -> Self {
        Self {
            bwrap: PathBuf::from("bwrap"),
            network: false,
            timeout: Duration::from_secs(60),
            max_output: 64 * 1024,
            max_processes: Some(256),
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
}

/// Why a command could not run.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    /// No sandbox could be started, and running without one was not allowed.
    #[error(
        "scripts are not run without a sandbox, and bubblewrap could not start one here \
         ({0}). Install bubblewrap (Debian and Ubuntu: apt install bubblewrap), or, only for \
         skills you trust completely, allow running them unconfined \
         (--dangerously-run-scripts-unsandboxed, or SandboxOptions::dangerously_unsandboxed)"
    )]
    NoSandbox(String),
    /// The command could not be started.
    #[error("cannot start the command: {0}")]
    Spawn(std::io::Error),
}

/// Whether bubblewrap can start a sandbox here: `Err` says why not.
pub async fn probe(options: &SandboxOptions) -> Result<(), String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let mut cmd = bwrap_command(options, dir.path(), &[]);
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
/// under `skills/` in it; `sandbox` is what [`probe`] said.
pub async fn run(
    command: &str,
    workspace: &Path,
    skills: &[(String, PathBuf)],
    options: &SandboxOptions,
    sandbox: Result<(), String>,
    cancel: &CancellationToken,
) -> Result<Outcome, SandboxError> {
    let (mut cmd, home) = match sandbox {
        Ok(()) => {
            mount_points(workspace, skills).map_err(SandboxError::Spawn)?;
            let mut cmd = bwrap_command(options, workspace, skills);
            cmd.args(["--", "/bin/sh", "-c", command]);
            (cmd, "/workspace".to_owned())
        }
        Err(why) if !options.dangerously_unsandboxed => return Err(SandboxError::NoSandbox(why)),
        Err(_) => {
            link_skills(workspace, skills);
            let mut cmd = Command::new("/bin/sh");
            cmd.args(["-c", command]).current_dir(workspace);
            (cmd, workspace.display().to_string())
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
    let cap = options.max_processes.and_then(cgroup::Cap::new);
    if let Some(fd) = cap.as_ref().map(cgroup::Cap::procs_fd) {
        // SAFETY: the closure only calls write(2) (see `enter_from_child`).
        unsafe {
            cmd.pre_exec(move || {
                cgroup::enter_from_child(fd);
                Ok(())
            });
        }
    }
    let mut child = cmd.spawn().map_err(SandboxError::Spawn)?;
    let mut group = Group(child.id());
    let (out, err) = (child.stdout.take(), child.stderr.take());
    let (mut stdout, mut stderr) = (Vec::new(), Vec::new());
    let cap = options.max_output;
    let stopped = tokio::select! {
        over = collect(out, err, cap, &mut stdout, &mut stderr) => {
            over.then_some(Stopped::TooMuchOutput(cap))
        }
        () = tokio::time::sleep(options.timeout) => Some(Stopped::TimedOut(options.timeout)),
        () = cancel.cancelled() => Some(Stopped::Cancelled),
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
    stdout.truncate(cap);
    stderr.truncate(cap.saturating_sub(stdout.len()));
    Ok(Outcome {
        status,
        stdout,
        stderr,
        stopped,
    })
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

/// bubblewrap, set up as the module doc says; the command follows `--`.
fn bwrap_command(
    options: &SandboxOptions,
    workspace: &Path,
    skills: &[(String, PathBuf)],
) -> Command {
    let mut cmd = Command::new(resolve(&options.bwrap));
    cmd.args(["--die-with-parent", "--new-session", "--unshare-all"]);
    if options.network {
        cmd.arg("--share-net");
        cmd.args(["--ro-bind-try", "/etc/resolv.conf", "/etc/resolv.conf"]);
        cmd.args(["--ro-bind-try", "/etc/ssl", "/etc/ssl"]);
    }
    cmd.args(["--ro-bind", "/usr", "/usr"]);
    for top in ["bin", "sbin", "lib", "lib32", "lib64"] {
        let host = Path::new("/").join(top);
        match std::fs::read_link(&host) {
            Ok(target) => {
                cmd.arg("--symlink").arg(target).arg(&host);
            }
            Err(_) if host.is_dir() => {
                cmd.arg("--ro-bind").arg(&host).arg(&host);
            }
            Err(_) => {}
        }
    }
    // What programs need of /etc to start, and nothing that holds secrets.
    for file in [
        "/etc/ld.so.cache",
        "/etc/ld.so.conf",
        "/etc/ld.so.conf.d",
        "/etc/alternatives",
        "/etc/localtime",
        "/etc/mime.types",
    ] {
        cmd.args(["--ro-bind-try", file, file]);
    }
    cmd.args(["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]);
    cmd.arg("--bind").arg(workspace).arg("/workspace");
    for (name, dir) in skills {
        cmd.arg("--ro-bind")
            .arg(dir)
            .arg(format!("/workspace/skills/{name}"));
    }
    cmd.args(["--chdir", "/workspace"]);
    cmd
}

/// `program` as a path: as it is when it names a folder, else the first executable file of
/// that name on kite's own `PATH` (the command's `PATH` is a different, shorter one).
fn resolve(program: &Path) -> PathBuf {
    if program.components().count() > 1 {
        return program.to_owned();
    }
    std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .map(|dir| dir.join(program))
        .find(|p| {
            use std::os::unix::fs::PermissionsExt;
            p.metadata()
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
        .unwrap_or_else(|| program.to_owned())
}

/// Makes `skills/` and `skills/NAME` in the workspace real folders, for bubblewrap to mount
/// the skills on: a link or file an earlier command left there in their place is removed
/// first, so that bubblewrap never follows it out of the workspace.
fn mount_points(workspace: &Path, skills: &[(String, PathBuf)]) -> std::io::Result<()> {
    let real_dir = |path: &Path| -> std::io::Result<()> {
        match std::fs::symlink_metadata(path) {
            Ok(m) if m.is_dir() => return Ok(()),
            Ok(_) => std::fs::remove_file(path)?,
            Err(_) => {}
        }
        std::fs::create_dir(path)
    };
    let dir = workspace.join("skills");
    real_dir(&dir)?;
    for (name, _) in skills {
        real_dir(&dir.join(name))?;
    }
    Ok(())
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
