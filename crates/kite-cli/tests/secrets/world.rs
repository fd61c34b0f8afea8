//! The sweep's world: the planted keys, a provider that answers every API kite speaks,
//! and the kite.toml every command runs with.

use kite_testkit::render::{Shape, sse};
use kite_testkit::{ReplayServer, Reply, mcp};
use serde_json::json;
use std::path::Path;

/// A key of each provider's shape, in the variable kite reads it from.
pub(crate) const PLANTED: &[(&str, &str)] = &[
    (
        "OPENAI_API_KEY",
        "sk-proj-PLANTEDoa7Kq2Zt9Xw4Vb1Nm8Lc3Jh6Gf0Ds5Ap2Qr7Tu4Yi9Oe1WzQ",
    ),
    (
        "ANTHROPIC_API_KEY",
        "sk-ant-api03-PLANTEDan4Rt8Yu2Io6Pa1Sd5Fg9Hj3Kl7Zx0Cv4Bn8Mq2We6-Rt5YuAA",
    ),
    ("MISTRAL_API_KEY", "PLANTEDmi3Xz7Cv1Bn5Mq9We2Rt6Yu0Ik"),
    (
        "OPENROUTER_API_KEY",
        "sk-or-v1-PLANTED0f3a9c1e7b5d2f8a4c6e0b9d3f7a1c5e8b2d4f6a0c3e7b9d1f5a8c2e4",
    ),
    (
        "GROQ_API_KEY",
        "gsk_PLANTEDgr5Tq8Wz2Xc6Vb0Nm4Lk9Jh3Gf7Ds1Ap5Qr8Tu2Yi6Oe0Wq3Zx",
    ),
    ("KITE_API_KEY", "kite-PLANTED-compatible-7Hq2Vb9Nm4Lc5Xz"),
    ("GATEWAY_KEY", "kg-PLANTED-gateway-8Qw3Er5Ty7Ui9Op1As"),
    ("ADMIN_KEY", "ka-PLANTED-admin-2Zx4Cv6Bn8Mq0Wl3EkRt"),
    ("MCP_TOKEN", "mcp-PLANTED-bearer-5Rt7Yu9Io1Pa3SdFg"),
];

/// An OTLP header that holds a token, as collectors ask.
pub(crate) const OTLP_TOKEN: &str = "otlp-PLANTED-token-1Qa2Ws3Ed4Rf5Tg";

/// A provider that answers every API kite speaks, and echoes the key it was sent in the
/// error when the question asks it to, as some providers do.
pub(crate) async fn provider() -> ReplayServer {
    ReplayServer::answering(|req| {
        let path = req.path.as_str();
        let sent = req
            .header("authorization")
            .or(req.header("x-api-key"))
            .unwrap_or_default()
            .to_owned();
        let mut answer = kite::Response::empty(kite::FinishReason::Stop);
        answer.message = kite::Message::assistant(if req.body_text().contains("repeat-the-key") {
            format!("The key you sent is {sent}.")
        } else {
            "Hello from the sweep.".to_owned()
        });
        if req.body_text().contains("say-the-key") {
            let error = json!({"error": {"message": format!("Incorrect API key provided: {sent}"),
                                         "type": "invalid_request_error"}});
            return Reply::json(401, error.to_string());
        }
        if path.ends_with("/models") {
            return Reply::json(
                200,
                r#"{"object":"list","data":[{"id":"m1","object":"model"}]}"#,
            );
        }
        if path.contains("/audio/transcriptions") {
            return Reply::json(200, r#"{"text":"hello from the sweep"}"#);
        }
        if req.method == "GET" && path.contains("/responses/") {
            return Reply::json(
                200,
                kite_testkit::fixture("openai/responses/text-basic/response.json"),
            );
        }
        if path.ends_with("/messages") {
            return Reply::sse(sse(Shape::Anthropic, &answer, 3));
        }
        if path.ends_with("/responses") {
            return Reply::sse(sse(Shape::Responses, &answer, 3));
        }
        Reply::sse(sse(Shape::Chat, &answer, 3))
    })
    .await
}

/// kite.toml: every provider at the loopback one, two MCP servers (one that writes down the
/// environment it was started with, one over HTTP with a token), and a gateway with a route
/// per provider, client and admin keys, and an MCP server's tools on one route.
pub(crate) fn config_text(root: &Path, upstream: &str) -> String {
    let dump = root.join("envdump.py");
    std::fs::write(
        &dump,
        "import json, os, runpy, sys\n\
         out, server = sys.argv[1], sys.argv[2]\n\
         with open(out, 'a') as f:\n    f.write(json.dumps(dict(os.environ)) + '\\n')\n\
         sys.argv = [server]\n\
         runpy.run_path(server, run_name='__main__')\n",
    )
    .unwrap();
    let mut toml = String::new();
    for provider in ["openai", "anthropic", "mistral", "openrouter", "groq"] {
        toml.push_str(&format!(
            "[providers.{provider}]\nbase_url = \"{upstream}/v1\"\n\n"
        ));
    }
    toml.push_str(&format!(
        "[mcp.servers.envdump]\ncommand = {python:?}\nargs = [{dump:?}, {out:?}, {server:?}]\n\n\
         [mcp.servers.web]\nurl = \"{upstream}/mcp\"\nbearer_token_env = \"MCP_TOKEN\"\n\
         startup_timeout_secs = 3\n\n\
         [serve]\nkeys = [\"${{GATEWAY_KEY}}\"]\nadmin_keys = [\"${{ADMIN_KEY}}\"]\n\n",
        python = mcp::python().display().to_string(),
        dump = dump.display().to_string(),
        out = root.join("child-env.jsonl").display().to_string(),
        server = mcp::own("py_server.py").display().to_string(),
    ));
    for (name, provider) in [
        ("chat", "openai"),
        ("responses", "openai-responses"),
        ("claude", "anthropic"),
        ("mistral", "mistral"),
        ("router", "openrouter"),
        ("groq", "groq"),
    ] {
        toml.push_str(&format!(
            "[[serve.routes]]\nname = \"{name}\"\nprovider = \"{provider}\"\nbase_url = \"{upstream}/v1\"\n"
        ));
        if name == "chat" {
            toml.push_str("mcp = [\"envdump\"]\n");
        }
        toml.push('\n');
    }
    toml
}

pub(crate) fn key(var: &str) -> &'static str {
    PLANTED.iter().find(|(v, _)| *v == var).unwrap().1
}
