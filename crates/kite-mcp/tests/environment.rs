//! What a stdio server sees of kite's environment: the allow-list and what its table
//! forwards. In a test binary of its own, since it sets variables of the process.

mod common;

use common::{everything, text};
use kite_mcp::{Hub, HubOptions};
use serde_json::json;
use std::time::Duration;

#[tokio::test]
async fn a_stdio_server_sees_only_the_allow_list_and_what_its_table_forwards() {
    // SAFETY: this binary's only test sets them before it starts any thread of its own
    // (the runtime's workers read no variables).
    unsafe {
        std::env::set_var(
            "OPENAI_API_KEY",
            "sk-should-never-reach-a-server-0123456789",
        );
        std::env::set_var("KITE_TEST_FORWARDED", "forwarded-value");
    }
    let config = everything()
        .env("GIVEN", "given-value")
        .env("FROM_KITE", "${KITE_TEST_FORWARDED}");
    let hub = Hub::new();
    hub.add("everything", config).await.unwrap();
    let r = hub.call("everything", "get-env", json!({})).await.unwrap();
    let env: serde_json::Map<String, serde_json::Value> =
        serde_json::from_str(&text(&r)).expect("get-env answers with the environment as JSON");
    assert!(!env.contains_key("OPENAI_API_KEY"), "{env:?}");
    assert!(!text(&r).contains("sk-should-never-reach"));
    assert_eq!(env["GIVEN"], "given-value");
    assert_eq!(env["FROM_KITE"], "forwarded-value");
    assert!(
        env.contains_key("PATH") && env.contains_key("HOME"),
        "{env:?}"
    );
    for name in env.keys() {
        assert!(
            kite_mcp::INHERITED.contains(&name.as_str())
                || name.starts_with("LC_")
                || ["GIVEN", "FROM_KITE"].contains(&name.as_str())
                // What a server's own runtime sets for itself (Node's npm launcher).
                || name.starts_with("npm_")
                || name == "NODE"
                || name == "INIT_CWD"
                || name == "COLOR"
                || name == "EDITOR",
            "{name} reached the server"
        );
    }
    hub.shutdown();

    // A table that forwards a variable kite does not have is refused with its name.
    let missing = everything().env("T", "${KITE_TEST_SURELY_UNSET}");
    let e = Hub::with_options(HubOptions {
        startup_timeout: Duration::from_secs(10),
        ..HubOptions::default()
    })
    .add("m", missing)
    .await
    .unwrap_err();
    assert!(e.to_string().contains("KITE_TEST_SURELY_UNSET"), "{e}");
}
