//! kite's log on stderr: kite's own warnings by default (`KITE_LOG` chooses more), plain
//! text unless stderr is a terminal, and never a secret kite knows of.
//!
//! Libraries' warnings are left out by default: an error is one line of kite's, and a
//! library may quote what a server sent back, credentials included. Whatever is logged
//! passes through [`Redact`], which hides provider keys and the tokens and header values
//! of configured MCP servers.

use std::io::{IsTerminal, Write};
use std::sync::RwLock;

/// What must never be written: every value registered with [`secret`].
static SECRETS: RwLock<Vec<String>> = RwLock::new(Vec::new());

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

/// Starts the log.
pub(crate) fn init() {
    for var in KEY_VARS {
        if let Ok(v) = std::env::var(var) {
            secret(&v);
        }
    }
    let filter = tracing_subscriber::EnvFilter::try_from_env("KITE_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(OWN));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(|| Redact)
        .with_ansi(std::io::stderr().is_terminal())
        .with_target(false)
        .init();
}

/// Keeps `value` out of the log from now on (values shorter than 4 bytes are too common
/// to hide).
pub(crate) fn secret(value: &str) {
    let value = value.trim();
    if value.len() < 4 {
        return;
    }
    let mut all = SECRETS.write().unwrap_or_else(|e| e.into_inner());
    if !all.iter().any(|s| s == value) {
        all.push(value.to_owned());
        // The longest first, so a secret that holds another is hidden whole.
        all.sort_by_key(|s| std::cmp::Reverse(s.len()));
    }
}

/// `text` with every registered secret replaced.
pub(crate) fn redact(text: &str) -> String {
    kite::http::redact_all(text, &SECRETS.read().unwrap_or_else(|e| e.into_inner()))
}

/// Writes log lines to stderr with secrets hidden. Each event arrives in one write.
pub(crate) struct Redact;

impl Write for Redact {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let text = redact(&String::from_utf8_lossy(buf));
        // A closed stderr loses the log, not the command.
        let _ = std::io::stderr().write_all(text.as_bytes());
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        let _ = std::io::stderr().flush();
        Ok(())
    }
}
