//! The real MCP servers tests talk to, as `scripts/setup.sh --tests` installs them: the npm
//! reference servers and the conformance suite under `node_modules`, the Python SDK in a
//! venv, in `~/.cache/kite/mcp-peers` (or `KITE_MCP_PEERS`), and kite's own small servers
//! in this crate's `mcp-peers/`.

use std::path::PathBuf;

/// Where the peers are installed. Panics, saying how to install them, when they are not.
pub fn peers() -> PathBuf {
    let dir = std::env::var_os("KITE_MCP_PEERS")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            let cache = std::env::var_os("XDG_CACHE_HOME")
                .map(PathBuf::from)
                .unwrap_or_else(|| {
                    PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join(".cache")
                });
            cache.join("kite/mcp-peers")
        });
    assert!(
        dir.join("node_modules/.bin/mcp-server-everything").exists(),
        "the MCP test servers are not installed in {}; run scripts/setup.sh --tests",
        dir.display()
    );
    dir
}

/// An npm server's command, e.g. `npm_bin("mcp-server-everything")`.
pub fn npm_bin(name: &str) -> PathBuf {
    peers().join("node_modules/.bin").join(name)
}

/// The Python with the `mcp` SDK.
pub fn python() -> PathBuf {
    peers().join("venv/bin/python")
}

/// A file of this crate's `mcp-peers/`: `py_server.py` (tools `add`, `echo`, `fail`,
/// `headers`, a resource and a prompt; stdio or Streamable HTTP) or `loopback.cjs` (keeps
/// Node servers on 127.0.0.1).
pub fn own(file: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("mcp-peers")
        .join(file)
}

/// The Agent Skills reference validator's command (`agentskills`, from PyPI's
/// `skills-ref`), installed beside the Python SDK.
pub fn agentskills() -> PathBuf {
    let bin = peers().join("venv/bin/agentskills");
    assert!(
        bin.exists(),
        "the Agent Skills reference validator is not installed at {}; run scripts/setup.sh --tests",
        bin.display()
    );
    bin
}
