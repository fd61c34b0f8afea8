//! Hostile authorization servers: each is refused with a clear error within a deadline,
//! and no code, secret or token is sent where it should not go.

use kite_mcp::{Headless, Hub, HubOptions, MemoryTokens, OAuthOptions, ServerConfig};
use kite_testkit::{RecordedRequest, ReplayServer, Reply};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

/// How a hostile server misbehaves.
#[derive(Clone, Copy)]
enum Fault {
    /// None: it is as it should be.
    Honest,
    /// Its metadata sends the token request to another host.
    TokenElsewhere,
    /// Its resource metadata describes another server.
    OtherResource,
    /// Its authorization server offers no PKCE with S256.
    NoS256,
    /// It sends the browser back somewhere else than kite.
    RedirectElsewhere,
    /// Its resource metadata is 1 MiB.
    Enormous,
    /// Its resource metadata is no JSON.
    NotJson,
    /// Its token endpoint never answers.
    StalledToken,
}

/// A server and its authorization server in one, misbehaving as `fault` says.
fn answer(fault: Fault, base: &str, r: &RecordedRequest) -> Reply {
    let path = r.path.split('?').next().unwrap_or_default();
    let json = |v: serde_json::Value| Reply::json(200, v.to_string());
    match path {
        "/mcp" => Reply::status(401).header(
            "www-authenticate",
            &format!(
                r#"Bearer error="invalid_token", resource_metadata="{base}/.well-known/oauth-protected-resource/mcp""#
            ),
        ),
        "/.well-known/oauth-protected-resource/mcp" => match fault {
            Fault::Enormous => Reply::json(200, vec![b' '; 1 << 20]),
            Fault::NotJson => Reply::json(200, "<html>hello</html>"),
            Fault::OtherResource => json(serde_json::json!({
                "resource": "https://evil.example/mcp",
                "authorization_servers": [base],
            })),
            _ => json(serde_json::json!({
                "resource": format!("{base}/mcp"),
                "authorization_servers": [base],
            })),
        },
        "/.well-known/oauth-authorization-server" => json(serde_json::json!({
            "issuer": base,
            "authorization_endpoint": format!("{base}/authorize"),
            "token_endpoint": match fault {
                Fault::TokenElsewhere => "http://127.0.0.2:9/token".to_owned(),
                _ => format!("{base}/token"),
            },
            "registration_endpoint": format!("{base}/register"),
            "code_challenge_methods_supported": match fault {
                Fault::NoS256 => serde_json::json!(["plain"]),
                _ => serde_json::json!(["S256"]),
            },
        })),
        "/register" => Reply::json(
            201,
            serde_json::json!({"client_id": "c1", "client_secret": "registered-secret-77"})
                .to_string(),
        ),
        "/authorize" => {
            let state = reqwest::Url::parse(&format!("{base}{}", r.path))
                .ok()
                .and_then(|u| {
                    u.query_pairs()
                        .find(|(k, _)| k == "state")
                        .map(|(_, v)| v.into_owned())
                })
                .unwrap_or_default();
            let back = match fault {
                Fault::RedirectElsewhere => "https://evil.example/callback",
                _ => "http://localhost:3000/callback",
            };
            Reply::status(302).header(
                "location",
                &format!("{back}?code=the-code-55&state={state}"),
            )
        }
        "/token" => match fault {
            Fault::StalledToken => Reply::json(200, "{}").stall_after(0),
            _ => Reply::json(200, r#"{"access_token":"tok-99","token_type":"Bearer"}"#),
        },
        _ => Reply::status(404),
    }
}

/// What connecting to a server misbehaving as `fault` says, and what it was asked.
async fn connect(fault: Fault) -> (String, Vec<RecordedRequest>, Duration) {
    let base = Arc::new(OnceLock::<String>::new());
    let seen = base.clone();
    let server = ReplayServer::answering(move |r| {
        answer(fault, seen.get().map(String::as_str).unwrap_or(""), r)
    })
    .await;
    base.set(server.url()).unwrap();
    let hub = Hub::with_options(HubOptions {
        oauth: OAuthOptions {
            store: Some(Arc::new(MemoryTokens::default())),
            authorizer: Some(Arc::new(Headless::new("http://localhost:3000/callback"))),
            ..OAuthOptions::default()
        },
        startup_timeout: Duration::from_secs(40),
        reconnect_initial: Duration::from_secs(600),
        ..HubOptions::default()
    });
    let started = Instant::now();
    let said = hub
        .add(
            "guarded",
            ServerConfig::http(format!("{}/mcp", server.url())),
        )
        .await
        .expect_err("a hostile server is refused")
        .to_string();
    let took = started.elapsed();
    hub.shutdown();
    (said, server.requests(), took)
}

fn asked(requests: &[RecordedRequest], path: &str) -> bool {
    requests.iter().any(|r| r.path.starts_with(path))
}

#[tokio::test]
async fn metadata_sending_the_token_request_elsewhere_is_refused() {
    let (said, requests, _) = connect(Fault::TokenElsewhere).await;
    assert!(said.contains("not on its issuer's host"), "{said}");
    assert!(
        !asked(&requests, "/authorize"),
        "nothing is approved for it"
    );
}

#[tokio::test]
async fn metadata_for_another_resource_is_refused_before_any_login() {
    let (said, requests, _) = connect(Fault::OtherResource).await;
    assert!(said.contains("not this server"), "{said}");
    assert!(!asked(&requests, "/authorize") && !asked(&requests, "/register"));
}

#[tokio::test]
async fn an_authorization_server_without_s256_is_refused() {
    let (said, requests, _) = connect(Fault::NoS256).await;
    assert!(said.contains("S256"), "{said}");
    assert!(!asked(&requests, "/authorize"));
}

#[tokio::test]
async fn a_redirect_anywhere_but_back_to_kite_is_refused_and_its_code_not_used() {
    let (said, requests, _) = connect(Fault::RedirectElsewhere).await;
    assert!(said.contains("not back to kite"), "{said}");
    assert!(!asked(&requests, "/token"), "the code is not exchanged");
}

#[tokio::test]
async fn enormous_or_unreadable_metadata_is_refused() {
    let (said, _, _) = connect(Fault::Enormous).await;
    assert!(said.contains("over 256 KiB"), "{said}");
    let (said, _, _) = connect(Fault::NotJson).await;
    assert!(said.contains("not the metadata expected"), "{said}");
}

#[tokio::test]
async fn a_token_endpoint_that_stalls_is_given_up_on_in_time() {
    let (said, requests, took) = connect(Fault::StalledToken).await;
    assert!(said.contains("did not answer within"), "{said}");
    assert!(took < Duration::from_secs(30), "{took:?}");
    // What was sent to it came with the registered secret, to it alone.
    let token = requests.iter().find(|r| r.path == "/token").unwrap();
    assert!(
        token
            .header("authorization")
            .is_some_and(|a| a.starts_with("Basic "))
    );
    for r in requests.iter().filter(|r| r.path != "/token") {
        let shown = format!("{:?} {}", r.headers, r.body_text());
        assert!(
            !shown.contains("registered-secret-77"),
            "{}: {shown}",
            r.path
        );
    }
}

/// A server that takes only the bearer `accepted`, speaking just enough MCP to be
/// connected to, and refreshing `r-old` into `accepted` at its token endpoint.
fn kind_server(accepted: &str, base: &str, r: &RecordedRequest) -> Reply {
    let path = r.path.split('?').next().unwrap_or_default();
    match path {
        "/mcp" if r.header("authorization") != Some(&format!("Bearer {accepted}")) => {
            answer(Fault::Honest, base, r)
        }
        "/mcp" if r.method == "POST" => {
            let asked: serde_json::Value = serde_json::from_slice(&r.body).unwrap_or_default();
            let result = match asked["method"].as_str() {
                Some("initialize") => serde_json::json!({
                    "protocolVersion": "2025-06-18",
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "kind", "version": "1"},
                }),
                Some("tools/list") => serde_json::json!({"tools": []}),
                _ => return Reply::status(202),
            };
            Reply::json(
                200,
                serde_json::json!({"jsonrpc": "2.0", "id": asked["id"], "result": result})
                    .to_string(),
            )
        }
        "/mcp" => Reply::status(405),
        "/token" if r.body_text().contains("refresh_token=r-old") => Reply::json(
            200,
            format!(
                r#"{{"access_token":"{accepted}","token_type":"Bearer","expires_in":3600,"refresh_token":"r-new"}}"#
            ),
        ),
        "/token" if r.body_text().contains("refresh_token=r-down") => Reply::status(503),
        "/token" => Reply::json(400, r#"{"error":"invalid_grant"}"#),
        "/basic" => Reply::status(401).header("www-authenticate", r#"Basic realm="x""#),
        _ => answer(Fault::Honest, base, r),
    }
}

/// Connects with no person to approve, the login `kept` stored; what it says, what the
/// server was asked, and what is kept after.
async fn with_kept(
    kept: impl Fn(&str) -> kite_mcp::Saved,
) -> (
    Result<(), String>,
    Vec<RecordedRequest>,
    Option<kite_mcp::Saved>,
) {
    let base = Arc::new(OnceLock::<String>::new());
    let seen = base.clone();
    let server = ReplayServer::answering(move |r| {
        kind_server("new-tok", seen.get().map(String::as_str).unwrap_or(""), r)
    })
    .await;
    base.set(server.url()).unwrap();
    let url = format!("{}/mcp", server.url());
    let store = Arc::new(MemoryTokens::default());
    kite_mcp::TokenStore::save(store.as_ref(), "guarded", &kept(&server.url())).unwrap();
    let hub = Hub::with_options(HubOptions {
        oauth: OAuthOptions {
            store: Some(store.clone()),
            ..OAuthOptions::default()
        },
        reconnect_initial: Duration::from_secs(600),
        ..HubOptions::default()
    });
    let added = hub
        .add("guarded", ServerConfig::http(url))
        .await
        .map_err(|e| e.to_string());
    hub.shutdown();
    let after = kite_mcp::TokenStore::load(store.as_ref(), "guarded");
    (added, server.requests(), after)
}

fn login(base: &str, access: &str, refresh: Option<&str>, expires_in_ms: i64) -> kite_mcp::Saved {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    kite_mcp::Saved {
        server_url: format!("{base}/mcp"),
        issuer: Some(base.to_owned()),
        token_endpoint: Some(format!("{base}/token")),
        resource: Some(format!("{base}/mcp")),
        client_id: Some("c1".into()),
        auth_method: Some("none".into()),
        access_token: Some(access.into()),
        refresh_token: refresh.map(str::to_owned),
        expires_at_ms: Some(now + expires_in_ms),
        ..kite_mcp::Saved::default()
    }
}

fn sent_bearer(requests: &[RecordedRequest], token: &str) -> bool {
    let bearer = format!("Bearer {token}");
    requests
        .iter()
        .any(|r| r.header("authorization") == Some(bearer.as_str()))
}

#[tokio::test]
async fn a_token_about_to_expire_is_refreshed_before_it_is_sent() {
    let (added, requests, after) =
        with_kept(|base| login(base, "old-tok", Some("r-old"), 30_000)).await;
    added.unwrap();
    assert!(
        !sent_bearer(&requests, "old-tok"),
        "the old token is not sent"
    );
    let refresh = requests.iter().find(|r| r.path == "/token").unwrap();
    assert!(
        refresh.body_text().contains("resource="),
        "{}",
        refresh.body_text()
    );
    let after = after.unwrap();
    assert_eq!(after.access_token.as_deref(), Some("new-tok"));
    assert_eq!(after.refresh_token.as_deref(), Some("r-new"));
}

#[tokio::test]
async fn a_token_refused_is_refreshed_and_the_request_sent_again() {
    let (added, requests, after) =
        with_kept(|base| login(base, "old-tok", Some("r-old"), 3_600_000)).await;
    added.unwrap();
    assert!(sent_bearer(&requests, "old-tok") && sent_bearer(&requests, "new-tok"));
    assert_eq!(after.unwrap().access_token.as_deref(), Some("new-tok"));
}

#[tokio::test]
async fn a_token_refused_with_nothing_to_renew_it_asks_for_a_login_and_is_marked() {
    let (added, requests, after) = with_kept(|base| login(base, "old-tok", None, 3_600_000)).await;
    let said = added.unwrap_err();
    assert!(said.contains("run `kite mcp login guarded`"), "{said}");
    assert!(!said.contains("old-tok"), "{said}");
    assert!(!asked(&requests, "/authorize"), "no person to approve");
    assert!(
        after.unwrap().refused,
        "kept as refused, for `kite mcp list`"
    );
    // Sent only to the server it is for.
    for r in requests.iter().filter(|r| r.path != "/mcp") {
        assert!(r.header("authorization").is_none(), "{}", r.path);
    }
}

#[tokio::test]
async fn a_refresh_the_server_fails_keeps_the_login_and_one_it_refuses_drops_it() {
    let (added, _, after) = with_kept(|base| login(base, "old-tok", Some("r-down"), 30_000)).await;
    assert!(added.is_err());
    let after = after.unwrap();
    assert_eq!(
        after.refresh_token.as_deref(),
        Some("r-down"),
        "kept for later"
    );
    let (added, _, after) = with_kept(|base| login(base, "old-tok", Some("r-gone"), 30_000)).await;
    assert!(added.unwrap_err().contains("kite mcp login guarded"));
    assert_eq!(after.unwrap().refresh_token, None, "refused: dropped");
}

#[tokio::test]
async fn a_challenge_of_another_scheme_is_said_and_no_login_begun() {
    let server = ReplayServer::answering(|r| kind_server("x", "", r)).await;
    let hub = Hub::with_options(HubOptions {
        oauth: OAuthOptions {
            authorizer: Some(Arc::new(Headless::new("http://localhost:3000/callback"))),
            ..OAuthOptions::default()
        },
        reconnect_initial: Duration::from_secs(600),
        ..HubOptions::default()
    });
    let said = hub
        .add(
            "basic",
            ServerConfig::http(format!("{}/basic", server.url())),
        )
        .await
        .unwrap_err()
        .to_string();
    assert!(said.contains("asks for \"Basic\" authentication"), "{said}");
    assert!(server.requests().iter().all(|r| r.path == "/basic"));
    hub.shutdown();
}

#[tokio::test]
async fn no_login_is_made_over_plain_http_to_another_machine() {
    let hub = Hub::with_options(HubOptions {
        oauth: OAuthOptions {
            authorizer: Some(Arc::new(Headless::new("http://localhost:3000/callback"))),
            ..OAuthOptions::default()
        },
        reconnect_initial: Duration::from_secs(600),
        startup_timeout: Duration::from_secs(5),
        ..HubOptions::default()
    });
    // A server on this machine that says it is elsewhere: its challenge points to metadata
    // over plain HTTP on another host, which is never asked.
    let server = ReplayServer::answering(|_| {
        Reply::status(401).header(
            "www-authenticate",
            r#"Bearer resource_metadata="http://192.0.2.1/.well-known/oauth-protected-resource""#,
        )
    })
    .await;
    let said = hub
        .add("plain", ServerConfig::http(format!("{}/mcp", server.url())))
        .await
        .unwrap_err()
        .to_string();
    assert!(said.contains("nor https: refused"), "{said}");
    hub.shutdown();
}

#[tokio::test]
async fn a_401_with_no_challenge_is_looked_into_at_the_well_known_places() {
    let base = Arc::new(OnceLock::<String>::new());
    let seen = base.clone();
    let server = ReplayServer::answering(move |r| match r.path.as_str() {
        "/mcp" => Reply::status(401),
        _ => answer(
            Fault::Honest,
            seen.get().map(String::as_str).unwrap_or(""),
            r,
        ),
    })
    .await;
    base.set(server.url()).unwrap();
    let hub = Hub::with_options(HubOptions {
        reconnect_initial: Duration::from_secs(600),
        ..HubOptions::default()
    });
    let said = hub
        .add("quiet", ServerConfig::http(format!("{}/mcp", server.url())))
        .await
        .unwrap_err()
        .to_string();
    assert!(said.contains("run `kite mcp login quiet`"), "{said}");
    assert!(asked(
        &server.requests(),
        "/.well-known/oauth-protected-resource/mcp"
    ));
    hub.shutdown();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_processes_refreshing_one_login_at_once_both_go_on() {
    let base = Arc::new(OnceLock::<String>::new());
    let seen = base.clone();
    // Each refresh token is taken once, as rotating servers do.
    let taken = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let server = ReplayServer::answering(move |r| {
        let at = seen.get().map(String::as_str).unwrap_or("");
        if r.path == "/token" && r.body_text().contains("refresh_token=r-old") {
            if taken.swap(true, std::sync::atomic::Ordering::SeqCst) {
                return Reply::json(400, r#"{"error":"invalid_grant"}"#);
            }
            // Slow enough for the other to ask meanwhile.
            std::thread::sleep(Duration::from_millis(300));
        }
        kind_server("new-tok", at, r)
    })
    .await;
    base.set(server.url()).unwrap();
    let dir = std::env::temp_dir().join(format!("kite-two-logins-{}", std::process::id()));
    let store = Arc::new(kite_mcp::FileTokens::new(&dir));
    let kept = login(&server.url(), "old-tok", Some("r-old"), 30_000);
    kite_mcp::TokenStore::save(store.as_ref(), "guarded", &kept).unwrap();
    let process = || {
        Hub::with_options(HubOptions {
            oauth: OAuthOptions {
                store: Some(store.clone()),
                ..OAuthOptions::default()
            },
            reconnect_initial: Duration::from_secs(600),
            ..HubOptions::default()
        })
    };
    let (a, b) = (process(), process());
    let url = format!("{}/mcp", server.url());
    let (ra, rb) = tokio::join!(
        a.add("guarded", ServerConfig::http(url.clone())),
        b.add("guarded", ServerConfig::http(url.clone())),
    );
    a.shutdown();
    b.shutdown();
    ra.unwrap();
    rb.unwrap();
    let after = kite_mcp::TokenStore::load(store.as_ref(), "guarded").unwrap();
    assert_eq!(after.access_token.as_deref(), Some("new-tok"));
    assert_eq!(
        after.refresh_token.as_deref(),
        Some("r-new"),
        "the login is kept"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
