//! Real MCP servers for the tests, as `scripts/setup.sh --tests` installs them (into
//! `~/.cache/kite/mcp-peers`, or `KITE_MCP_PEERS`).
#![allow(dead_code)]

use kite_mcp::{Hub, ServerConfig, ServerStatus};
use std::time::Duration;

pub(crate) fn everything() -> ServerConfig {
    let bin = kite_testkit::mcp::npm_bin("mcp-server-everything");
    ServerConfig::stdio(bin.to_string_lossy(), ["stdio"])
}

pub(crate) fn python() -> ServerConfig {
    let script = kite_testkit::mcp::own("py_server.py");
    ServerConfig::stdio(
        kite_testkit::mcp::python().to_string_lossy(),
        [script.to_string_lossy().into_owned()],
    )
}

/// A server over Streamable HTTP on 127.0.0.1, stopped when dropped.
pub(crate) struct Served {
    child: std::process::Child,
    pub port: u16,
    args: Vec<String>,
    pub program: String,
    env: Vec<(String, String)>,
}

impl Served {
    pub(crate) fn start(
        program: String,
        args: Vec<String>,
        env: Vec<(String, String)>,
        port: u16,
    ) -> Self {
        let mut cmd = std::process::Command::new(&program);
        cmd.args(&args)
            .envs(env.iter().cloned())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null());
        let child = cmd.spawn().unwrap();
        let served = Self {
            child,
            port,
            args,
            program,
            env,
        };
        served.wait_ready();
        served
    }

    /// server-everything's Streamable HTTP mode, kept on loopback by `loopback.cjs`.
    pub(crate) fn everything() -> Self {
        Self::everything_in("streamableHttp")
    }

    /// server-everything's 2024-11-05 HTTP+SSE mode (its stream at `/sse`).
    pub(crate) fn everything_sse() -> Self {
        Self::everything_in("sse")
    }

    /// server-everything in `mode`, kept on loopback by `loopback.cjs`.
    fn everything_in(mode: &str) -> Self {
        let port = free_port();
        let loopback = kite_testkit::mcp::own("loopback.cjs");
        let bin = kite_testkit::mcp::npm_bin("mcp-server-everything");
        Self::start(
            "node".into(),
            vec![
                "--require".into(),
                loopback.to_string_lossy().into_owned(),
                bin.to_string_lossy().into_owned(),
                mode.into(),
            ],
            vec![("PORT".into(), port.to_string())],
            port,
        )
    }

    /// The Python SDK server; `mode` is `streamable-http` or `streamable-http-json`.
    pub(crate) fn python(mode: &str) -> Self {
        Self::python_on(mode, free_port())
    }

    /// The Python SDK server on `port`.
    pub(crate) fn python_on(mode: &str, port: u16) -> Self {
        let script = kite_testkit::mcp::own("py_server.py");
        Self::start(
            kite_testkit::mcp::python().to_string_lossy().into_owned(),
            vec![
                script.to_string_lossy().into_owned(),
                mode.into(),
                port.to_string(),
            ],
            vec![],
            port,
        )
    }

    pub(crate) fn url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.port)
    }

    pub(crate) fn wait_ready(&self) {
        for _ in 0..300 {
            if std::net::TcpStream::connect(("127.0.0.1", self.port)).is_ok() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("{} did not listen on {}", self.program, self.port);
    }

    /// Stops the server and starts a new one on the same port: every session is forgotten.
    pub(crate) fn restart(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        while std::net::TcpStream::connect(("127.0.0.1", self.port)).is_ok() {
            std::thread::sleep(Duration::from_millis(20));
        }
        *self = Self::start(
            self.program.clone(),
            self.args.clone(),
            self.env.clone(),
            self.port,
        );
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The hub's log in the test output, filtered by `RUST_LOG`.
pub(crate) fn logs() {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_test_writer()
        .try_init();
}

pub(crate) fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

pub(crate) fn text(r: &kite_mcp::CallResult) -> String {
    r.content
        .iter()
        .filter_map(|b| b["text"].as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

pub(crate) fn pid(hub: &Hub, id: &str) -> u32 {
    let report = hub.servers().into_iter().find(|s| s.id == id).unwrap();
    match report.status {
        ServerStatus::Up { pid: Some(pid), .. } => pid,
        other => panic!("{id}: {other:?}"),
    }
}
