//! Servers added with the tools a program kept from an earlier run: offered at once while
//! the server starts in the background, replaced by the server's own list once it is up,
//! retired when it cannot start.

mod common;

use common::python;
use kite_agent::ToolSet;
use kite_mcp::{Hub, HubOptions, RemoteTool, ServerConfig, ServerStatus};
use serde_json::json;
use std::time::Duration;

fn kept(name: &str) -> RemoteTool {
    RemoteTool {
        name: name.into(),
        description: "kept from before".into(),
        input_schema: json!({"type": "object"}),
    }
}

/// Waits (at most 30 s) until `done` holds of the hub.
async fn until(hub: &Hub, done: impl Fn(&Hub) -> bool) {
    for _ in 0..300 {
        if done(hub) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("never: {:?}", hub.servers());
}

#[tokio::test]
async fn kept_tools_are_offered_at_once_then_the_servers_own_replace_them() {
    let hub = Hub::new();
    let set: ToolSet<()> = ToolSet::new();
    hub.bind(&set);
    hub.add_known("py", python(), vec![kept("add"), kept("gone_since")]);
    // At once, before the server is up: the kept tools, and the server says it is starting.
    assert_eq!(hub.servers()[0].status, ServerStatus::Starting);
    let mut names = set.names();
    names.sort();
    assert_eq!(names, ["add", "gone_since"]);
    assert!(
        hub.listed("py").is_none(),
        "nothing is listed until the server says so"
    );
    // A call waits for the server, and gets its real answer.
    let sum = hub
        .call("py", "add", json!({"a": 2, "b": 40}))
        .await
        .unwrap();
    assert!(sum.content[0]["text"].to_string().contains("42"), "{sum:?}");
    // The server's own list replaces the kept one.
    until(&hub, |h| {
        matches!(h.servers()[0].status, ServerStatus::Up { .. })
    })
    .await;
    let names = set.names();
    assert!(names.contains(&"echo".to_owned()), "{names:?}");
    assert!(!names.contains(&"gone_since".to_owned()), "{names:?}");
    let listed = hub.listed("py").unwrap();
    assert!(
        listed
            .iter()
            .any(|t| t.name == "add" && t.description != "kept from before")
    );
    hub.close().await;
}

#[tokio::test]
async fn kept_tools_of_a_server_that_cannot_start_are_retired() {
    let hub = Hub::with_options(HubOptions {
        reconnect_initial: Duration::from_secs(60),
        ..HubOptions::default()
    });
    let set: ToolSet<()> = ToolSet::new();
    hub.bind(&set);
    hub.add_known(
        "broken",
        ServerConfig::stdio("/nonexistent/mcp-server", Vec::<String>::new()),
        vec![kept("add")],
    );
    assert_eq!(set.names(), ["add"]);
    until(&hub, |h| {
        matches!(h.servers()[0].status, ServerStatus::Down { .. })
    })
    .await;
    assert!(set.names().is_empty(), "{:?}", set.names());
    // A call says why, as for any server that is down.
    let e = hub.call("broken", "add", json!({})).await.unwrap_err();
    assert!(e.to_string().contains("broken"), "{e}");
    hub.close().await;
}
