//! The real requests of coding agents (testdata/clients: Claude Code and Codex, captured
//! unmodified), each decoded by the gateway's decoder for its API.

use std::path::PathBuf;

fn bodies(client: &str) -> Vec<(String, Vec<u8>)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../testdata/clients")
        .join(client);
    let mut out: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .map(|p| {
            (
                p.file_name().unwrap().to_string_lossy().into_owned(),
                std::fs::read(&p).unwrap(),
            )
        })
        .collect();
    out.sort();
    assert!(!out.is_empty(), "no requests in {}", dir.display());
    out
}

#[test]
fn every_claude_code_request_is_served() {
    let mut failed = Vec::new();
    for (name, body) in bodies("claude-code") {
        if let Err(e) = kite_wire::anthropic::serve::decode_request(&body) {
            failed.push(format!("{name}: {e}"));
        }
    }
    assert!(failed.is_empty(), "{failed:#?}");
}

#[test]
fn every_codex_request_is_served() {
    let mut failed = Vec::new();
    for (name, body) in bodies("codex") {
        if let Err(e) = kite_wire::openai_responses::serve::decode_request(&body) {
            failed.push(format!("{name}: {e}"));
        }
    }
    assert!(failed.is_empty(), "{failed:#?}");
}
