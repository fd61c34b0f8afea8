//! The gateway at full speed, measured from outside: an external load generator (oha) sends
//! the same streamed Chat Completions request straight to an upstream (nginx on loopback
//! answering a fixed stream: the role, five words, the finish and `[DONE]`), through kite's
//! gateway (kite-serve as `kite serve` runs it, a worker per core, in front of kite's OpenAI
//! provider pointed at nginx) and through LiteLLM's proxy configured for the same upstream.
//!
//! Two things are measured, each as what the gateway adds to the direct figure:
//!
//! 1. one request at a time on one connection: the added p50 and p99 latency (aim: at most
//!    0.2 ms at p99);
//! 2. fixed rates stepped up (500 to 10,000 requests a second by default), with latency
//!    counted from when each request was due, so a queue shows: the highest rate each
//!    gateway serves with every request answered, at least 95% of the rate, and at most
//!    1 ms added at p99 over the direct run at that rate (aim: 5,000 a second or more).
//!    A gateway's steps stop at its first miss; all stop when nginx itself cannot be
//!    driven at the rate.
//!
//! Everything shares the machine's cores: oha (one thread), nginx (one process) and the
//! gateway (a worker per core); the table says how many there were.
//!
//! Run `scripts/bench-tools.sh` (nginx, oha) and `scripts/litellm-venv.sh` (LiteLLM; its
//! rows are left out without it), then `cargo bench -p kite-bench --bench full_speed`.
//! Without nginx or oha it says so and skips. `KITE_BENCH_SECONDS` sets each rate's step
//! (default 3), `KITE_BENCH_ONE_SECONDS` the one-at-a-time runs (default 5),
//! `KITE_BENCH_RATES` the steps (`500,1000,…`), `KITE_BENCH_CONNECTIONS` oha's connections
//! for the rates (default 64); `KITE_BENCH_NGINX`, `KITE_BENCH_OHA` and
//! `KITE_BENCH_LITELLM` name the programs.

#[path = "../loopback/mod.rs"]
mod loopback;
mod nginx;
mod oha;

use oha::{Load, Request, Run};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

const MODEL: &str = "bench";
const PATH: &str = "/v1/chat/completions";
/// The key clients send (LiteLLM insists on one; kite's gateway here asks for none).
const CLIENT_KEY: &str = "sk-kite-bench-0123456789abcdef";
const BODY: &str =
    r#"{"model":"bench","stream":true,"messages":[{"role":"user","content":"Count to five."}]}"#;
const RATES: [u32; 7] = [500, 1000, 2000, 3000, 5000, 7000, 10_000];
/// What a gateway may add at p99 while it keeps up, and the issue's aims.
const SLACK_MS: f64 = 1.0;
const AIM_ONE_MS: f64 = 0.2;
const AIM_RATE: u32 = 5_000;

/// `name` on `PATH`, else in one of `extra`.
pub(crate) fn on_path(name: &str, extra: &[&str]) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(extra.iter().map(PathBuf::from))
        .map(|dir| dir.join(name))
        .find(|bin| bin.is_file())
}

fn var(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|v| *v > 0)
        .unwrap_or(default)
}

fn rates() -> Vec<u32> {
    let given = std::env::var("KITE_BENCH_RATES").unwrap_or_default();
    let rates: Vec<u32> = given
        .split(',')
        .filter_map(|r| r.trim().parse().ok())
        .filter(|r| *r > 0)
        .collect();
    match rates.is_empty() {
        true => RATES.to_vec(),
        false => rates,
    }
}

/// Whether `url` answers the request with the whole stream.
async fn answers(url: &str) -> Result<(), String> {
    let response = reqwest::Client::new()
        .post(url)
        .bearer_auth(CLIENT_KEY)
        .header("content-type", "application/json")
        .body(BODY)
        .send()
        .await
        .map_err(|e| e.to_string())?;
    let status = response.status();
    let text = response.text().await.map_err(|e| e.to_string())?;
    match status.is_success() && text.contains("five.") && text.contains("[DONE]") {
        true => Ok(()),
        false => Err(format!(
            "{status}: {}",
            text.chars().take(300).collect::<String>()
        )),
    }
}

struct Target {
    name: &'static str,
    url: String,
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --benches` passes nothing: run only then.
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    let (Some(nginx_bin), Some(oha_bin)) = (nginx::find(), oha::find()) else {
        println!(
            "full_speed skipped: it needs nginx ({}) and oha ({}); scripts/bench-tools.sh \
             installs both",
            nginx::find().map_or("missing".into(), |b| b.display().to_string()),
            oha::find().map_or("missing".into(), |b| b.display().to_string()),
        );
        return;
    };
    let upstream = match nginx::Nginx::start(&nginx_bin, PATH, &loopback::chat_stream(MODEL)) {
        Ok(upstream) => upstream,
        Err(e) => {
            println!("full_speed skipped: nginx did not start: {e}");
            return;
        }
    };
    let model = kite::OpenAiCompatible::new(
        format!("http://{}/v1", upstream.addr),
        kite::wire::openai_chat::Dialect::OpenAi,
    )
    .api_key("sk-bench-upstream");
    let kite = loopback::kite_gateway(MODEL, Arc::new(model));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let litellm = rt.block_on(loopback::litellm::start(MODEL, upstream.addr, CLIENT_KEY));
    let mut targets = vec![
        Target {
            name: "direct (nginx)",
            url: format!("http://{}{PATH}", upstream.addr),
        },
        Target {
            name: "kite",
            url: format!("http://{kite}{PATH}"),
        },
    ];
    match &litellm {
        Some(l) => targets.push(Target {
            name: "LiteLLM",
            url: format!("http://{}{PATH}", l.addr),
        }),
        None => {
            eprintln!("LiteLLM is not installed (scripts/litellm-venv.sh); its rows are left out")
        }
    }
    for (i, target) in std::mem::take(&mut targets).into_iter().enumerate() {
        match rt.block_on(answers(&target.url)) {
            Ok(()) => targets.push(target),
            Err(e) if i == 0 => return println!("full_speed skipped: nginx answers {e}"),
            Err(e) => eprintln!("{} left out: it answers {e}", target.name),
        }
    }
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    // Anything else busy on the machine shows in the p99 figures first.
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let load = load.split(' ').next().unwrap_or("?");
    println!(
        "Streamed Chat Completions POSTs from oha (1 thread) on loopback; {cores} cores shared \
         by oha, nginx (1 process) and the gateway (kite: a worker per core; LiteLLM: a \
         worker per core); load average before the run: {load}.\n"
    );
    let one = Duration::from_secs(var("KITE_BENCH_ONE_SECONDS", 5));
    let ones = one_at_a_time(&oha_bin, &targets, one);
    let step = Duration::from_secs(var("KITE_BENCH_SECONDS", 3));
    let connections = var("KITE_BENCH_CONNECTIONS", 64) as u32;
    let best = stepped(&oha_bin, &targets, step, connections);
    summary(&targets, &ones, &best);
    drop(litellm);
    drop(upstream);
}

/// Each target one request at a time, after a second's warm-up: p50 and p99, and what
/// each gateway adds to the direct figures.
fn one_at_a_time(oha: &Path, targets: &[Target], duration: Duration) -> Vec<Option<Run>> {
    println!(
        "One request at a time, {} s each:\n\n| target | req/s | failed | p50 ms | p99 ms | \
         added p50 ms | added p99 ms |\n|---|---|---|---|---|---|---|",
        duration.as_secs()
    );
    let mut runs: Vec<Option<Run>> = Vec::new();
    for target in targets {
        let request = Request {
            url: &target.url,
            body: BODY,
            key: CLIENT_KEY,
        };
        let _ = oha::run(oha, &request, Load::OneAtATime, Duration::from_secs(1));
        let run = oha::run(oha, &request, Load::OneAtATime, duration);
        match (&run, runs.first().copied().flatten()) {
            (Ok(r), direct) => {
                let added = |f: fn(&Run) -> f64| {
                    direct.map_or("–".into(), |d| format!("{:+.3}", f(r) - f(&d)))
                };
                println!(
                    "| {} | {:.0} | {} | {:.3} | {:.3} | {} | {} |",
                    target.name,
                    r.ok_per_sec,
                    r.failed,
                    r.p50,
                    r.p99,
                    added(|r| r.p50),
                    added(|r| r.p99)
                );
            }
            (Err(e), _) => println!("| {} | {e} |||||", target.name),
        }
        runs.push(run.ok());
    }
    println!();
    runs
}

/// The rates stepped up; for each gateway, the highest it kept up with.
fn stepped(oha: &Path, targets: &[Target], step: Duration, connections: u32) -> Vec<Option<u32>> {
    println!(
        "Fixed rates, {} s each, up to {connections} connections, latency from when each \
         request was due:\n\n| rate req/s | target | answered req/s | failed | p50 ms | p99 ms \
         | added p99 ms | kept up |\n|---|---|---|---|---|---|---|---|",
        step.as_secs()
    );
    let mut best = vec![None; targets.len()];
    let mut going = vec![true; targets.len()];
    going[0] = false;
    for rate in rates() {
        if !going.contains(&true) {
            break;
        }
        let load = Load::Rate { rate, connections };
        let run = |target: &Target| {
            let request = Request {
                url: &target.url,
                body: BODY,
                key: CLIENT_KEY,
            };
            oha::run(oha, &request, load, step)
        };
        let kept = |r: &Run| r.failed == 0 && r.ok_per_sec >= 0.95 * f64::from(rate);
        let direct = match run(&targets[0]) {
            Ok(d) if kept(&d) => d,
            Ok(d) => {
                println!(
                    "| {rate} | {} | {:.0} | {} | {:.3} | {:.3} | – | no: the load generator \
                     and nginx stop here |",
                    targets[0].name, d.ok_per_sec, d.failed, d.p50, d.p99
                );
                break;
            }
            Err(e) => {
                println!("| {rate} | {} | {e} ||||||", targets[0].name);
                break;
            }
        };
        println!(
            "| {rate} | {} | {:.0} | {} | {:.3} | {:.3} | – | – |",
            targets[0].name, direct.ok_per_sec, direct.failed, direct.p50, direct.p99
        );
        for (i, target) in targets.iter().enumerate().skip(1) {
            if !going[i] {
                continue;
            }
            match run(target) {
                Ok(r) => {
                    let added = r.p99 - direct.p99;
                    let ok = kept(&r) && added <= SLACK_MS;
                    println!(
                        "| {rate} | {} | {:.0} | {} | {:.3} | {:.3} | {added:+.3} | {} |",
                        target.name,
                        r.ok_per_sec,
                        r.failed,
                        r.p50,
                        r.p99,
                        if ok { "yes" } else { "no" }
                    );
                    match ok {
                        true => best[i] = Some(rate),
                        false => going[i] = false,
                    }
                }
                Err(e) => {
                    println!("| {rate} | {} | {e} ||||||", target.name);
                    going[i] = false;
                }
            }
        }
    }
    println!();
    best
}

/// Each gateway's figures against the issue's aims.
fn summary(targets: &[Target], ones: &[Option<Run>], best: &[Option<u32>]) {
    println!(
        "Summary (aims: ≤ {AIM_ONE_MS} ms added at p99 one at a time; ≥ {AIM_RATE} req/s with \
         ≤ {SLACK_MS} ms added at p99):\n\n| gateway | added p50 ms | added p99 ms | highest \
         rate with ≤ {SLACK_MS} ms added p99 | aims met |\n|---|---|---|---|---|"
    );
    let direct = ones[0];
    for (i, target) in targets.iter().enumerate().skip(1) {
        let added = direct
            .zip(ones[i])
            .map(|(d, r)| (r.p50 - d.p50, r.p99 - d.p99));
        let (p50, p99) = added.map_or(("–".into(), "–".into()), |(a, b)| {
            (format!("{a:+.3}"), format!("{b:+.3}"))
        });
        let rate = best[i].map_or("below the first step".into(), |r| format!("{r} req/s"));
        let one = added.is_some_and(|(_, p99)| p99 <= AIM_ONE_MS);
        let full = best[i].is_some_and(|r| r >= AIM_RATE);
        let met = match (one, full) {
            (true, true) => "both",
            (true, false) => "latency only",
            (false, true) => "rate only",
            (false, false) => "neither",
        };
        println!("| {} | {p50} | {p99} | {rate} | {met} |", target.name);
    }
}
