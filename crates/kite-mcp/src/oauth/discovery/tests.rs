//! The unit tests of the parent module.

use super::*;

#[test]
fn challenges_are_read_in_any_order_quoted_or_not() {
    let c = Challenge::parse(
        r#"Bearer error="insufficient_scope", scope="mcp:basic mcp:write", resource_metadata="http://h/.well-known/x""#,
    );
    assert_eq!(c.error.as_deref(), Some("insufficient_scope"));
    assert_eq!(c.scopes, ["mcp:basic", "mcp:write"]);
    assert_eq!(
        c.resource_metadata.as_deref(),
        Some("http://h/.well-known/x")
    );
    let c = Challenge::parse(r#"Bearer scope=read,error=invalid_token, realm="a\"b""#);
    assert_eq!(c.scopes, ["read"]);
    assert_eq!(c.error.as_deref(), Some("invalid_token"));
    assert_eq!(Challenge::parse("Bearer"), Challenge::default());
    let mixed = Challenge::parse(
        r#"Basic realm="x", Bearer resource_metadata="http://h/m", scope="a", Digest nonce="n""#,
    );
    assert_eq!(mixed.resource_metadata.as_deref(), Some("http://h/m"));
    assert_eq!(mixed.scopes, ["a"]);
    assert_eq!(Challenge::parse("Bearer ===,,\"é"), Challenge::default());
}

#[test]
fn metadata_is_looked_for_in_the_specifications_order() {
    let at = |u: &str| {
        metadata_urls(&Url::parse(u).unwrap())
            .iter()
            .map(Url::to_string)
            .collect::<Vec<_>>()
    };
    assert_eq!(
        at("https://a.example/tenant1"),
        [
            "https://a.example/.well-known/oauth-authorization-server/tenant1",
            "https://a.example/.well-known/openid-configuration/tenant1",
            "https://a.example/tenant1/.well-known/openid-configuration",
        ]
    );
    assert_eq!(
        at("https://a.example"),
        [
            "https://a.example/.well-known/oauth-authorization-server",
            "https://a.example/.well-known/openid-configuration",
        ]
    );
}

#[test]
fn a_resource_is_this_server_or_a_parent_of_it_on_its_origin() {
    let server = Url::parse("https://m.example/api/mcp").unwrap();
    for ok in [
        "https://m.example/api/mcp",
        "https://m.example/api",
        "https://m.example",
        "https://m.example/",
    ] {
        assert!(check_resource(&server, ok).is_ok(), "{ok}");
    }
    for bad in [
        "https://evil.example/api/mcp",
        "https://m.example/ap",
        "https://m.example/api/mcp/more",
        "http://m.example/api/mcp",
        "not a url",
    ] {
        assert!(check_resource(&server, bad).is_err(), "{bad}");
    }
}

#[test]
fn endpoints_off_the_issuers_host_are_refused() {
    let meta = ServerMetadata {
        issuer: "https://auth.example".into(),
        authorization_endpoint: Some("https://auth.example/authorize".into()),
        token_endpoint: Some("https://thief.example/token".into()),
        ..ServerMetadata::default()
    };
    let e = check_endpoints(&meta).unwrap_err().to_string();
    assert!(e.contains("thief.example"), "{e}");
    let plain = ServerMetadata {
        token_endpoint: Some("http://auth.example/token".into()),
        ..meta.clone()
    };
    assert!(check_endpoints(&plain).is_err());
}

#[test]
fn a_remote_server_cannot_send_discovery_to_this_machine_or_over_plain_http() {
    let remote = Url::parse("https://mcp.example.com/mcp").unwrap();
    let local = Url::parse("http://127.0.0.1:8931/mcp").unwrap();
    let at = |u: &str| Url::parse(u).unwrap();
    for allowed in [
        "https://mcp.example.com/.well-known/oauth-protected-resource",
        "https://auth.example.org/",
    ] {
        assert!(check_reach(&remote, &at(allowed)).is_ok(), "{allowed}");
    }
    for refused in [
        "http://127.0.0.1:6379/",
        "http://localhost:9090/admin",
        "https://127.0.0.1:8443/",
        "https://[::1]/",
        "http://auth.example.org/",
    ] {
        assert!(check_reach(&remote, &at(refused)).is_err(), "{refused}");
    }
    // A server on this machine (a test, a local tool) may name what is on it too, which it
    // could reach itself; elsewhere, only over TLS.
    assert!(check_reach(&local, &at("http://127.0.0.1:8931/.well-known/x")).is_ok());
    assert!(check_reach(&local, &at("http://localhost:9443/")).is_ok());
    assert!(check_reach(&local, &at("http://auth.example.org/")).is_err());
}
