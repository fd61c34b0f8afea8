//! What a session must never show: the credentials of an HTTP server (header values, its
//! bearer token, secrets in its URL) and the secret-looking `env` values of a stdio server,
//! gathered once per session and hidden from its errors and its stderr.

use crate::child;
use crate::config::{ServerConfig, TransportConfig};
use kite_http::redact_all as redact;
use std::time::Duration;

/// `; its stderr ended with: …` for a stdio server, with no secret in it.
pub(crate) async fn stderr_end(stderr: Option<child::StderrTail>, secrets: Vec<String>) -> String {
    match stderr {
        Some(t) => redact(&t.describe(Duration::from_millis(500)).await, &secrets),
        None => String::new(),
    }
}

/// The bearer token an HTTP server is sent, if any: given, or read from its variable.
pub(crate) fn bearer_token(config: &ServerConfig) -> Result<Option<String>, String> {
    match &config.transport {
        TransportConfig::Http {
            bearer_token_env: Some(var),
            ..
        } => std::env::var(var)
            .map(Some)
            .map_err(|_| format!("{var} (its bearer token) is not set")),
        TransportConfig::Http { bearer_token, .. } => Ok(bearer_token.clone()),
        TransportConfig::Stdio { .. } => Ok(None),
    }
}

/// What a session gives its server that must never be shown: header values and the bearer
/// token, or the values of a stdio server's `env` table (a server that prints its
/// configuration on the way down must not print them into kite's errors).
pub(crate) fn secrets_of(config: &ServerConfig) -> Vec<String> {
    let mut out: Vec<String> = match &config.transport {
        TransportConfig::Http { headers, url, .. } => {
            let mut out: Vec<String> = headers.values().cloned().collect();
            out.extend(bearer_token(config).ok().flatten());
            out.extend(url_secrets(url));
            out
        }
        TransportConfig::Stdio { env, .. } => env
            .iter()
            .filter_map(|(k, v)| Some((k, child::expand(v).ok()?)))
            .filter(|(k, v)| child::looks_secret(k, v))
            .map(|(_, v)| v)
            .collect(),
    };
    // The longest first, so that a secret holding another is hidden whole.
    out.sort_by_key(|s| std::cmp::Reverse(s.len()));
    out.retain(|s| s.len() >= 4);
    out
}

/// What a server's URL carries that must not be shown: a password, and query values that
/// look secret (`?access_token=…`).
pub fn url_secrets(url: &str) -> Vec<String> {
    let Ok(u) = reqwest::Url::parse(url) else {
        return Vec::new();
    };
    let mut out: Vec<String> = u.password().map(str::to_owned).into_iter().collect();
    out.extend(
        u.query_pairs()
            .filter(|(k, v)| child::looks_secret(k, v))
            .map(|(_, v)| v.into_owned()),
    );
    out
}
