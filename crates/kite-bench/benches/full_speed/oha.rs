//! oha (crates.io), the load generator, as a child process: it holds a fixed rate (`-q`),
//! counts each request's latency from when it was due (`--latency-correction`), so a
//! queue shows as latency, and writes its figures as JSON.

use std::path::PathBuf;
use std::time::Duration;

/// Where oha is: `$KITE_BENCH_OHA`, else on `PATH` or in `~/.cargo/bin`.
pub(crate) fn find() -> Option<PathBuf> {
    if let Some(bin) = std::env::var_os("KITE_BENCH_OHA") {
        return Some(PathBuf::from(bin)).filter(|b| b.exists());
    }
    let cargo = std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo/bin"));
    let cargo = cargo
        .as_deref()
        .and_then(|p| p.to_str())
        .unwrap_or("/root/.cargo/bin");
    super::on_path("oha", &[cargo])
}

/// How the requests come.
#[derive(Clone, Copy)]
pub(crate) enum Load {
    /// One connection, each request sent when the one before it has ended.
    OneAtATime,
    /// `rate` requests a second, over as many connections as that needs, up to `connections`.
    Rate { rate: u32, connections: u32 },
}

/// What one run measured.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Run {
    /// Latency to the answer's end, in ms.
    pub(crate) p50: f64,
    pub(crate) p99: f64,
    /// Answers with status 200 a second.
    pub(crate) ok_per_sec: f64,
    /// Requests that failed or were not answered 200.
    pub(crate) failed: u64,
}

/// The request every target is sent: a streamed Chat Completions POST.
pub(crate) struct Request<'a> {
    pub(crate) url: &'a str,
    pub(crate) body: &'a str,
    pub(crate) key: &'a str,
}

/// `request` sent as `load` says for `duration`; an error says why oha gave no figures.
pub(crate) fn run(
    oha: &std::path::Path,
    request: &Request,
    load: Load,
    duration: Duration,
) -> Result<Run, String> {
    let mut command = std::process::Command::new(oha);
    command
        .args(["--no-tui", "--output-format", "json", "-m", "POST"])
        .args(["-T", "application/json"])
        .args(["-H", &format!("authorization: Bearer {}", request.key)])
        .args(["-d", request.body])
        .args(["-z", &format!("{}ms", duration.as_millis())])
        // Requests under way at the end are waited for rather than counted as failed.
        .arg("-w")
        // One thread: the two cores are shared with the gateway and the upstream.
        .args(["--worker-threads", "1"]);
    match load {
        Load::OneAtATime => command.args(["-c", "1"]),
        Load::Rate { rate, connections } => command
            .args(["-c", &connections.to_string()])
            .args(["-q", &rate.to_string()])
            .arg("--latency-correction"),
    };
    let out = command
        .arg(request.url)
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| format!("{}: {e}", oha.display()))?;
    if !out.status.success() {
        return Err(format!(
            "oha exited {}: {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    parse(&out.stdout)
}

/// oha's JSON: latencies in `metrics.latency_ms`, the run's length in `summary.total` (s),
/// and the answers by status and the failures by error.
fn parse(json: &[u8]) -> Result<Run, String> {
    let v: serde_json::Value =
        serde_json::from_slice(json).map_err(|e| format!("oha's output is not JSON: {e}"))?;
    let number = |pointer: &str| {
        v.pointer(pointer)
            .and_then(serde_json::Value::as_f64)
            .ok_or_else(|| format!("oha's output has no {pointer}"))
    };
    let count = |field: &str| -> (u64, u64) {
        let mut by = (0, 0);
        if let Some(map) = v.get(field).and_then(serde_json::Value::as_object) {
            for (name, n) in map {
                let n = n.as_u64().unwrap_or(0);
                match name == "200" {
                    true => by.0 += n,
                    false => by.1 += n,
                }
            }
        }
        by
    };
    let (ok, not_ok) = count("statusCodeDistribution");
    let (_, errors) = count("errorDistribution");
    let seconds = number("/summary/total")?;
    Ok(Run {
        p50: number("/metrics/latency_ms/p50")?,
        p99: number("/metrics/latency_ms/p99")?,
        ok_per_sec: ok as f64 / seconds.max(f64::EPSILON),
        failed: not_ok + errors,
    })
}
