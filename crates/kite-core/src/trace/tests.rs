use super::origin::host_and_port;
use super::*;

#[test]
fn only_the_host_and_port_of_a_url_are_kept() {
    for (url, host, port) in [
        (
            "https://api.openai.com/v1",
            Some("api.openai.com"),
            Some(443),
        ),
        (
            "http://127.0.0.1:8080/v1?key=sk-secret",
            Some("127.0.0.1"),
            Some(8080),
        ),
        (
            "https://user:pw@host.example:8443/x",
            Some("host.example"),
            Some(8443),
        ),
        ("http://[::1]:9000/v1", Some("::1"), Some(9000)),
        ("http://[::1]/v1", Some("::1"), Some(80)),
        ("not a url", None, None),
    ] {
        let (h, p) = host_and_port(url);
        assert_eq!((h.as_deref(), p), (host, port), "{url}");
    }
}

#[test]
fn errors_have_short_types() {
    let api = Error::Api(Box::new(crate::ApiError::new(Some(429), "slow down")));
    assert_eq!(error_type(&api), "429");
    assert_eq!(error_type(&Error::Cancelled), "cancelled");
    let t = Error::transport(crate::TransportErrorKind::IdleTimeout, "quiet");
    assert_eq!(error_type(&t), "idle_timeout");
}
