//! The client the official MCP conformance suite drives: `kite-mcp-conformance URL`.
//!
//! The suite starts a mock server for each scenario (named in `MCP_CONFORMANCE_SCENARIO`)
//! and grades what this client does against it. The client does what an agent would: it
//! connects through a [`Hub`], lists the tools, and calls each one with arguments made from
//! its schema; elicitations are accepted with nothing filled in, so the schema's defaults
//! apply. A server that asks for OAuth is logged in to with no person: the authorization
//! URL is asked for and its redirect read ([`kite_mcp::Headless`]); the suite's context
//! (`MCP_CONFORMANCE_CONTEXT`) gives pre-registered clients, keys and identity tokens. It
//! exits 1 when anything fails, and within 25 s whatever happens.

use kite_mcp::{
    ElicitAnswer, Elicitation, Grant, Headless, Hub, HubOptions, MemoryTokens, OAuthConfig,
    OAuthOptions, ServerConfig,
};
use serde_json::{Map, Value};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

/// The Client ID Metadata Document the suite expects clients to name themselves by.
const SUITE_CLIENT_METADATA: &str = "https://conformance-test.local/client-metadata.json";

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    // The suite gives the server's URL last.
    let Some(url) = std::env::args().skip(1).last() else {
        eprintln!("usage: kite-mcp-conformance SERVER_URL");
        return ExitCode::from(2);
    };
    match tokio::time::timeout(Duration::from_secs(25), run(url)).await {
        Ok(code) => code,
        Err(_) => {
            eprintln!("gave up after 25 s");
            ExitCode::FAILURE
        }
    }
}

async fn run(url: String) -> ExitCode {
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    eprintln!("scenario {scenario:?} against {url}");
    let context: Option<Value> = std::env::var("MCP_CONFORMANCE_CONTEXT")
        .ok()
        .and_then(|c| serde_json::from_str(&c).ok());
    let accept = |_: String, _: Elicitation| async { ElicitAnswer::Accept(Map::new()) };
    let hub = Hub::with_options(HubOptions {
        elicitor: Some(Arc::new(accept)),
        oauth: OAuthOptions {
            store: Some(Arc::new(MemoryTokens::default())),
            authorizer: Some(Arc::new(Headless::new("http://localhost:3000/callback"))),
            client_metadata_url: Some(SUITE_CLIENT_METADATA.into()),
            context,
            ..OAuthOptions::default()
        },
        ..HubOptions::default()
    });
    let oauth = OAuthConfig {
        grant: match scenario.starts_with("auth/client-credentials") {
            true => Grant::ClientCredentials,
            false => Grant::AuthorizationCode,
        },
        ..OAuthConfig::default()
    };
    if let Err(e) = hub
        .add("server", ServerConfig::http(url).oauth(oauth))
        .await
    {
        eprintln!("{e}");
        return ExitCode::FAILURE;
    }
    let mut failed = false;
    let report = hub.servers().remove(0);
    let tools = hub.tools::<()>();
    for (exposed, remote) in &report.tools {
        let schema = tools
            .iter()
            .find(|t| &t.spec().name == exposed)
            .map(|t| t.spec().parameters.clone())
            .unwrap_or_default();
        let args = arguments_for(&schema);
        match hub.call("server", remote, args.clone()).await {
            Ok(r) => eprintln!(
                "{remote}({args}) -> {:?}{}",
                r.content,
                if r.is_error { " (isError)" } else { "" }
            ),
            Err(e) => {
                eprintln!("{remote}({args}): {e}");
                failed = true;
            }
        }
    }
    hub.shutdown();
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

/// Arguments that satisfy a flat object schema: its defaults, else numbers counting up,
/// `"kite"` for strings, `true` for booleans, the first member of an enum.
fn arguments_for(schema: &Value) -> Value {
    let mut args = Map::new();
    let mut n = 0;
    for (name, property) in schema["properties"].as_object().into_iter().flatten() {
        n += 1;
        let value = if let Some(default) = property.get("default") {
            default.clone()
        } else if let Some(first) = property["enum"].get(0) {
            first.clone()
        } else {
            match property["type"].as_str() {
                Some("number" | "integer") => Value::from(n),
                Some("boolean") => Value::Bool(true),
                Some("array") => Value::Array(Vec::new()),
                Some("object") => Value::Object(Map::new()),
                _ => Value::from("kite"),
            }
        };
        args.insert(name.clone(), value);
    }
    Value::Object(args)
}
