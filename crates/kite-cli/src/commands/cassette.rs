//! `kite cassette`: look inside recorded traffic, and check it holds no keys.

use crate::terminal::output::error_line;
use crate::terminal::output::{errln, out, outln};
use crate::terminal::text::printable;
use clap::Subcommand;
use kite::Error;
use kite::http::cassette::{self, Exchange, Recording};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(Subcommand)]
pub(crate) enum CassetteCommand {
    /// List the cassettes under a folder (default: tests/cassettes, else the working
    /// directory).
    List {
        dir: Option<PathBuf>,
        /// One JSON object per cassette, for scripts.
        #[arg(long)]
        json: bool,
    },
    /// Show a cassette's exchanges, or one exchange's request and response in full.
    Show {
        path: PathBuf,
        /// The exchange to print in full (1 is the first).
        exchange: Option<usize>,
    },
    /// Report anything that looks like an API key in files or folders (exit status 1 when
    /// something is found).
    Scan {
        #[arg(required = true)]
        paths: Vec<PathBuf>,
    },
}

pub(crate) fn run(cmd: CassetteCommand) -> Result<(), ExitCode> {
    let result = match cmd {
        CassetteCommand::List { dir, json } => list(dir, json),
        CassetteCommand::Show { path, exchange } => show(&path, exchange),
        CassetteCommand::Scan { paths } => scan(&paths),
    };
    match result {
        Ok(true) => Ok(()),
        Ok(false) => Err(ExitCode::FAILURE),
        Err(e) => {
            errln!("kite: {}", error_line(&e.into()));
            Err(ExitCode::FAILURE)
        }
    }
}

fn list(dir: Option<PathBuf>, as_json: bool) -> Result<bool, Error> {
    let dir = dir.unwrap_or_else(|| {
        let tests = PathBuf::from("tests/cassettes");
        if tests.is_dir() {
            tests
        } else {
            PathBuf::from(".")
        }
    });
    let found = cassette::find(&dir)?;
    let mut all_read = true;
    for path in &found {
        let rec = match Recording::read(path) {
            Ok(Some(rec)) => rec,
            Ok(None) => continue,
            Err(e) => {
                // One broken cassette does not hide the others; it is marked, and the
                // exit status says something was wrong.
                all_read = false;
                if as_json {
                    outln!("{}", json!({"path": path, "error": e.to_string()}));
                } else {
                    outln!(
                        "{}  unreadable: {}",
                        printable(&path.display().to_string()),
                        printable(&e.to_string().replace('\n', " "))
                    );
                }
                continue;
            }
        };
        if as_json {
            let targets: Vec<String> = rec.exchanges.iter().map(target).collect();
            outln!(
                "{}",
                json!({"path": path, "exchanges": rec.exchanges.len(), "requests": targets})
            );
        } else {
            outln!(
                "{}  {} exchange{}  {}",
                printable(&path.display().to_string()),
                rec.exchanges.len(),
                if rec.exchanges.len() == 1 { "" } else { "s" },
                printable(&summary(&rec.exchanges))
            );
        }
    }
    if found.is_empty() && !as_json {
        errln!("kite: no cassettes under {}", dir.display());
    }
    Ok(all_read)
}

/// `POST /v1/chat/completions ×3, POST /v1/audio/transcriptions`
fn summary(exchanges: &[Exchange]) -> String {
    let mut groups: Vec<(String, usize)> = Vec::new();
    for t in exchanges.iter().map(target) {
        match groups.last_mut() {
            Some((last, n)) if *last == t => *n += 1,
            _ => groups.push((t, 1)),
        }
    }
    groups
        .into_iter()
        .map(|(t, n)| if n > 1 { format!("{t} ×{n}") } else { t })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The method and URL path of an exchange.
fn target(ex: &Exchange) -> String {
    let url = &ex.request.url;
    let rest = url.split_once("://").map_or(url.as_str(), |(_, r)| r);
    let path = rest.find('/').map_or("/", |i| &rest[i..]);
    format!("{} {path}", ex.request.method)
}

fn show(dir: &Path, exchange: Option<usize>) -> Result<bool, Error> {
    let rec = Recording::read(dir)?.ok_or_else(|| {
        Error::Config(format!(
            "{} holds no cassette (no {})",
            dir.display(),
            cassette::INDEX
        ))
    })?;
    let Some(n) = exchange else {
        for (i, ex) in rec.exchanges.iter().enumerate() {
            let body = cassette::read_body(dir, &ex.request.body)?;
            let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
            let response = cassette::read_body(dir, &ex.response.body)?;
            outln!(
                "{:>3}  {}  {}",
                i + 1,
                printable(&target(ex)),
                about(&request)
            );
            outln!(
                "     → {} {}, {} bytes ({}{})",
                ex.response.status,
                printable(
                    ex.response
                        .headers
                        .get("content-type")
                        .map_or("", String::as_str)
                ),
                response.len(),
                printable(&ex.response.body),
                if ex.response.timing.is_some() {
                    ", with timing"
                } else {
                    ""
                }
            );
        }
        return Ok(true);
    };
    let ex = rec.exchanges.get(n.wrapping_sub(1)).ok_or_else(|| {
        Error::Config(format!(
            "{} has {} exchanges; there is no exchange {n}",
            dir.display(),
            rec.exchanges.len()
        ))
    })?;
    outln!("{}", printable(&target(ex)));
    for (k, v) in &ex.request.headers {
        outln!("{}", printable(&format!("{k}: {v}")));
    }
    outln!();
    let body = cassette::read_body(dir, &ex.request.body)?;
    out!("{}", printable(&String::from_utf8_lossy(&body)));
    outln!("\n{}", ex.response.status);
    for (k, v) in &ex.response.headers {
        outln!("{}", printable(&format!("{k}: {v}")));
    }
    outln!();
    let body = cassette::read_body(dir, &ex.response.body)?;
    out!("{}", printable(&String::from_utf8_lossy(&body)));
    Ok(true)
}

/// A few words about a request: its model and what it holds.
fn about(request: &Value) -> String {
    let mut words = Vec::new();
    let fields = request.get("fields").unwrap_or(request);
    if let Some(model) = fields.get("model").and_then(Value::as_str) {
        words.push(model.to_owned());
    }
    for (key, what) in [
        ("messages", "message"),
        ("input", "input item"),
        ("tools", "tool"),
    ] {
        if let Some(list) = request.get(key).and_then(Value::as_array) {
            let n = list.len();
            words.push(format!("{n} {what}{}", if n == 1 { "" } else { "s" }));
        }
    }
    if let Some(files) = request.get("files").and_then(Value::as_object) {
        for f in files.values() {
            if let Some(name) = f.get("filename").and_then(Value::as_str) {
                words.push(format!("file {name}"));
            }
        }
    }
    printable(&words.join(", ")).into_owned()
}

fn scan(paths: &[PathBuf]) -> Result<bool, Error> {
    let mut count = 0;
    for path in paths {
        let scanned = cassette::scan_path(path)?;
        for (file, why) in &scanned.skipped {
            errln!(
                "kite: passed over {}: {why}",
                printable(&file.display().to_string())
            );
        }
        for (file, findings) in scanned.found {
            let text =
                String::from_utf8_lossy(&std::fs::read(&file).unwrap_or_default()).into_owned();
            for f in findings {
                let before = &text.as_bytes()[..f.offset.min(text.len())];
                let line = before.iter().filter(|b| **b == b'\n').count() + 1;
                let column = before.len()
                    - before
                        .iter()
                        .rposition(|b| *b == b'\n')
                        .map_or(0, |i| i + 1)
                    + 1;
                outln!(
                    "{}:{line}:{column}: looks like a key ({}…, {} characters)",
                    printable(&file.display().to_string()),
                    f.kind,
                    f.len
                );
                count += 1;
            }
        }
    }
    if count > 0 {
        let what = if count == 1 {
            "1 place looks like a key".to_owned()
        } else {
            format!("{count} places look like keys")
        };
        errln!("kite: {what}");
    } else {
        errln!("kite: nothing looks like a key");
    }
    Ok(count == 0)
}
