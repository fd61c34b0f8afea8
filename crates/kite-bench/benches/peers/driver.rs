//! A client's process: the bench binary run again with `KITE_PEERS_CLIENT` naming a Rust
//! client, and the arguments every client process takes (`BASE_URL CONCURRENCY COUNT
//! SECONDS EXPECTED`). It warms up, then runs `CONCURRENCY` loops, each sending one request
//! after the other, until `SECONDS` have passed or `COUNT` requests were started, and
//! prints its figures as one line of JSON (the Python and Node scripts print the same):
//! completions, failures, seconds from the start to the last answer, the median time to
//! the first text delta in µs, the first error, the process's peak RSS (`VmHWM`) and the
//! CPU time it used in the measured run (user and system).

use crate::clients::{AsyncOpenAi, Client, Kite, Rig};
use crate::server::Raw;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// The variable naming the Rust client a child process runs.
pub(crate) const CLIENT_VAR: &str = "KITE_PEERS_CLIENT";

/// The warm-up before the measured run: connections opened, pools and caches filled.
pub(crate) const WARM_UP: Duration = Duration::from_millis(500);

/// What a client process is asked to do.
pub(crate) struct Job {
    pub(crate) base: String,
    pub(crate) concurrency: usize,
    pub(crate) count: u64,
    pub(crate) seconds: f64,
    pub(crate) expected: String,
}

impl Job {
    /// The arguments of a client process.
    pub(crate) fn args(&self) -> Vec<String> {
        vec![
            self.base.clone(),
            self.concurrency.to_string(),
            self.count.to_string(),
            self.seconds.to_string(),
            self.expected.clone(),
        ]
    }

    fn parse(mut args: impl Iterator<Item = String>) -> Option<Self> {
        Some(Self {
            base: args.next()?,
            concurrency: args.next()?.parse().ok()?,
            count: args.next()?.parse().ok()?,
            seconds: args.next()?.parse().ok()?,
            expected: args.next()?,
        })
    }
}

/// The body of the request the raw floor sends, as the libraries write it.
fn raw_body() -> String {
    serde_json::json!({
        "model": crate::clients::MODEL,
        "messages": [{"role": "user", "content": crate::clients::PROMPT}],
        "stream": true,
    })
    .to_string()
}

/// Runs the Rust client `name` as the arguments ask; prints its figures.
pub(crate) fn child(name: &str) {
    let job =
        Job::parse(std::env::args().skip(1)).expect("BASE_URL CONCURRENCY COUNT SECONDS EXPECTED");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let figures = rt.block_on(async {
        let (base, expected) = (job.base.as_str(), job.expected.as_str());
        match name {
            "raw" => run(Arc::new(Raw::new(base, &raw_body(), expected)), &job).await,
            "kite" => run(Arc::new(Kite::new(base, expected)), &job).await,
            "async-openai" => run(Arc::new(AsyncOpenAi::new(base, expected)), &job).await,
            "rig" => run(Arc::new(Rig::new(base, expected)), &job).await,
            other => panic!("no Rust client {other}"),
        }
    });
    println!("{figures}");
}

/// The requests of one run.
#[derive(Default)]
struct Tally {
    ttft: Vec<Duration>,
    failed: u64,
    error: Option<String>,
}

/// `concurrency` loops of `client` until `until` or `count` requests started.
async fn loops<C: Client>(
    client: &Arc<C>,
    concurrency: usize,
    count: u64,
    until: Instant,
) -> Tally {
    let started = Arc::new(AtomicU64::new(0));
    let tasks: Vec<_> = (0..concurrency)
        .map(|_| {
            let (client, started) = (client.clone(), started.clone());
            tokio::spawn(async move {
                let mut tally = Tally::default();
                while Instant::now() < until && started.fetch_add(1, Ordering::Relaxed) < count {
                    match client.once().await {
                        Ok(ttft) => tally.ttft.push(ttft),
                        Err(e) => {
                            tally.failed += 1;
                            tally.error.get_or_insert(e);
                        }
                    }
                }
                tally
            })
        })
        .collect();
    let mut all = Tally::default();
    for task in tasks {
        let tally = task.await.unwrap();
        all.ttft.extend(tally.ttft);
        all.failed += tally.failed;
        all.error = all.error.or(tally.error);
    }
    all
}

/// The warm-up, then the measured run; the figures as JSON.
async fn run<C: Client>(client: Arc<C>, job: &Job) -> serde_json::Value {
    let warm = loops(&client, job.concurrency, u64::MAX, Instant::now() + WARM_UP).await;
    let cpu = cpu_seconds();
    let start = Instant::now();
    let until = start + Duration::from_secs_f64(job.seconds);
    let mut tally = loops(&client, job.concurrency, job.count, until).await;
    let seconds = start.elapsed().as_secs_f64();
    let cpu = cpu_seconds() - cpu;
    tally.ttft.sort();
    let ttft_p50_us = tally
        .ttft
        .get(tally.ttft.len() / 2)
        .map(|d| d.as_secs_f64() * 1e6);
    serde_json::json!({
        "completions": tally.ttft.len(),
        "failed": tally.failed + warm.failed,
        "seconds": seconds,
        "ttft_p50_us": ttft_p50_us,
        "error": tally.error.or(warm.error),
        "peak_rss_kb": peak_rss_kb(),
        "cpu_seconds": cpu,
    })
}

/// The CPU time this process has used, user and system, in seconds.
pub(crate) fn cpu_seconds() -> f64 {
    // SAFETY: getrusage writes only the struct given.
    let usage = unsafe {
        let mut usage = std::mem::zeroed::<libc::rusage>();
        libc::getrusage(libc::RUSAGE_SELF, &mut usage);
        usage
    };
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    secs(usage.ru_utime) + secs(usage.ru_stime)
}

/// This process's peak resident set, in KiB.
fn peak_rss_kb() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}
