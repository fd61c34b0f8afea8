//! A stdio server's process: what of kite's environment it gets, a process group that dies
//! with kite, and the last lines of its stderr, kept for the errors that name it.
//!
//! As the official MCP SDKs do, a server inherits only a short allow-list of variables
//! (the user, the shell, the path, the terminal, locale and temporary folders) plus what
//! its `env` table sets, where `${NAME}` forwards kite's own `NAME`. Provider keys and
//! tokens reach a server only when its table names them.

use rmcp::transport::TokioChildProcess;
use std::collections::{BTreeMap, VecDeque};
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncReadExt};
use tokio::task::JoinHandle;

/// The variables every stdio server inherits when kite has them, besides `LC_*`.
pub use kite_core::child_env::INHERITED;

/// How many stderr lines are kept for error messages.
const TAIL: usize = 8;
/// The longest stderr line kept; a longer one is cut into pieces of this size.
const MAX_LINE: usize = 4096;

/// The environment of a server whose table sets `env`: the inherited variables kite has,
/// then the table's, with `${NAME}` replaced by kite's `NAME`.
pub(crate) fn environment(env: &BTreeMap<String, String>) -> Result<Vec<(String, String)>, String> {
    let mut out: Vec<(String, String)> = std::env::vars_os()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
        .filter(|(k, _)| kite_core::child_env::allowed(k, &[]))
        .collect();
    for (k, v) in env {
        let value = expand(v).map_err(|e| format!("its env table forwards {e}"))?;
        out.push((k.clone(), value));
    }
    Ok(out)
}

/// `value` with each `${NAME}` replaced by kite's variable `NAME`; an unset one is an error
/// that names it. This is how an `env` table's values reach a stdio server, and how
/// kite.toml names secrets kept in the environment.
pub fn expand(value: &str) -> Result<String, String> {
    let mut out = String::with_capacity(value.len());
    let mut rest = value;
    while let Some(at) = rest.find("${") {
        out.push_str(&rest[..at]);
        let after = &rest[at + 2..];
        let Some(end) = after.find('}') else {
            out.push_str(&rest[at..]);
            return Ok(out);
        };
        let name = &after[..end];
        let valid = !name.is_empty()
            && !name.starts_with(|c: char| c.is_ascii_digit())
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if valid {
            let v = std::env::var(name).map_err(|_| format!("${{{name}}}, which is not set"))?;
            out.push_str(&v);
        } else {
            out.push_str(&rest[at..at + 3 + end]);
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// The last lines a server wrote to stderr.
#[derive(Clone, Default)]
pub(crate) struct StderrTail {
    lines: Arc<Mutex<VecDeque<String>>>,
    reader: Arc<Mutex<Option<JoinHandle<()>>>>,
}

impl StderrTail {
    fn push(&self, line: String) {
        let mut lines = self.lines.lock().unwrap_or_else(|e| e.into_inner());
        if lines.len() == TAIL {
            lines.pop_front();
        }
        lines.push_back(line);
    }

    /// `; its stderr ended with: …` for an error message, after giving a process that is
    /// exiting `wait` to finish writing; empty when it wrote nothing.
    pub(crate) async fn describe(&self, wait: Duration) -> String {
        let reader = self.reader.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(reader) = reader {
            let _ = tokio::time::timeout(wait, reader).await;
        }
        let lines = self.lines.lock().unwrap_or_else(|e| e.into_inner());
        if lines.is_empty() {
            return String::new();
        }
        let shown: Vec<&str> = lines.iter().map(String::as_str).collect();
        format!("; its stderr ended with: {}", shown.join(" | "))
    }
}

/// Kills a server's whole process group when dropped: on every way out, including a
/// runtime torn down mid-start, nothing the server started outlives its session.
pub(crate) struct GroupGuard(Option<i32>);

impl Drop for GroupGuard {
    fn drop(&mut self) {
        #[cfg(unix)]
        if let Some(group) = self.0.take() {
            // SAFETY: killpg only sends a signal; the group is the server's own (it was
            // made its leader at spawn), never kite's.
            unsafe {
                libc::killpg(group, libc::SIGKILL);
            }
        }
    }
}

/// A started server: its transport, process id, group guard and stderr.
pub(crate) struct Child {
    pub process: TokioChildProcess,
    pub pid: Option<u32>,
    pub guard: GroupGuard,
    pub stderr: StderrTail,
}

/// Starts `command args…` in `cwd` with the environment `env` (see [`environment`]), in a
/// process group of its own that is killed if kite dies, its stderr logged line by line.
pub(crate) fn spawn(
    server: &str,
    command: &str,
    args: &[String],
    env: Vec<(String, String)>,
    cwd: Option<&PathBuf>,
) -> std::io::Result<Child> {
    let mut cmd = tokio::process::Command::new(command);
    cmd.args(args).env_clear().envs(env).kill_on_drop(true);
    if let Some(dir) = cwd {
        cmd.current_dir(dir);
    }
    #[cfg(unix)]
    cmd.process_group(0);
    #[cfg(target_os = "linux")]
    // SAFETY: between fork and exec only async-signal-safe calls: prctl and getppid.
    unsafe {
        let parent = libc::getpid();
        cmd.pre_exec(move || {
            // Killed when kite dies, even by SIGKILL; if kite is already gone, exit now.
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            if libc::getppid() != parent {
                libc::_exit(1);
            }
            Ok(())
        });
    }
    let (process, stderr) = TokioChildProcess::builder(cmd)
        .stderr(Stdio::piped())
        .spawn()?;
    let pid = process.id();
    let tail = StderrTail::default();
    if let Some(stderr) = stderr {
        let server = server.to_owned();
        let keep = tail.clone();
        let reader = tokio::spawn(async move {
            // Read to the end whatever comes: a line is cut at MAX_LINE bytes and decoded
            // leniently, so that no output can grow kite's memory or stop the reading (a
            // server whose stderr is not read blocks, or dies of a broken pipe).
            let mut stderr = tokio::io::BufReader::new(stderr);
            let mut line = Vec::new();
            loop {
                line.clear();
                let mut limited = (&mut stderr).take(MAX_LINE as u64);
                match limited.read_until(b'\n', &mut line).await {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {}
                }
                let text = String::from_utf8_lossy(&line);
                let text = text.trim_end_matches(['\n', '\r']).to_owned();
                tracing::info!(server = %server, "stderr: {text}");
                keep.push(text);
            }
        });
        *tail.reader.lock().unwrap_or_else(|e| e.into_inner()) = Some(reader);
    }
    Ok(Child {
        process,
        pid,
        guard: GroupGuard(pid.and_then(|p| i32::try_from(p).ok())),
        stderr: tail,
    })
}

/// Whether a configured value holds a secret, to be kept out of what kite shows: by its
/// name (`Authorization`, `X-Api-Key`, `GITHUB_TOKEN`…), its length, or its looks.
/// `X-Team = "kite"` is not one (hiding it would hide the word everywhere).
pub fn looks_secret(name: &str, value: &str) -> bool {
    let name = name.to_ascii_lowercase();
    let by_name = [
        "auth",
        "key",
        "token",
        "secret",
        "password",
        "cookie",
        "session",
        "credential",
    ]
    .iter()
    .any(|w| name.contains(w));
    let key_like = [
        "sk-",
        "gsk_",
        "xai-",
        "AIza",
        "AKIA",
        "ghp_",
        "github_pat_",
        "hf_",
    ]
    .iter()
    .any(|p| value.contains(p));
    value.len() >= 4 && (by_name || key_like || value.len() >= 24)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forwarding_expands_set_variables_and_refuses_unset_ones() {
        // PATH is set wherever tests run.
        let path = std::env::var("PATH").unwrap();
        assert_eq!(expand("${PATH}:/x").unwrap(), format!("{path}:/x"));
        assert_eq!(
            expand("plain $PATH ${} ${1A} ${open").unwrap(),
            "plain $PATH ${} ${1A} ${open"
        );
        let e = expand("${KITE_SURELY_UNSET_VARIABLE_42}").unwrap_err();
        assert!(e.contains("KITE_SURELY_UNSET_VARIABLE_42"), "{e}");
    }

    #[test]
    fn only_the_allow_list_and_the_table_reach_a_server() {
        let env = environment(&BTreeMap::from([("A".to_owned(), "1".to_owned())])).unwrap();
        assert!(env.iter().any(|(k, _)| k == "PATH"));
        assert!(env.contains(&("A".to_owned(), "1".to_owned())));
        assert!(
            env.iter()
                .all(|(k, _)| k == "A" || INHERITED.contains(&k.as_str()) || k.starts_with("LC_")),
            "{env:?}"
        );
    }
}
