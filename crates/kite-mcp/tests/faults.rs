//! MCP over Streamable HTTP through every network fault (`kite_testkit::FaultProxy`), in
//! front of the Python SDK's server answering with event streams and with JSON. Each case
//! starts a server in a hub and calls a tool: it ends with the right answer or with a typed
//! error within the configured deadlines, never a hang or a wrong answer. The counts are
//! printed (`cargo test -p kite-mcp --test faults -- --nocapture`).

mod common;

use common::{Served, text};
use kite_mcp::{Hub, HubOptions, ServerConfig};
use kite_testkit::{Fault, FaultProxy};
use serde_json::json;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// The deadlines of every case: starting the server (several requests, each slowed by the
/// slow faults), and one call.
const STARTUP: Duration = Duration::from_secs(6);
const CALL: Duration = Duration::from_secs(4);
/// Starting and calling, with room for the slow faults.
const DEADLINE: Duration = Duration::from_secs(15);
/// Anything slower is a hang.
const LIMIT: Duration = Duration::from_secs(40);

#[derive(Clone, Debug)]
struct Case {
    mode: &'static str,
    fault: Fault,
    once: bool,
}

/// Starts the server through the proxy and adds 2 and 40.
async fn run(url: String, case: &Case) -> (Result<String, kite_mcp::Error>, usize, Duration) {
    let proxy = if case.once {
        FaultProxy::start_first(&url, case.fault.clone(), 1).await
    } else {
        FaultProxy::start(&url, case.fault.clone()).await
    };
    let hub = Hub::with_options(HubOptions {
        reconnect_initial: Duration::from_millis(100),
        ..HubOptions::default()
    });
    let started = Instant::now();
    let config = ServerConfig::http(proxy.url())
        .startup_timeout(STARTUP)
        .timeout(CALL);
    let result = match hub.add("s", config).await {
        Ok(()) => hub
            .call("s", "add", json!({"a": 2, "b": 40}))
            .await
            .map(|r| text(&r)),
        Err(e) => Err(e),
    };
    let took = started.elapsed();
    hub.shutdown();
    (result, proxy.connections(), took)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_streamable_http_server_through_every_fault() {
    let servers = [
        ("streamable-http", Served::python("streamable-http")),
        (
            "streamable-http-json",
            Served::python("streamable-http-json"),
        ),
    ];
    let mut cases = Vec::new();
    for (mode, _) in &servers {
        for fault in Fault::all(200) {
            for once in [false, true] {
                if once && matches!(fault, Fault::SelfSignedTls | Fault::Dns) {
                    continue;
                }
                cases.push(Case {
                    mode,
                    fault: fault.clone(),
                    once,
                });
            }
        }
    }
    for (_, served) in &servers {
        served.wait_ready();
    }
    let urls: BTreeMap<&str, String> = servers.iter().map(|(m, s)| (*m, s.url())).collect();

    let slots = std::sync::Arc::new(tokio::sync::Semaphore::new(8));
    let mut running = tokio::task::JoinSet::new();
    for (i, case) in cases.iter().cloned().enumerate() {
        let url = urls[case.mode].clone();
        let slots = slots.clone();
        running.spawn(async move {
            let _slot = slots.acquire().await.unwrap();
            (i, tokio::time::timeout(LIMIT, run(url, &case)).await)
        });
    }
    let (mut answered, mut after_retry) = (0, 0);
    let mut typed: BTreeMap<String, usize> = BTreeMap::new();
    let mut wrong = Vec::new();
    while let Some(done) = running.join_next().await {
        let (i, ended) = done.expect("a case panicked");
        let case = &cases[i];
        let label = format!(
            "{} through {:?}{}",
            case.mode,
            case.fault,
            if case.once { " once" } else { "" }
        );
        let must_fail =
            !case.once && !case.fault.only_slows() && case.fault != Fault::TruncatedChunked;
        match ended {
            Err(_) => wrong.push(format!("{label}: still going after {LIMIT:?}")),
            Ok((Ok(sum), connections, _)) => {
                if sum != "42" {
                    wrong.push(format!("{label}: answered {sum:?}"));
                } else if must_fail {
                    wrong.push(format!(
                        "{label}: answered although every connection was cut"
                    ));
                } else {
                    answered += 1;
                    after_retry += usize::from(connections > 1 && case.once);
                }
            }
            Ok((Err(e), _, took)) => {
                if case.fault.only_slows() {
                    wrong.push(format!("{label}: failed: {e}"));
                } else if took > DEADLINE {
                    wrong.push(format!("{label}: took {took:?} to fail: {e}"));
                } else {
                    let kind = format!("{e:?}");
                    let kind = kind.split([' ', '{', '(']).next().unwrap_or_default();
                    *typed.entry(kind.to_owned()).or_default() += 1;
                }
            }
        }
    }
    let failed: usize = typed.values().sum();
    println!(
        "MCP over Streamable HTTP: {} cases; {answered} answered ({after_retry} past a fault once); {failed} typed errors {typed:?}; {} wrong",
        cases.len(),
        wrong.len()
    );
    assert!(
        wrong.is_empty(),
        "{} cases went wrong:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
}
