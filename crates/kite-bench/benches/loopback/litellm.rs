//! LiteLLM's proxy in front of a loopback upstream, for the benchmarks that set kite's
//! gateway beside it. It is taken from `$KITE_BENCH_LITELLM` or
//! `~/.cache/kite/litellm-venv/bin/litellm` (`scripts/litellm-venv.sh` installs it).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

/// LiteLLM's proxy, running until dropped.
pub(crate) struct LiteLlm {
    child: std::process::Child,
    pub(crate) addr: SocketAddr,
    dir: PathBuf,
}

impl Drop for LiteLlm {
    fn drop(&mut self) {
        // Its workers are processes of their own, which outlive a killed parent: the whole
        // group is stopped, asked first, then killed.
        let group = -(self.child.id() as libc::pid_t);
        unsafe { libc::kill(group, libc::SIGTERM) };
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while std::time::Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        unsafe { libc::kill(group, libc::SIGKILL) };
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Where LiteLLM's proxy is, when it is installed.
pub(crate) fn bin() -> Option<PathBuf> {
    let bin = std::env::var_os("KITE_BENCH_LITELLM")
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME")
                .map(|h| PathBuf::from(h).join(".cache/kite/litellm-venv/bin/litellm"))
        })?;
    bin.exists().then_some(bin)
}

/// LiteLLM's proxy serving `model` from the OpenAI-compatible `upstream`, asking clients
/// for `client_key`, with a worker per core; `None` when it is not installed or does not
/// start within 120 s.
pub(crate) async fn start(model: &str, upstream: SocketAddr, client_key: &str) -> Option<LiteLlm> {
    let bin = bin()?;
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .ok()?
        .local_addr()
        .ok()?
        .port();
    let dir =
        std::env::temp_dir().join(format!("kite-bench-litellm-{}-{port}", std::process::id()));
    std::fs::create_dir_all(&dir).ok()?;
    let config = dir.join("config.yaml");
    std::fs::write(
        &config,
        format!(
            "model_list:\n  - model_name: {model}\n    litellm_params:\n      model: openai/{model}\n      \
             api_base: http://{upstream}/v1\n      api_key: sk-bench-upstream\n\
             litellm_settings:\n  set_verbose: false\n  callbacks: []\n  num_retries: 0\n\
             general_settings:\n  master_key: {client_key}\n  disable_spend_logs: true\n  \
             disable_error_logs: true\n"
        ),
    )
    .ok()?;
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    use std::os::unix::process::CommandExt;
    let child = std::process::Command::new(bin)
        // A group of its own, so that its workers are stopped with it.
        .process_group(0)
        .args(["--config"])
        .arg(&config)
        // One worker per core, as LiteLLM advises for speed.
        .args(["--host", "127.0.0.1", "--port", &port.to_string()])
        .args(["--num_workers", &cores.to_string()])
        .args(["--timeout_worker_healthcheck", "60"])
        .env_remove("DATABASE_URL")
        // Offline: the bundled price map, no `.env`, no per-request log lines.
        .env("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        .env("LITELLM_MODE", "PRODUCTION")
        .env("LITELLM_LOG", "ERROR")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .ok()?;
    let proxy = LiteLlm {
        child,
        addr: SocketAddr::from(([127, 0, 0, 1], port)),
        dir,
    };
    let client = reqwest::Client::new();
    for _ in 0..1200 {
        let ready = client
            .get(format!("http://{}/health/liveliness", proxy.addr))
            .send()
            .await
            .is_ok_and(|r| r.status().is_success());
        if ready {
            return Some(proxy);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    eprintln!("LiteLLM did not start within 120 s; its rows are left out");
    None
}
