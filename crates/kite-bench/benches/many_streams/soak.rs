//! The soak: the gateway (a process of its own, as in the main run) in front of the slow
//! upstream, asked `KITE_BENCH_SOAK_RATE` streams a second (default 50; each of 20 events
//! 50 ms apart, so about 50 under way at once) for `KITE_BENCH_SOAK_MIN` minutes. Every
//! minute it prints the gateway's resident memory and the streams done; at the end, the
//! growth from the end of the first ten minutes (once its pools and caches are warm) to
//! the end, which should be none.

use crate::{probe, spawn, upstream, var};
use kite::wire::openai_chat::Dialect;
use kite::{Event, Message, Model, OpenAiCompatible, Request, StreamExt};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

pub(crate) fn run() {
    let minutes = var("KITE_BENCH_SOAK_MIN", 60);
    let rate = var("KITE_BENCH_SOAK_RATE", 50).max(1);
    let envs = [
        ("KITE_BENCH_EVENTS", "20".to_owned()),
        ("KITE_BENCH_INTERVAL_MS", "50".to_owned()),
    ];
    let (mut up, port) = spawn("upstream", &envs);
    let base = format!("http://127.0.0.1:{port}/v1");
    let (mut gw, gw_port) = spawn("gateway", &[("KITE_STREAMS_UPSTREAM", base)]);
    let pid = gw.id();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let (done, failed) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let expected: Arc<str> = upstream::text(20).into();
    let model = Arc::new(
        OpenAiCompatible::new(format!("http://127.0.0.1:{gw_port}/v1"), Dialect::OpenAi)
            .api_key("sk-soak"),
    );
    println!("soak: {rate} streams a second for {minutes} min; gateway pid {pid}");
    println!("| minute | RSS MiB | streams done | failed |");
    println!("|---|---|---|---|");
    let mut rss = Vec::new();
    rt.block_on(async {
        let started = Instant::now();
        let mut tick = tokio::time::interval(Duration::from_secs_f64(1.0 / rate as f64));
        let mut next_report = Duration::from_secs(60);
        while started.elapsed() < Duration::from_secs(minutes * 60) {
            tick.tick().await;
            let (model, expected) = (model.clone(), expected.clone());
            let (ok_count, failed_count) = (done.clone(), failed.clone());
            tokio::spawn(async move {
                let request = Request::new("m").message(Message::user("Soak."));
                let mut stream = model.stream(&request);
                let mut text = String::new();
                let mut ok = true;
                while let Some(event) = stream.next().await {
                    match event {
                        Ok(Event::TextDelta { text: t, .. }) => text.push_str(&t),
                        Ok(_) => {}
                        Err(_) => ok = false,
                    }
                }
                let counter = match ok && text == *expected {
                    true => ok_count,
                    false => failed_count,
                };
                counter.fetch_add(1, Ordering::Relaxed);
            });
            if started.elapsed() >= next_report {
                let now = probe::rss(pid);
                rss.push(now);
                println!(
                    "| {} | {:.1} | {} | {} |",
                    next_report.as_secs() / 60,
                    now as f64 / (1 << 20) as f64,
                    done.load(Ordering::Relaxed),
                    failed.load(Ordering::Relaxed)
                );
                next_report += Duration::from_secs(60);
            }
        }
        tokio::time::sleep(Duration::from_secs(3)).await;
    });
    let warm = rss.get(9).or(rss.first()).copied().unwrap_or(0);
    let last = rss.last().copied().unwrap_or(0);
    println!(
        "\nRSS after 10 min {:.1} MiB, at the end {:.1} MiB: {:+.1} MiB; {} streams, {} failed",
        warm as f64 / (1 << 20) as f64,
        last as f64 / (1 << 20) as f64,
        (last as f64 - warm as f64) / (1 << 20) as f64,
        done.load(Ordering::Relaxed),
        failed.load(Ordering::Relaxed)
    );
    let _ = gw.kill();
    let _ = gw.wait();
    let _ = up.kill();
    let _ = up.wait();
}
