//! What a gateway adds to a request's latency: the same streamed Chat Completions request,
//! at a fixed rate, straight to a loopback upstream, through kite's gateway (kite-serve, as
//! `kite serve` runs it, in front of kite's OpenAI provider), and through LiteLLM's proxy
//! configured for the same upstream. Prints p50 and p99 of the time to the first byte of
//! the answer's body and of the whole request, and what each gateway adds.
//!
//! LiteLLM is taken from `$KITE_BENCH_LITELLM` or `~/.cache/kite/litellm-venv/bin/litellm`
//! (`scripts/litellm-venv.sh` installs it; see `loopback/litellm.rs`); without it, its rows
//! are left out.
//!
//! `cargo bench -p kite-bench --bench gateway` (`KITE_BENCH_RATE` requests per second,
//! default 50, below what LiteLLM's proxy serves streamed on two cores, so the figures are
//! latency and not a queue; `KITE_BENCH_SECONDS`, default 10).
//!
//! The load is open-loop: each request starts at its time whatever the others do, so a slow
//! gateway shows as latency, not as fewer requests.
//!
//! With Redis and Postgres installed (`scripts/setup.sh --tests`), a third row puts kite's gateway
//! as a fleet's replica runs it: a client key whose limits are checked in Redis, and every
//! answer written to the spend ledger in Postgres. Then the ledger's own write rate is
//! measured: how many rows a second a replica's writer puts in Postgres when it has fallen
//! behind (batches of its largest size, one after the other).

mod loopback;

use std::sync::Arc;
use std::time::{Duration, Instant};

const MODEL: &str = "bench";

/// The key clients send (LiteLLM insists on one; kite's gateway here asks for none).
const CLIENT_KEY: &str = "sk-kite-bench-0123456789abcdef";

fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// One request: the time to the first byte of the body, and to its end.
async fn once(client: &reqwest::Client, url: &str) -> Option<(Duration, Duration)> {
    let started = Instant::now();
    let mut response = client
        .post(url)
        .bearer_auth(CLIENT_KEY)
        .header("content-type", "application/json")
        .body(format!(
            r#"{{"model":"{MODEL}","stream":true,"messages":[{{"role":"user","content":"Count to five."}}]}}"#
        ))
        .send()
        .await
        .ok()?;
    if !response.status().is_success() {
        return None;
    }
    let mut first = None;
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.ok()? {
        first.get_or_insert_with(|| started.elapsed());
        body.extend_from_slice(&chunk);
    }
    let total = started.elapsed();
    let text = String::from_utf8_lossy(&body);
    (text.contains("five.") && text.contains("[DONE]")).then_some((first?, total))
}

struct Measured {
    ttfb: Vec<Duration>,
    total: Vec<Duration>,
    failed: usize,
}

/// `rate` requests a second for `seconds` to `url`, after a second of warm-up.
async fn load(url: &str, rate: u32, seconds: u32) -> Measured {
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(1024)
        .build()
        .unwrap();
    let url: Arc<str> = url.into();
    let run = |n: u32| {
        let client = client.clone();
        let url = url.clone();
        async move {
            let start = tokio::time::Instant::now();
            let gap = Duration::from_secs_f64(1.0 / f64::from(rate));
            let mut tasks = Vec::with_capacity(n as usize);
            for i in 0..n {
                tokio::time::sleep_until(start + gap * i).await;
                let client = client.clone();
                let url = url.clone();
                tasks.push(tokio::spawn(async move { once(&client, &url).await }));
            }
            let mut results = Vec::with_capacity(tasks.len());
            for t in tasks {
                results.push(t.await.ok().flatten());
            }
            results
        }
    };
    run(rate).await;
    let results = run(rate * seconds).await;
    let failed = results.iter().filter(|r| r.is_none()).count();
    let (mut ttfb, mut total): (Vec<_>, Vec<_>) = results.into_iter().flatten().unzip();
    ttfb.sort();
    total.sort();
    Measured {
        ttfb,
        total,
        failed,
    }
}

fn quantile(sorted: &[Duration], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = ((sorted.len() as f64 - 1.0) * q).round() as usize;
    sorted[i].as_secs_f64() * 1e3
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --benches` passes nothing: run only then.
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    let var = |name: &str, default: u32| {
        std::env::var(name)
            .ok()
            .and_then(|v| v.parse().ok())
            .filter(|v| *v > 0)
            .unwrap_or(default)
    };
    let (rate, seconds) = (var("KITE_BENCH_RATE", 50), var("KITE_BENCH_SECONDS", 10));
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async move {
        let upstream = loopback::upstream("/v1/chat/completions", loopback::chat_stream(MODEL));
        let model = kite::OpenAiCompatible::new(
            format!("http://{upstream}/v1"),
            kite::wire::openai_chat::Dialect::OpenAi,
        )
        .api_key("sk-bench-upstream");
        let model: Arc<dyn kite::Model> = Arc::new(model);
        let kite = loopback::kite_gateway(MODEL, model.clone());
        let engines = fleet_engines();
        let litellm = loopback::litellm::start(MODEL, upstream, CLIENT_KEY).await;
        let mut targets = vec![
            ("direct", format!("http://{upstream}/v1/chat/completions")),
            ("kite", format!("http://{kite}/v1/chat/completions")),
        ];
        if let Some((redis, postgres)) = &engines {
            let every = kite::serve::Limits {
                requests_per_minute: Some(10_000_000),
                tokens_per_minute: Some(10_000_000_000),
                max_parallel: Some(100_000),
            };
            let rpm = kite::serve::Limits {
                requests_per_minute: Some(10_000_000),
                ..Default::default()
            };
            for (name, limits, ledger, shared) in [
                ("kite, ledger in Postgres", rpm, true, false),
                ("kite, rpm in Redis", rpm, false, true),
                ("kite, rpm in Redis, ledger in Postgres", rpm, true, true),
                (
                    "kite, rpm+tpm+parallel in Redis, ledger in Postgres",
                    every,
                    true,
                    true,
                ),
            ] {
                let (redis, store) = (redis.url(), postgres.url());
                let fleet =
                    loopback::kite_gateway_with(MODEL, model.clone(), move |g| async move {
                        let mut g = g.key_with(CLIENT_KEY, limits);
                        if ledger {
                            let store = kite::store::PostgresStore::connect(&store).await.unwrap();
                            g = g.fleet(Arc::new(store), None);
                        }
                        if shared {
                            g = g.redis(&redis, kite::serve::Unavailable::Deny).unwrap();
                        }
                        g
                    });
                targets.push((name, format!("http://{fleet}/v1/chat/completions")));
            }
        } else {
            eprintln!(
                "Redis or Postgres is not installed (scripts/setup.sh --tests); the fleet's row is left out"
            );
        }
        if let Some(l) = &litellm {
            targets.push(("LiteLLM", format!("http://{}/v1/chat/completions", l.addr)));
        } else {
            eprintln!("LiteLLM is not installed (scripts/litellm-venv.sh); its rows are left out");
        }
        println!(
            "{rate} streamed requests/s for {seconds} s each, loopback, {} cores\n",
            cores()
        );
        println!(
            "| path | ok | failed | TTFB p50 ms | TTFB p99 ms | total p50 ms | total p99 ms |"
        );
        println!("|---|---|---|---|---|---|---|");
        let mut rows = Vec::new();
        for (name, url) in &targets {
            let m = load(url, rate, seconds).await;
            let row = [
                quantile(&m.ttfb, 0.5),
                quantile(&m.ttfb, 0.99),
                quantile(&m.total, 0.5),
                quantile(&m.total, 0.99),
            ];
            println!(
                "| {name} | {} | {} | {:.3} | {:.3} | {:.3} | {:.3} |",
                m.total.len(),
                m.failed,
                row[0],
                row[1],
                row[2],
                row[3]
            );
            rows.push((*name, row));
        }
        let direct = rows[0].1;
        println!("\nAdded over direct (ms):\n");
        println!("| gateway | TTFB p50 | TTFB p99 | total p50 | total p99 |");
        println!("|---|---|---|---|---|");
        for (name, row) in rows.iter().skip(1) {
            println!(
                "| {name} | {:.3} | {:.3} | {:.3} | {:.3} |",
                row[0] - direct[0],
                row[1] - direct[1],
                row[2] - direct[2],
                row[3] - direct[3]
            );
        }
        drop(litellm);
        if let Some((_, postgres)) = &engines {
            ledger_rate(&postgres.url()).await;
        }
    });
}

/// Redis and Postgres of the bench's own, when installed.
fn fleet_engines() -> Option<(
    kite_testkit::engines::Redis,
    kite_testkit::engines::Postgres,
)> {
    Some((
        kite_testkit::engines::Redis::start()?,
        kite_testkit::engines::Postgres::start()?,
    ))
}

/// How many ledger rows a second a replica's writer puts in Postgres when it has fallen
/// behind: batches of 2,000 (its largest), one after the other.
async fn ledger_rate(url: &str) {
    use kite::store::Fleet;
    use kite::store::fleet::LedgerRow;
    let store = kite::store::PostgresStore::connect(url).await.unwrap();
    let row = |i: usize| LedgerRow {
        time_ms: 1_795_694_400_000 + i as i64,
        request_id: format!("req_{i}"),
        key: Some(format!("key_{}", i % 50)),
        team: Some(format!("team_{}", i % 5)),
        route: MODEL.into(),
        provider: "openai".into(),
        model: MODEL.into(),
        input_tokens: 100,
        output_tokens: 20,
        cost: Some(0.0001),
        status: 200,
        ttfb_ms: Some(3),
        duration_ms: 9,
        ..Default::default()
    };
    let (batches, size) = (50, 2_000);
    let started = Instant::now();
    for b in 0..batches {
        let rows = (0..size).map(|i| row(b * size + i)).collect();
        store.record(rows).await.unwrap();
    }
    let secs = started.elapsed().as_secs_f64();
    println!(
        "\nLedger writes when behind: {} rows in {secs:.2} s = {:.0} rows/s (batches of {size})",
        batches * size,
        (batches * size) as f64 / secs
    );
}
