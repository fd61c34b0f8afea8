//! kite's whole streaming client path beside the libraries people would pick instead.
//!
//! One loopback server (`server.rs`) answers every request with the same recorded OpenAI
//! Chat Completions stream (`testdata/wire/openai/chat-completions/stream-text-with-usage`:
//! a role, three text deltas, the finish, usage, `[DONE]`), rendered once and written at
//! once. Each client sends a streamed request, reads the stream, decodes its events, joins
//! the text deltas and checks the text is the recording's:
//!
//! - kite: `OpenAiCompatible` and `Model::stream`;
//! - async-openai: `chat().create_stream`;
//! - rig: its OpenAI provider (`rig-core` 0.44, the last release that builds with the
//!   workspace's Rust 1.95; 0.45 needs 1.97) with `with_base_url`, `Model::stream`;
//! - the official OpenAI Python SDK: `AsyncOpenAI`, `stream=True` (`peers/openai_sdk.py`);
//! - the Vercel AI SDK on Node: `streamText` on `createOpenAI(...).chat(model)`
//!   (`peers/ai_sdk.mjs`);
//! - and a floor: a raw TCP client that writes the request's bytes and reads the answer's
//!   without decoding them, which shows what the server and the kernel cost.
//!
//! Each client runs in a process of its own (the Rust ones are this binary run again with
//! `KITE_PEERS_CLIENT`, on a multi-thread tokio runtime with a worker per core), once for
//! each concurrency: half a second of warm-up, then `KITE_BENCH_SECONDS` (default 3) of
//! closed loops, each sending one request after the other. That is done in
//! `KITE_BENCH_ROUNDS` (default 2) rounds over all the clients in turn, and each client's
//! best run at each concurrency is kept, so that a burst of load from elsewhere spoils a
//! round, not a figure. Measured:
//!
//! 1. completions a second, one loop (one request at a time), and 100 and 1,000 loops
//!    (streams in flight at once); the bench raises its `RLIMIT_NOFILE` soft limit to the
//!    hard one, and the children inherit it (the Python script raises its own too);
//! 2. the time to the first token a client adds: the median, one at a time, of the time
//!    from the start of a request (before it is built) to the first text delta in the
//!    caller's hands, less the floor's median time from the start of its request to the
//!    first byte of the body. The server writes the whole answer at once, so the first
//!    delta is in the first bytes a client reads: the difference is the client's own work
//!    (building and sending the request, the HTTP exchange, framing and decoding up to the
//!    first delta), with the same server and kernel path taken away;
//! 3. peak memory: each client process's peak RSS (`VmHWM` of `/proc/self/status`, read
//!    by the process itself at the end), at each concurrency.
//!
//! It prints a Markdown table and whether the aims are met (kite at least 1.5 times
//! the best Rust peer and ten times the Python SDK in completions a second), and draws
//! `target/peers.png` (copied to `crates/kite-bench/peers.png`).
//!
//! `scripts/peers-setup.sh` installs the Python SDK (and matplotlib, for the plot) and the
//! AI SDK; without them their rows are left out, saying why. Then
//! `cargo bench -p kite-bench --bench peers`. Settings: `KITE_BENCH_SECONDS` (each run),
//! `KITE_BENCH_ROUNDS`, `KITE_BENCH_CONCURRENCY` (`1,100,1000`), `KITE_BENCH_COUNT` (the
//! most requests a run starts), `KITE_BENCH_CLIENTS` (names to keep, comma-separated
//! substrings such as `kite,rig`), `KITE_BENCH_PYTHON` (a Python with `openai`),
//! `KITE_BENCH_NODE_DIR` (where the npm packages are). The whole run takes about three
//! minutes by default.
//!
//! To profile one client: `KITE_PEERS_SERVE=1 target/release/deps/peers-HASH` serves and
//! prints its base URL and the text; then, beside it, `KITE_PEERS_CLIENT=kite valgrind
//! --tool=callgrind target/release/deps/peers-HASH BASE_URL 100 20000 30 "$TEXT"` (the
//! arguments are those of `driver.rs`).
//!
//! Everything shares the machine's cores: the server (one thread) and the client process;
//! on two cores a client that needs less CPU leaves more to the server. The header prints
//! the load average, since anything else running shows in the figures.

mod clients;
mod driver;
mod external;
mod report;
mod server;

use external::Peer;
use report::Row;

const RECORDING: &str = "openai/chat-completions/stream-text-with-usage/response.sse";

/// The text the recording streams: its deltas' `content`, joined.
fn expected_text(sse: &[u8]) -> String {
    let mut text = String::new();
    for line in String::from_utf8_lossy(sse).lines() {
        let Some(data) = line.strip_prefix("data: ") else {
            continue;
        };
        let Ok(chunk) = serde_json::from_str::<serde_json::Value>(data) else {
            continue;
        };
        for choice in chunk["choices"].as_array().into_iter().flatten() {
            text.push_str(choice["delta"]["content"].as_str().unwrap_or_default());
        }
    }
    text
}

/// Raises the soft limit on open files to the hard one; returns the limit in force.
fn raise_nofile() -> u64 {
    // SAFETY: getrlimit and setrlimit read and write only the struct given.
    unsafe {
        let mut limit = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) != 0 {
            return 0;
        }
        limit.rlim_cur = limit.rlim_max;
        libc::setrlimit(libc::RLIMIT_NOFILE, &limit);
        libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit);
        limit.rlim_cur
    }
}

fn setting<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(default)
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".into())
}

fn main() {
    if let Ok(name) = std::env::var(driver::CLIENT_VAR) {
        driver::child(&name);
        return;
    }
    if std::env::var_os("KITE_PEERS_SERVE").is_some() {
        // Only the server, for a client run by hand under a profiler.
        raise_nofile();
        let sse = kite_testkit::fixture(RECORDING);
        println!(
            "http://{}/v1 {:?}",
            server::start(&sse),
            expected_text(&sse)
        );
        loop {
            std::thread::park();
        }
    }
    // `cargo bench` passes `--bench`; `cargo test --benches` passes nothing: run only then.
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    let nofile = raise_nofile();
    let sse = kite_testkit::fixture(RECORDING);
    let expected = expected_text(&sse);
    let addr = server::start(&sse);
    let seconds: f64 = setting("KITE_BENCH_SECONDS", 3.0);
    let count: u64 = setting("KITE_BENCH_COUNT", 10_000_000);
    let rounds: u32 = setting("KITE_BENCH_ROUNDS", 2).max(1);
    let levels: Vec<usize> = std::env::var("KITE_BENCH_CONCURRENCY")
        .unwrap_or_else(|_| "1,100,1000".into())
        .split(',')
        .filter_map(|c| c.trim().parse().ok())
        .filter(|c| *c > 0)
        .collect();
    let keep: Vec<String> = std::env::var("KITE_BENCH_CLIENTS")
        .unwrap_or_default()
        .split(',')
        .map(|s| s.trim().to_lowercase())
        .filter(|s| !s.is_empty())
        .collect();

    let mut peers: Vec<(&'static str, Result<Peer, String>)> = vec![
        (report::FLOOR, Ok(Peer::rust("raw"))),
        (report::KITE, Ok(Peer::rust("kite"))),
        ("async-openai", Ok(Peer::rust("async-openai"))),
        ("rig", Ok(Peer::rust("rig"))),
        (report::PYTHON, Peer::openai_python()),
        ("Vercel AI SDK (Node)", Peer::ai_sdk()),
    ];
    peers.retain(|(name, _)| {
        let lower = name.to_lowercase();
        keep.is_empty() || *name == report::FLOOR || keep.iter().any(|k| lower.contains(k))
    });

    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let subtitle = format!(
        "loopback, {cores} cores, best of {rounds} runs of {seconds} s, load {} at the start",
        load_average()
    );
    println!(
        "Streamed Chat Completions through each client ({subtitle}, RLIMIT_NOFILE {nofile}); \
         text {expected:?}\n"
    );
    let base = format!("http://{addr}/v1");
    let mut rows: Vec<Row> = peers
        .iter()
        .map(|(name, peer)| Row {
            name,
            rust: peer.as_ref().is_ok_and(|p| p.rust),
            runs: Default::default(),
        })
        .collect();
    // Rounds over every client in turn, keeping each one's best run: a burst of load from
    // elsewhere on the machine then spoils one round of a client, not its figure.
    for round in 1..=rounds {
        for ((name, peer), row) in peers.iter().zip(&mut rows) {
            for c in &levels {
                let job = driver::Job {
                    base: base.clone(),
                    concurrency: *c,
                    count,
                    seconds,
                    expected: expected.clone(),
                };
                let figures = peer
                    .as_ref()
                    .map_err(Clone::clone)
                    .and_then(|p| p.run(&job));
                match &figures {
                    Ok(f) => eprintln!(
                        "round {round}: {name}, {c} at once: {:.0} completions/s",
                        f.rate()
                    ),
                    Err(why) => eprintln!("round {round}: {name}, {c} at once: {why}"),
                }
                let better = match (row.runs.get(c), &figures) {
                    (Some(Ok(kept)), Ok(new)) => new.rate() > kept.rate(),
                    (Some(Ok(_)), Err(_)) => false,
                    _ => true,
                };
                if better {
                    row.runs.insert(*c, figures);
                }
            }
        }
    }
    println!("load average at the end: {}\n", load_average());
    report::print(&rows, &levels);
    report::plot(&rows, &levels, &subtitle);
}
