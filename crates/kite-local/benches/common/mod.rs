//! What the benchmarks share: llama.cpp's own `llama-server`, run beside kite on the same
//! GGUF file, when `scripts/llama-server.sh` has built it (or `KITE_LLAMA_SERVER` names it).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub(crate) fn llama_server() -> Option<PathBuf> {
    let path = std::env::var_os("KITE_LLAMA_SERVER")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var_os("HOME").unwrap_or_default())
                .join(".cache/kite/llama-server/build/bin/llama-server")
        });
    path.exists().then_some(path)
}

/// llama-server on a free port, stopped when dropped.
pub(crate) struct Server {
    child: Child,
    pub(crate) base: String,
}

impl Server {
    /// `bin` serving `model` to `n` conversations at once, with `threads`.
    pub(crate) fn start(bin: &Path, model: &Path, n: usize, threads: i32) -> Self {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = Command::new(bin)
            .arg("-m")
            .arg(model)
            .args(["--host", "127.0.0.1", "--port", &port.to_string()])
            .args(["--parallel", &n.to_string()])
            // The same cells per conversation as kite's default context size.
            .args(["-c", &(4096 * n).to_string()])
            .args(["-t", &threads.to_string(), "-tb", &threads.to_string()])
            .args(["--no-webui"])
            .stdout(Stdio::null())
            .stderr(log())
            .spawn()
            .expect("llama-server starts");
        let base = format!("http://127.0.0.1:{port}");
        let server = Self { child, base };
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if healthy(&server.base) {
                break server;
            }
            assert!(
                Instant::now() < deadline,
                "llama-server never became healthy"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

/// Where llama-server's log goes: `target/llama-server.log`, read when it fails.
pub(crate) const LOG: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../target/llama-server.log");

fn log() -> Stdio {
    std::fs::File::create(LOG).map_or(Stdio::null(), Stdio::from)
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Whether `base` answers `/health` with 200, asked without an async runtime.
fn healthy(base: &str) -> bool {
    use std::io::{Read, Write};
    let addr = base.trim_start_matches("http://");
    let Ok(mut s) = std::net::TcpStream::connect(addr) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
    let ask = format!("GET /health HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    if s.write_all(ask.as_bytes()).is_err() {
        return false;
    }
    let mut head = [0u8; 12];
    s.read_exact(&mut head).is_ok() && head.ends_with(b"200")
}

/// What every bench of the local model starts from: its threads (`KITE_BENCH_THREADS`,
/// default 1), the model file, and a runtime.
pub(crate) struct Setup {
    pub(crate) threads: i32,
    pub(crate) path: PathBuf,
    pub(crate) rt: tokio::runtime::Runtime,
}

impl Setup {
    /// `None`, said on stderr, when there is no model to measure.
    pub(crate) fn new() -> Option<Self> {
        let threads = std::env::var("KITE_BENCH_THREADS")
            .ok()
            .and_then(|t| t.parse().ok())
            .unwrap_or(1);
        let path = kite_local::find_model()
            .map_err(|e| eprintln!("no model to measure: {e}"))
            .ok()?;
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        Some(Self { threads, path, rt })
    }
}
