//! The real requests of coding agents (testdata/clients: Claude Code and Codex, captured
//! unmodified), each decoded by the gateway's decoder for its API: every one is served,
//! and every call in its history names a tool the model is offered, as the model knows
//! it (else the upstream would be asked about a tool it never saw).

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

/// What is wrong with a decoded request: a call in its history of a tool not offered.
fn unknown_calls(name: &str, request: &kite_core::Request) -> Vec<String> {
    let offered: Vec<&str> = request.tools.iter().map(|t| t.name.as_str()).collect();
    request
        .messages
        .iter()
        .flat_map(|m| m.tool_calls())
        .filter(|c| !offered.contains(&c.name.as_str()))
        .map(|c| format!("{name}: a call of `{}`, not among {offered:?}", c.name))
        .collect()
}

#[test]
fn every_claude_code_request_is_served() {
    let mut failed = Vec::new();
    for (name, body) in bodies("claude-code") {
        match kite_wire::anthropic::serve::decode_request(&body) {
            Ok(c) => failed.extend(unknown_calls(&name, &c.request)),
            Err(e) => failed.push(format!("{name}: {e}")),
        }
    }
    assert!(failed.is_empty(), "{failed:#?}");
}

#[test]
fn every_codex_request_is_served() {
    let mut failed = Vec::new();
    for (name, body) in bodies("codex") {
        match kite_wire::openai_responses::serve::decode_request(&body) {
            Ok(c) => failed.extend(unknown_calls(&name, &c.request)),
            Err(e) => failed.push(format!("{name}: {e}")),
        }
    }
    assert!(failed.is_empty(), "{failed:#?}");
}

/// Claude Code's requests, sent on to Anthropic, keep what Anthropic reads of them as they
/// came: the system blocks and tools (cache breakpoints, deferred loading), the thinking,
/// effort and context settings, and each message's breakpoints.
#[test]
fn claude_codes_requests_reach_anthropic_as_they_came() {
    for (name, body) in bodies("claude-code") {
        let given: serde_json::Value = serde_json::from_slice(&body).unwrap();
        let request = kite_wire::anthropic::serve::decode_request(&body)
            .unwrap()
            .request;
        let sent: serde_json::Value =
            serde_json::from_slice(&kite_wire::anthropic::encode_request(&request, true).unwrap())
                .unwrap();
        assert_eq!(sent["tools"], given["tools"], "{name}");
        for key in [
            "thinking",
            "output_config",
            "context_management",
            "max_tokens",
        ] {
            assert_eq!(sent[key], given[key], "{name}: {key}");
        }
        let marks = |v: &serde_json::Value| v.to_string().matches("cache_control").count();
        assert_eq!(marks(&sent), marks(&given), "{name}: cache breakpoints");
    }
}
