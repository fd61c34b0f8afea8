//! Client processes: how each client is started, found or left out, and its figures read
//! back. Every client runs in a process of its own, so that its peak RSS is its own: the
//! Rust ones as this bench binary run again with `KITE_PEERS_CLIENT`, the OpenAI Python
//! SDK and the Vercel AI SDK as scripts from `crates/kite-bench/peers/`.

use crate::driver::{CLIENT_VAR, Job};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// One client: how to start it.
pub(crate) struct Peer {
    /// Whether it is written in Rust (the aims compare kite with the best of those).
    pub(crate) rust: bool,
    program: PathBuf,
    args: Vec<String>,
    env: Option<(&'static str, &'static str)>,
    dir: Option<PathBuf>,
}

/// What one client process reported.
#[derive(Clone, Debug, Default)]
pub(crate) struct Figures {
    pub(crate) completions: u64,
    pub(crate) failed: u64,
    pub(crate) seconds: f64,
    pub(crate) ttft_p50_us: Option<f64>,
    pub(crate) error: Option<String>,
    pub(crate) peak_rss_kb: Option<u64>,
    pub(crate) cpu_seconds: Option<f64>,
}

impl Figures {
    pub(crate) fn rate(&self) -> f64 {
        self.completions as f64 / self.seconds.max(1e-9)
    }

    /// The client's CPU time per completion, in µs.
    pub(crate) fn cpu_us(&self) -> Option<f64> {
        (self.completions > 0)
            .then(|| self.cpu_seconds.map(|s| s * 1e6 / self.completions as f64))?
    }

    fn parse(line: &str) -> Option<Self> {
        let v: serde_json::Value = serde_json::from_str(line).ok()?;
        Some(Self {
            completions: v["completions"].as_u64()?,
            failed: v["failed"].as_u64().unwrap_or(0),
            seconds: v["seconds"].as_f64()?,
            ttft_p50_us: v["ttft_p50_us"].as_f64(),
            error: v["error"].as_str().map(str::to_owned),
            peak_rss_kb: v["peak_rss_kb"].as_u64(),
            cpu_seconds: v["cpu_seconds"].as_f64(),
        })
    }
}

fn peers_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("peers")
}

fn cache() -> PathBuf {
    let home = std::env::var_os("HOME").unwrap_or_default();
    Path::new(&home).join(".cache/kite")
}

impl Peer {
    /// A Rust client: this binary again.
    pub(crate) fn rust(name: &'static str) -> Self {
        Self {
            rust: true,
            program: std::env::current_exe().expect("the bench binary"),
            args: Vec::new(),
            env: Some((CLIENT_VAR, name)),
            dir: None,
        }
    }

    /// The OpenAI Python SDK, from `$KITE_BENCH_PYTHON`, `~/.cache/kite/peers-venv` or
    /// `~/.cache/kite/mcp-peers/venv`, the first whose Python imports `openai`.
    pub(crate) fn openai_python() -> Result<Self, String> {
        let mut candidates: Vec<PathBuf> = std::env::var_os("KITE_BENCH_PYTHON")
            .map(PathBuf::from)
            .into_iter()
            .collect();
        candidates.push(cache().join("peers-venv/bin/python"));
        candidates.push(cache().join("mcp-peers/venv/bin/python"));
        let python = candidates
            .into_iter()
            .find(|p| imports(p, "openai"))
            .ok_or("no Python with `openai` (scripts/peers-setup.sh installs one)")?;
        Ok(Self {
            rust: false,
            program: python,
            args: vec![peers_dir().join("openai_sdk.py").display().to_string()],
            env: None,
            dir: None,
        })
    }

    /// The Vercel AI SDK on Node, from `$KITE_BENCH_NODE_DIR` or `~/.cache/kite/peers-node`
    /// (the script is copied there, where its packages resolve).
    pub(crate) fn ai_sdk() -> Result<Self, String> {
        let dir = std::env::var_os("KITE_BENCH_NODE_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| cache().join("peers-node"));
        if !dir.join("node_modules/ai/package.json").is_file()
            || !dir
                .join("node_modules/@ai-sdk/openai/package.json")
                .is_file()
        {
            return Err(format!(
                "`ai` and `@ai-sdk/openai` are not in {} (scripts/peers-setup.sh installs them)",
                dir.display()
            ));
        }
        let script = dir.join("kite-bench-ai_sdk.mjs");
        std::fs::copy(peers_dir().join("ai_sdk.mjs"), &script).map_err(|e| e.to_string())?;
        let version = Command::new("node").arg("--version").output();
        if !version.is_ok_and(|o| o.status.success()) {
            return Err("node is not on PATH".into());
        }
        Ok(Self {
            rust: false,
            program: "node".into(),
            args: vec![script.display().to_string()],
            env: None,
            dir: Some(dir),
        })
    }

    /// Runs `job` in a process of its own; its figures, or why there are none.
    pub(crate) fn run(&self, job: &Job) -> Result<Figures, String> {
        let mut command = Command::new(&self.program);
        command
            .args(&self.args)
            .args(job.args())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if let Some((name, value)) = self.env {
            command.env(name, value);
        }
        if let Some(dir) = &self.dir {
            command.current_dir(dir);
        }
        let mut child = command.spawn().map_err(|e| e.to_string())?;
        // Read both pipes as the child writes, so a chatty child never blocks on them.
        let drain = |mut pipe: Box<dyn Read + Send>| {
            std::thread::spawn(move || {
                let mut text = String::new();
                pipe.read_to_string(&mut text).ok();
                text
            })
        };
        let out = drain(Box::new(child.stdout.take().unwrap()));
        let err = drain(Box::new(child.stderr.take().unwrap()));
        // Start-up, warm-up and the run, with room for a slow interpreter.
        let limit = Duration::from_secs_f64(job.seconds * 3.0 + 60.0);
        let started = Instant::now();
        let status = loop {
            if let Some(status) = child.try_wait().map_err(|e| e.to_string())? {
                break status;
            }
            if started.elapsed() > limit {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("no answer in {} s", limit.as_secs()));
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let (out, err) = (
            out.join().unwrap_or_default(),
            err.join().unwrap_or_default(),
        );
        let figures = out.lines().rev().find_map(Figures::parse);
        match (status.success(), figures) {
            (true, Some(figures)) => Ok(figures),
            _ => Err(format!(
                "{status}: {}",
                err.lines().rev().take(5).collect::<Vec<_>>().join(" / ")
            )),
        }
    }
}

/// Whether `python` runs and imports `module`.
pub(crate) fn imports(python: &Path, module: &str) -> bool {
    python.is_file()
        && Command::new(python)
            .args(["-c", &format!("import {module}")])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
}
