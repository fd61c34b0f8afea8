//! A real OTLP/HTTP receiver on loopback (a small server on the `opentelemetry-proto`
//! package that decodes the protobuf), writing what it receives as JSON lines.

use kite_testkit::mcp;
use serde_json::Value;
use std::io::BufRead;
use std::path::Path;

/// The receiver, killed when dropped, and the file it writes.
pub(crate) struct Receiver {
    child: std::process::Child,
    port: u16,
    out: std::path::PathBuf,
}

impl Receiver {
    pub(crate) fn start(dir: &Path) -> Self {
        let out = dir.join("otlp.jsonl");
        let mut child = std::process::Command::new(mcp::python())
            .arg(mcp::own("otlp_receiver.py"))
            .arg(&out)
            .arg(dir.join("otlp-raw.jsonl"))
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect(
                "the OTLP receiver starts (scripts/setup.sh --tests installs opentelemetry-proto)",
            );
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let port = line.trim().parse().expect("the receiver's port");
        Self { child, port, out }
    }

    pub(crate) fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// What arrived: spans and metrics, one JSON object each.
    pub(crate) fn received(&self) -> Vec<Value> {
        std::fs::read_to_string(&self.out)
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
