//! The figures as a Markdown table, the aims checked, and the plot: the figures
//! written to `target/peers.json`, drawn by `peers/plot.py` (matplotlib, from the Python
//! that has it) into `target/peers.png`, copied to `crates/kite-bench/peers.png`.

use crate::external::{Figures, imports};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The figures of one client, by concurrency; or why it was left out.
pub(crate) struct Row {
    pub(crate) name: &'static str,
    pub(crate) rust: bool,
    pub(crate) runs: BTreeMap<usize, Result<Figures, String>>,
}

impl Row {
    fn rate(&self, concurrency: usize) -> Option<f64> {
        match self.runs.get(&concurrency)? {
            Ok(f) if f.completions > 0 => Some(f.rate()),
            _ => None,
        }
    }

    /// The median time to the first text delta one at a time, in µs.
    fn ttft(&self) -> Option<f64> {
        self.runs.get(&1)?.as_ref().ok()?.ttft_p50_us
    }

    fn cpu_us(&self, concurrency: usize) -> Option<f64> {
        self.runs.get(&concurrency)?.as_ref().ok()?.cpu_us()
    }

    fn rss_mib(&self, concurrency: usize) -> Option<f64> {
        let kb = self.runs.get(&concurrency)?.as_ref().ok()?.peak_rss_kb?;
        Some(kb as f64 / 1024.0)
    }
}

/// The floor's row is the first.
pub(crate) const FLOOR: &str = "floor: raw TCP, no decoding";
pub(crate) const KITE: &str = "kite";
pub(crate) const PYTHON: &str = "openai (Python SDK)";

fn cell(v: Option<f64>, digits: usize) -> String {
    v.map_or("–".into(), |v| {
        let s = format!("{v:.digits$}");
        // Thousands separated, for the rates.
        let (int, frac) = s.split_once('.').map_or((s.as_str(), ""), |(i, f)| (i, f));
        let mut out = String::new();
        for (i, c) in int.chars().enumerate() {
            if i > 0 && (int.len() - i) % 3 == 0 {
                out.push(',');
            }
            out.push(c);
        }
        match frac.is_empty() {
            true => out,
            false => format!("{out}.{frac}"),
        }
    })
}

/// Prints the table and the aims.
pub(crate) fn print(rows: &[Row], levels: &[usize]) {
    let floor_ttft = rows.iter().find(|r| r.name == FLOOR).and_then(Row::ttft);
    let mut head = String::from("| client |");
    let mut rule = String::from("|---|");
    for c in levels {
        head.push_str(&format!(" completions/s, {} |", name_level(*c)));
        rule.push_str("---|");
    }
    head.push_str(
        " time to first token added, µs (p50, one at a time) | peak RSS, MiB | \
         client CPU per completion, µs |",
    );
    rule.push_str("---|---|---|");
    println!("{head}\n{rule}");
    for row in rows {
        let mut line = format!("| {} |", row.name);
        for c in levels {
            let failed = match row.runs.get(c) {
                Some(Ok(f)) if f.failed > 0 => format!(" ({} failed)", f.failed),
                _ => String::new(),
            };
            line.push_str(&format!(" {}{failed} |", cell(row.rate(*c), 0)));
        }
        let added = match (row.name == FLOOR, row.ttft(), floor_ttft) {
            (true, Some(t), _) => format!("0 (first body byte at {t:.0})"),
            (false, Some(t), Some(f)) => format!("{:+.0}", t - f),
            _ => "–".into(),
        };
        let rss: Vec<String> = levels.iter().map(|c| cell(row.rss_mib(*c), 1)).collect();
        let cpu: Vec<String> = levels.iter().map(|c| cell(row.cpu_us(*c), 0)).collect();
        line.push_str(&format!(
            " {added} | {} | {} |",
            rss.join(" / "),
            cpu.join(" / ")
        ));
        println!("{line}");
    }
    println!(
        "\nPeak RSS (each client process's VmHWM) and CPU time (user and system, over the \
         completions of the measured run), streams at once: {}.",
        levels
            .iter()
            .map(|c| c.to_string())
            .collect::<Vec<_>>()
            .join(" / ")
    );
    for row in rows {
        for (c, run) in &row.runs {
            match run {
                Err(why) => println!("{} at {}: no figures: {why}", row.name, name_level(*c)),
                Ok(f) if f.failed > 0 => println!(
                    "{} at {}: {} failed, the first: {}",
                    row.name,
                    name_level(*c),
                    f.failed,
                    f.error.as_deref().unwrap_or("?")
                ),
                _ => {}
            }
        }
    }
    aims(rows, levels);
}

fn name_level(c: usize) -> String {
    match c {
        1 => "one at a time".into(),
        c => format!("{} concurrent", cell(Some(c as f64), 0)),
    }
}

/// The aims: kite at least 1.5 times the best Rust peer and ten times the Python
/// SDK, in completions a second, at each concurrency.
fn aims(rows: &[Row], levels: &[usize]) {
    let Some(kite) = rows.iter().find(|r| r.name == KITE) else {
        return;
    };
    println!();
    for c in levels {
        let Some(k) = kite.rate(*c) else { continue };
        let best_rust = rows
            .iter()
            .filter(|r| r.rust && r.name != KITE && r.name != FLOOR)
            .filter_map(|r| Some((r.name, r.rate(*c)?)))
            .max_by(|a, b| a.1.total_cmp(&b.1));
        let mut said = Vec::new();
        if let Some((name, rate)) = best_rust {
            let x = k / rate;
            let met = if x >= 1.5 { "met" } else { "NOT met" };
            said.push(format!(
                "kite {x:.2}x the best Rust peer ({name}), aim 1.5x {met}"
            ));
        }
        if let Some(py) = rows
            .iter()
            .find(|r| r.name == PYTHON)
            .and_then(|r| r.rate(*c))
        {
            let x = k / py;
            let met = if x >= 10.0 { "met" } else { "NOT met" };
            said.push(format!("kite {x:.1}x the Python SDK, aim 10x {met}"));
        }
        if said.is_empty() {
            continue;
        }
        let said = format!("{}: {}", name_level(*c), said.join("; "));
        println!("{said}");
    }
}

fn target_dir() -> PathBuf {
    let dir = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target"));
    std::fs::canonicalize(&dir).unwrap_or(dir)
}

/// Writes `target/peers.json` and draws it; says where the PNG is, or why there is none.
pub(crate) fn plot(rows: &[Row], levels: &[usize], subtitle: &str) {
    let floor_ttft = rows.iter().find(|r| r.name == FLOOR).and_then(Row::ttft);
    let clients: Vec<serde_json::Value> = rows
        .iter()
        .map(|r| {
            let by = |f: &dyn Fn(usize) -> Option<f64>| -> serde_json::Value {
                levels
                    .iter()
                    .map(|c| (c.to_string(), serde_json::Value::from(f(*c))))
                    .collect::<serde_json::Map<_, _>>()
                    .into()
            };
            let added = match r.name == FLOOR {
                true => None,
                false => Some(r.ttft().zip(floor_ttft).map(|(t, f)| t - f)),
            };
            serde_json::json!({
                "name": r.name,
                "rate": by(&|c| r.rate(c)),
                "rss_mib": by(&|c| r.rss_mib(c)),
                "ttft_added_us": added.flatten(),
            })
        })
        .collect();
    let target = target_dir();
    let json = target.join("peers.json");
    let png = target.join("peers.png");
    let data = serde_json::json!({"levels": levels, "clients": clients, "subtitle": subtitle});
    if let Err(e) =
        std::fs::create_dir_all(&target).and_then(|()| std::fs::write(&json, data.to_string()))
    {
        println!("no plot: cannot write {}: {e}", json.display());
        return;
    }
    let home = std::env::var_os("HOME").unwrap_or_default();
    let python = std::env::var_os("KITE_BENCH_PYTHON")
        .map(PathBuf::from)
        .into_iter()
        .chain([Path::new(&home).join(".cache/kite/peers-venv/bin/python")])
        .find(|p| imports(p, "matplotlib"));
    let Some(python) = python else {
        println!("no plot: no Python with matplotlib (scripts/peers-setup.sh installs one)");
        return;
    };
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("peers/plot.py");
    let drawn = std::process::Command::new(python)
        .arg(script)
        .arg(&json)
        .arg(&png)
        .status();
    if !drawn.is_ok_and(|s| s.success()) {
        println!("no plot: peers/plot.py failed");
        return;
    }
    let copy = Path::new(env!("CARGO_MANIFEST_DIR")).join("peers.png");
    match std::fs::copy(&png, &copy) {
        Ok(_) => println!("plot: {} (copied to {})", png.display(), copy.display()),
        Err(e) => println!("plot: {} (not copied: {e})", png.display()),
    }
}
