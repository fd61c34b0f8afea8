//! Ten thousand streams at once through one kite process: as a library client (kite's
//! OpenAI provider streaming from a loopback upstream), and as a gateway (kite-serve, as
//! `kite serve` runs it, in a process of its own between a client and that upstream).
//!
//! The upstream, a process of its own (`upstream.rs`), answers each request slowly: a few
//! hundred events, one every 200 ms, each a word. Every stream's text must come whole:
//! the bench counts errors and wrong texts, and they must be zero. For the kite process
//! measured it reports the resident memory each stream adds at the peak (`VmHWM` less the
//! resident memory before), the CPU time per event, and the most file descriptors open at
//! once.
//!
//! `cargo bench -p kite-bench --bench many_streams`. `KITE_BENCH_STREAMS` (default 10,000),
//! `KITE_BENCH_EVENTS` (per stream, default 300), `KITE_BENCH_INTERVAL_MS` (between events,
//! default 200) and `KITE_BENCH_RAMP_S` (the streams start spread over this, default 5;
//! thousands of connections at once overflow a listener's backlog) change the run; the
//! default takes about two and a half minutes.
//!
//! `KITE_BENCH_SOAK_MIN=60 cargo bench -p kite-bench --bench many_streams` runs the soak
//! instead (`soak.rs`): the gateway at a moderate, steady rate for that many minutes, its
//! resident memory read every minute.
//!
//! The gateway runs twice: with a connection per stream (HTTP/1.1, as the SDKs speak), and
//! with the streams carried [`MAX_STREAMS`](kite::serve::MAX_STREAMS) at a time on HTTP/2
//! connections (`h2c`, `http2.rs`).
//!
//! File descriptors: a client holds one per stream, the gateway two over HTTP/1.1 (its
//! client's and its upstream's) and one over HTTP/2 (its upstream's), far past the usual
//! limit of 1,024. The bench raises its own `RLIMIT_NOFILE` (and so its children's) to what
//! it needs: as root past the hard limit where the system lets it, otherwise up to it, and
//! runs fewer streams where even that is not enough (it says so). 10,000 streams through
//! the gateway need about 20,300 files over HTTP/1.1, 10,300 over HTTP/2.

mod http2;
#[path = "../loopback/mod.rs"]
mod loopback;
mod probe;
mod soak;
mod upstream;

use kite::wire::openai_chat::Dialect;
use kite::{Event, Message, Model, OpenAiCompatible, Request, StreamExt};
use std::io::BufRead;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

const ROLE: &str = "KITE_STREAMS_ROLE";

pub(crate) fn var(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn main() {
    let events = var("KITE_BENCH_EVENTS", 300) as usize;
    let interval = Duration::from_millis(var("KITE_BENCH_INTERVAL_MS", 200));
    match std::env::var(ROLE).as_deref() {
        Ok("upstream") => upstream::run(events, interval),
        Ok("gateway") => {
            let base = std::env::var("KITE_STREAMS_UPSTREAM").unwrap();
            let model = OpenAiCompatible::new(base, Dialect::OpenAi).api_key("sk-bench-upstream");
            let addr = loopback::kite_gateway("m", Arc::new(model));
            println!("{}", addr.port());
            std::thread::park();
        }
        _ if std::env::var_os("KITE_BENCH_SOAK_MIN").is_some() => soak::run(),
        _ => drive(events, interval),
    }
}

/// This program again, as `role`, with the port it prints.
pub(crate) fn spawn(role: &str, envs: &[(&str, String)]) -> (Child, u16) {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .env(ROLE, role)
        .envs(envs.iter().map(|(k, v)| (*k, v)))
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    (child, line.trim().parse().expect("a port"))
}

fn drive(events: usize, interval: Duration) {
    let streams = var("KITE_BENCH_STREAMS", 10_000) as usize;
    let ramp = Duration::from_secs(var("KITE_BENCH_RAMP_S", 5));
    let files = allow_files(2 * streams as u64 + 1_000) as usize;
    // A client holds one file per stream; the gateway two (its client's connection and its
    // upstream's), and serves as many connections as that allows (`max_connections`).
    let direct = streams.min(files.saturating_sub(1_000));
    let gatewayed = streams.min(files.saturating_sub(256) / 2 - 64);
    let multiplexed = streams.min(files.saturating_sub(1_000));
    for (what, n) in [
        ("client", direct),
        ("gateway", gatewayed),
        ("gateway over HTTP/2", multiplexed),
    ] {
        if n < streams {
            eprintln!("only {files} files may be open: the {what} runs {n} streams, not {streams}");
        }
    }
    let (mut up, port) = spawn("upstream", &[]);
    let base = format!("http://127.0.0.1:{port}/v1");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    println!(
        "streams of {events} events, one every {interval:?}, starting over {ramp:?}; \
         files allowed: {files}; load average before: {}\n",
        std::fs::read_to_string("/proc/loadavg")
            .unwrap_or_default()
            .trim()
    );
    let client = rt.block_on(run(&base, std::process::id(), direct, events, ramp));
    let (mut gw, gw_port) = spawn("gateway", &[("KITE_STREAMS_UPSTREAM", base.clone())]);
    let through = format!("http://127.0.0.1:{gw_port}/v1");
    let gateway = rt.block_on(run(&through, gw.id(), gatewayed, events, ramp));
    let _ = gw.kill();
    let _ = gw.wait();
    // A gateway of its own, so that its peak is its own.
    let (mut gw, gw_port) = spawn("gateway", &[("KITE_STREAMS_UPSTREAM", base.clone())]);
    let over_h2 = rt.block_on(http2::run(gw_port, gw.id(), multiplexed, events, ramp));
    let _ = gw.kill();
    let _ = gw.wait();
    let _ = up.kill();
    let _ = up.wait();

    println!(
        "| kite as | streams | errors | wrong texts | wall s | peak RSS per stream | CPU µs per event | most files open |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    for (what, r) in [
        ("library client", &client),
        ("gateway, HTTP/1.1 clients", &gateway),
        ("gateway, HTTP/2 clients", &over_h2),
    ] {
        println!(
            "| {what} | {} | {} | {} | {:.1} | {:.1} KiB | {:.2} | {} |",
            r.streams,
            r.errors,
            r.wrong,
            r.wall.as_secs_f64(),
            r.peak_added as f64 / r.streams.max(1) as f64 / 1024.0,
            r.cpu * 1e6 / r.events.max(1) as f64,
            r.files
        );
    }
}

pub(crate) struct Report {
    pub(crate) streams: usize,
    pub(crate) errors: usize,
    pub(crate) wrong: usize,
    pub(crate) wall: Duration,
    pub(crate) peak_added: u64,
    pub(crate) cpu: f64,
    pub(crate) events: u64,
    pub(crate) files: usize,
}

/// `streams` streams at once from `base`, with the kite process `pid` watched.
async fn run(base: &str, pid: u32, streams: usize, events: usize, ramp: Duration) -> Report {
    let model = Arc::new(OpenAiCompatible::new(base, Dialect::OpenAi).api_key("sk-bench"));
    let expected: Arc<str> = upstream::text(events).into();
    measure(pid, streams, ramp, move |_, got_events| {
        let (model, expected) = (model.clone(), expected.clone());
        async move {
            let request = Request::new("m").message(Message::user("Go slowly."));
            let mut stream = model.stream(&request);
            let (mut text, mut finished) = (String::new(), false);
            while let Some(event) = stream.next().await {
                match event {
                    Ok(Event::TextDelta { text: t, .. }) => {
                        got_events.fetch_add(1, Ordering::Relaxed);
                        text.push_str(&t);
                    }
                    Ok(Event::Finish { .. }) => finished = true,
                    Ok(_) => {}
                    Err(e) => return Err(e.to_string()),
                }
            }
            Ok(finished && text == *expected)
        }
    })
    .await
}

/// `streams` streams at once, started over `ramp`, each `one(i, events)` (true when its
/// text came whole, counting its events in `events`), with the kite process `pid` watched.
pub(crate) async fn measure<F, Fut>(pid: u32, streams: usize, ramp: Duration, one: F) -> Report
where
    F: Fn(usize, Arc<AtomicU64>) -> Fut,
    Fut: std::future::Future<Output = Result<bool, String>> + Send + 'static,
{
    let before = probe::rss(pid);
    let cpu_before = probe::cpu(pid);
    let files = Arc::new(AtomicUsize::new(0));
    let watch = {
        let files = files.clone();
        tokio::spawn(async move {
            loop {
                files.fetch_max(probe::files(pid), Ordering::Relaxed);
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
        })
    };
    let got_events = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..streams {
        let at = ramp.mul_f64(i as f64 / streams.max(1) as f64);
        let stream = one(i, got_events.clone());
        tasks.spawn(async move {
            tokio::time::sleep(at).await;
            stream.await
        });
    }
    let (mut errors, mut wrong) = (0, 0);
    let mut first_error = None;
    while let Some(done) = tasks.join_next().await {
        match done {
            Ok(Ok(true)) => {}
            Ok(Ok(false)) => wrong += 1,
            Ok(Err(e)) => {
                errors += 1;
                first_error.get_or_insert(e);
            }
            Err(e) => {
                errors += 1;
                first_error.get_or_insert(e.to_string());
            }
        }
    }
    watch.abort();
    if let Some(e) = first_error {
        eprintln!("first error: {e}");
    }
    Report {
        streams,
        errors,
        wrong,
        wall: started.elapsed(),
        peak_added: probe::peak(pid).saturating_sub(before),
        cpu: probe::cpu(pid) - cpu_before,
        events: got_events.load(Ordering::Relaxed),
        files: files.load(Ordering::Relaxed),
    }
}

/// Raises this process's limit of open files to `want` (past the hard limit where it may),
/// and returns the limit it got.
fn allow_files(want: u64) -> u64 {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit(2) and setrlimit(2) on structs of ours.
    unsafe {
        libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit);
        let raised = libc::rlimit {
            rlim_cur: want.max(limit.rlim_cur),
            rlim_max: want.max(limit.rlim_max),
        };
        if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) != 0 {
            let most = libc::rlimit {
                rlim_cur: limit.rlim_max,
                rlim_max: limit.rlim_max,
            };
            libc::setrlimit(libc::RLIMIT_NOFILE, &most);
        }
        libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit);
    }
    limit.rlim_cur
}
