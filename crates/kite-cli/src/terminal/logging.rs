//! kite's log on stderr: kite's own warnings by default (`KITE_LOG` chooses more), plain
//! text unless stderr is a terminal, and never a secret kite knows of.
//!
//! Libraries' warnings are left out by default: an error is one line of kite's, and a
//! library may quote what a server sent back, credentials included. Whatever is logged
//! passes through [`Redact`], which hides provider keys and the tokens and header values
//! of configured MCP servers.

use crate::terminal::secrets::{redact, secret};
use std::io::{IsTerminal, Write};

/// The crates whose warnings show by default.
const OWN: &str = "kite=warn,kite_cli=warn,kite_agent=warn,kite_http=warn,kite_local=warn,kite_mcp=warn,kite_wire=warn,kite_core=warn";

/// The environment variables that hold keys.
const KEY_VARS: &[&str] = &[
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "MISTRAL_API_KEY",
    "OPENROUTER_API_KEY",
    "GROQ_API_KEY",
    "KITE_API_KEY",
];

/// The variables that hold OTLP endpoints (which may hold credentials).
const OTLP_ENDPOINT_VARS: &[&str] = &[
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
];

/// `%20` and the like decoded (bytes that do not make UTF-8 are kept as they were).
fn percent_decoded(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match (
            bytes[i],
            bytes.get(i + 1).copied().and_then(hex),
            bytes.get(i + 2).copied().and_then(hex),
        ) {
            (b'%', Some(h), Some(l)) => {
                out.push((h * 16 + l) as u8);
                i += 3;
            }
            (b, _, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8(out).unwrap_or_else(|_| text.to_owned())
}

/// The variables that hold OTLP export headers (tokens, often).
const OTLP_HEADER_VARS: &[&str] = &[
    "OTEL_EXPORTER_OTLP_HEADERS",
    "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
    "OTEL_EXPORTER_OTLP_METRICS_HEADERS",
];

/// Starts the log, and the export of traces and metrics when `OTEL_EXPORTER_OTLP_ENDPOINT`
/// asks for it (the caller shuts that down before exiting, which sends what is left).
///
/// `--verbose` (or a `KITE_LOG` naming `kite::gen_ai`) shows each model call, tool call and
/// run as it ends, with its duration, time to first chunk and usage (`verbose.rs`).
/// Whether `--verbose` was given.
static VERBOSE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Whether `--verbose` was given: what kite found and offered is said too.
pub(crate) fn verbose() -> bool {
    VERBOSE.load(std::sync::atomic::Ordering::Relaxed)
}

pub(crate) fn init(verbose: bool, serving: bool) -> Option<kite::otel::Telemetry> {
    VERBOSE.store(verbose, std::sync::atomic::Ordering::Relaxed);
    use tracing_subscriber::Layer as _;
    use tracing_subscriber::layer::SubscriberExt as _;
    use tracing_subscriber::util::SubscriberInitExt as _;
    for var in KEY_VARS {
        if let Ok(v) = std::env::var(var) {
            secret(&v);
        }
    }
    for var in OTLP_HEADER_VARS {
        if let Ok(v) = std::env::var(var) {
            for value in v
                .split(',')
                .filter_map(|h| h.split_once('=').map(|(_, v)| v))
            {
                // As given, and as sent (the variable's values are percent-encoded).
                secret(value);
                secret(&percent_decoded(value));
            }
        }
    }
    for var in OTLP_ENDPOINT_VARS {
        if let Ok(url) = std::env::var(var) {
            kite::mcp::url_secrets(&url).iter().for_each(|v| secret(v));
        }
    }
    let filter = match std::env::var("KITE_LOG") {
        Ok(spec) => tracing_subscriber::EnvFilter::try_new(spec).ok(),
        Err(_) => None,
    };
    let verbose = verbose
        || std::env::var("KITE_LOG")
            .is_ok_and(|v| v.contains("gen_ai") && !v.contains("gen_ai=off"));
    // `kite serve` logs each request (`kite::serve`) unless KITE_LOG says otherwise.
    let filter = filter.unwrap_or_else(|| match serving {
        true => tracing_subscriber::EnvFilter::new(format!("{OWN},kite::serve=info")),
        false => tracing_subscriber::EnvFilter::new(OWN),
    });
    // A gateway's log holds what clients chose (a model's name): no colours there, so that
    // every control character of theirs can be shown as an escape.
    let colours = std::io::stderr().is_terminal() && !serving;
    let log = tracing_subscriber::fmt::layer()
        .with_writer(move || Redact { colours })
        .with_ansi(colours)
        .with_target(false)
        .with_filter(filter);
    let calls = verbose.then(|| {
        let only = tracing_subscriber::filter::Targets::new()
            .with_target(kite::trace::TARGET, tracing::Level::INFO);
        crate::terminal::verbose::Verbose.with_filter(only)
    });
    // Every text of every span passes through the log's redaction (keys, MCP secrets,
    // client keys, as they are registered).
    let hide: kite::otel::Redact = std::sync::Arc::new(|text: &str| redact(text));
    let telemetry = match kite::otel::Telemetry::from_env("kite", Some(hide)) {
        Ok(t) => t,
        Err(e) => {
            crate::terminal::output::errln!("kite: {}; no traces are sent", redact(&e.to_string()));
            None
        }
    };
    tracing_subscriber::registry()
        .with(log)
        .with(calls)
        .with(telemetry.as_ref().map(|t| t.layer()))
        .init();
    telemetry
}

/// Writes log lines to stderr with secrets hidden, one line an event: a control character
/// within one (a newline in a client's model name, which would forge a line of the log) is
/// written as an escape, and so is the escape character itself unless the log has
/// `colours` of its own. Each event arrives in one write.
pub(crate) struct Redact {
    pub(crate) colours: bool,
}

/// `line` (an event, ending with its newline) with its other control characters escaped.
fn one_line(line: &str, colours: bool) -> String {
    let body = line.strip_suffix('\n').unwrap_or(line);
    let mut out = String::with_capacity(line.len());
    for c in body.chars() {
        match c {
            '\t' => out.push(c),
            '\u{1b}' if colours => out.push(c),
            c if c.is_control() => out.extend(c.escape_default()),
            c => out.push(c),
        }
    }
    if body.len() < line.len() {
        out.push('\n');
    }
    out
}

impl Write for Redact {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let text = one_line(&redact(&String::from_utf8_lossy(buf)), self.colours);
        // A closed stderr loses the log, not the command.
        let _ = std::io::stderr().write_all(text.as_bytes());
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        let _ = std::io::stderr().flush();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::one_line;

    #[test]
    fn an_event_stays_one_line_whatever_a_client_put_in_it() {
        let forged = "INFO request model=\"gpt\n2026-12-07 INFO admin logged in\r\u{1b}[2J\"\n";
        let shown = one_line(forged, false);
        assert_eq!(shown.matches('\n').count(), 1, "{shown}");
        assert!(shown.ends_with("\\u{1b}[2J\"\n"), "{shown}");
        assert!(shown.contains("gpt\\n2026"), "{shown}");
        assert_eq!(
            one_line("\u{1b}[32mINFO\u{1b}[0m ok\n", true),
            "\u{1b}[32mINFO\u{1b}[0m ok\n"
        );
    }
}
