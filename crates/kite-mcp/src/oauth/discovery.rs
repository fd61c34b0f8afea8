//! Finding who guards a server: its challenge (`WWW-Authenticate`), its protected-resource
//! metadata (RFC 9728), then its authorization server's metadata (RFC 8414 or OpenID
//! Connect discovery), each in the order the specification gives; for servers of
//! 2025-03-26 without resource metadata, the authorization server at the server's origin
//! and, without its metadata, the default endpoints there.

use super::OAuthError;
use reqwest::Url;
use serde::Deserialize;
use std::time::Duration;

/// How long one metadata document may take to come.
const FETCH: Duration = Duration::from_secs(10);
/// The largest metadata document read.
const MAX_DOCUMENT: usize = 256 * 1024;

/// What a 401 or 403 said: `Bearer` and its parameters.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Challenge {
    pub error: Option<String>,
    pub scopes: Vec<String>,
    pub resource_metadata: Option<String>,
}

impl Challenge {
    /// Reads a `WWW-Authenticate` header: its parameters, in any order, quoted or not.
    pub(crate) fn parse(header: &str) -> Self {
        let mut out = Self::default();
        // The Bearer challenge among those given: its parameters, up to the next scheme.
        let lower = header.to_ascii_lowercase();
        let at = lower.match_indices("bearer").find(|(i, _)| {
            let before = lower[..*i].trim_end();
            let after = lower[i + 6..].chars().next();
            (before.is_empty() || before.ends_with(',')) && after.is_none_or(|c| c == ' ')
        });
        let rest = match at {
            Some((i, _)) => header[i + 6..].trim_start(),
            None => header.trim(),
        };
        let mut chars = rest.char_indices().peekable();
        while let Some(&(start, _)) = chars.peek() {
            // name
            let mut end = start;
            while let Some(&(i, c)) = chars.peek() {
                if c == '=' || c == ',' {
                    break;
                }
                end = i + c.len_utf8();
                chars.next();
            }
            let name = rest[start..end].trim().to_ascii_lowercase();
            // `Scheme param=...`: the next challenge begins.
            if name.contains(' ') {
                break;
            }
            if chars.next_if(|&(_, c)| c == '=').is_none() {
                chars.next();
                continue;
            }
            while chars.next_if(|&(_, c)| c == ' ').is_some() {}
            let mut value = String::new();
            if chars.next_if(|&(_, c)| c == '"').is_some() {
                while let Some((_, c)) = chars.next() {
                    match c {
                        '\\' => value.extend(chars.next().map(|(_, c)| c)),
                        '"' => break,
                        c => value.push(c),
                    }
                }
                while chars.next_if(|&(_, c)| c != ',').is_some() {}
            } else {
                while let Some((_, c)) = chars.next_if(|&(_, c)| c != ',') {
                    value.push(c);
                }
                value = value.trim().to_owned();
            }
            chars.next_if(|&(_, c)| c == ',');
            while chars.next_if(|&(_, c)| c == ' ').is_some() {}
            match name.as_str() {
                "error" => out.error = Some(value),
                "scope" => out.scopes = value.split_whitespace().map(str::to_owned).collect(),
                "resource_metadata" => out.resource_metadata = Some(value),
                _ => {}
            }
        }
        out
    }
}

/// A server's protected-resource metadata (RFC 9728).
#[derive(Clone, Debug, Default, Deserialize)]
pub(crate) struct ResourceMetadata {
    pub resource: String,
    #[serde(default)]
    pub authorization_servers: Vec<String>,
    #[serde(default)]
    pub scopes_supported: Vec<String>,
}

/// An authorization server's metadata (RFC 8414), what kite uses of it.
#[derive(Clone, Debug, Default, Deserialize)]
pub(crate) struct ServerMetadata {
    #[serde(default)]
    pub issuer: String,
    pub authorization_endpoint: Option<String>,
    pub token_endpoint: Option<String>,
    pub registration_endpoint: Option<String>,
    #[serde(default)]
    pub scopes_supported: Vec<String>,
    /// `None` when the server does not say.
    pub code_challenge_methods_supported: Option<Vec<String>>,
    #[serde(default)]
    pub token_endpoint_auth_methods_supported: Vec<String>,
    #[serde(default)]
    pub client_id_metadata_document_supported: bool,
    #[serde(default)]
    pub authorization_response_iss_parameter_supported: bool,
}

/// Who guards a server, as found.
#[derive(Clone, Debug)]
pub(crate) struct Guard {
    /// Its resource metadata; none for a server of 2025-03-26.
    pub resource: Option<ResourceMetadata>,
    /// Its authorization server's metadata (the default endpoints when it has none).
    pub server: ServerMetadata,
    /// Whether the metadata is the server's own (else the 2025-03-26 defaults).
    pub from_metadata: bool,
}

/// Finds who guards the server at `url`, told `resource_metadata` by its challenge.
pub(crate) async fn discover(
    http: &reqwest::Client,
    url: &str,
    resource_metadata: Option<&str>,
) -> Result<Guard, OAuthError> {
    let server = Url::parse(url).map_err(|e| OAuthError::failed(format!("its URL: {e}")))?;
    // A login, and the token it gives, go over TLS only, or stay on this machine.
    check_scheme(&server)?;
    let resource = find_resource(http, &server, resource_metadata).await?;
    let Some(resource) = resource else {
        return legacy(http, &server).await;
    };
    check_resource(&server, &resource.resource)?;
    let Some(issuer) = resource.authorization_servers.first().cloned() else {
        return Err(OAuthError::failed(
            "its resource metadata names no authorization server",
        ));
    };
    let issuer_url = Url::parse(&issuer).map_err(|_| {
        OAuthError::failed(format!(
            "its authorization server {} is not a URL",
            cut(&issuer)
        ))
    })?;
    check_reach(&server, &issuer_url)?;
    let mut wrong = None;
    for candidate in metadata_urls(&issuer_url) {
        let meta = match fetch::<ServerMetadata>(http, &candidate).await {
            Ok(Some(meta)) => meta,
            Ok(None) => continue,
            Err(e) => {
                wrong = Some(e);
                continue;
            }
        };
        // RFC 8414 §3.3: the metadata is the issuer's own, compared as strings.
        if meta.issuer != issuer {
            return Err(OAuthError::failed(format!(
                "the metadata at {} is for issuer {}, not {}",
                shown(&candidate),
                cut(&meta.issuer),
                cut(&issuer)
            )));
        }
        check_endpoints(&meta)?;
        return Ok(Guard {
            resource: Some(resource),
            server: meta,
            from_metadata: true,
        });
    }
    Err(wrong.unwrap_or_else(|| {
        OAuthError::failed(format!(
            "no metadata found for its authorization server {}",
            cut(&issuer)
        ))
    }))
}

/// The resource metadata: where the challenge says, else at the well-known path for the
/// server's path, then at the root.
async fn find_resource(
    http: &reqwest::Client,
    server: &Url,
    told: Option<&str>,
) -> Result<Option<ResourceMetadata>, OAuthError> {
    if let Some(told) = told {
        let at = Url::parse(told).map_err(|_| {
            OAuthError::failed("its challenge names resource metadata that is no URL")
        })?;
        check_reach(server, &at)?;
        return match fetch(http, &at).await? {
            Some(found) => Ok(Some(found)),
            None => Err(OAuthError::failed(format!(
                "no resource metadata at {}, where its challenge says",
                shown(&at)
            ))),
        };
    }
    let path = server.path().trim_end_matches('/');
    let mut candidates = Vec::new();
    if !path.is_empty() {
        candidates.push(format!("/.well-known/oauth-protected-resource{path}"));
    }
    candidates.push("/.well-known/oauth-protected-resource".to_owned());
    let mut wrong = None;
    for candidate in candidates {
        let at = server
            .join(&candidate)
            .map_err(|e| OAuthError::failed(e.to_string()))?;
        match fetch(http, &at).await {
            Ok(Some(found)) => return Ok(Some(found)),
            Ok(None) => {}
            Err(e) => wrong = Some(e),
        }
    }
    // What is there but unreadable is said; nothing at all is a server of 2025-03-26.
    match wrong {
        Some(e) => Err(e),
        None => Ok(None),
    }
}

/// A server of 2025-03-26: the authorization server at its origin, described or not.
async fn legacy(http: &reqwest::Client, server: &Url) -> Result<Guard, OAuthError> {
    let origin = origin(server);
    for path in [
        "/.well-known/oauth-authorization-server",
        "/.well-known/openid-configuration",
    ] {
        let at = Url::parse(&format!("{origin}{path}"))
            .map_err(|e| OAuthError::failed(e.to_string()))?;
        if let Ok(Some(meta)) = fetch::<ServerMetadata>(http, &at).await {
            // Servers of then named their issuer loosely: one on another origin is taken
            // as this origin, whose endpoints they must be.
            let same_origin = Url::parse(&meta.issuer).is_ok_and(|i| self::origin(&i) == origin);
            let meta = match same_origin {
                true => meta,
                false => ServerMetadata {
                    issuer: origin.clone(),
                    ..meta
                },
            };
            check_endpoints(&meta)?;
            return Ok(Guard {
                resource: None,
                server: meta,
                from_metadata: true,
            });
        }
    }
    Ok(Guard {
        resource: None,
        server: ServerMetadata {
            issuer: origin.clone(),
            authorization_endpoint: Some(format!("{origin}/authorize")),
            token_endpoint: Some(format!("{origin}/token")),
            registration_endpoint: Some(format!("{origin}/register")),
            ..ServerMetadata::default()
        },
        from_metadata: false,
    })
}

/// Where an issuer's metadata may be, in order: RFC 8414's path insertion, then OpenID
/// Connect's path insertion and path append; for an issuer with no path, the two at its root.
fn metadata_urls(issuer: &Url) -> Vec<Url> {
    let origin = origin(issuer);
    let path = issuer.path().trim_end_matches('/');
    let paths = match path.is_empty() {
        true => vec![
            "/.well-known/oauth-authorization-server".to_owned(),
            "/.well-known/openid-configuration".to_owned(),
        ],
        false => vec![
            format!("/.well-known/oauth-authorization-server{path}"),
            format!("/.well-known/openid-configuration{path}"),
            format!("{path}/.well-known/openid-configuration"),
        ],
    };
    paths
        .iter()
        .filter_map(|p| Url::parse(&format!("{origin}{p}")).ok())
        .collect()
}

/// `url` as said in a message: at most 120 characters of it.
fn shown(url: &Url) -> String {
    let s = url.as_str();
    match s.char_indices().nth(120) {
        Some((at, _)) => format!("{}…", &s[..at]),
        None => s.to_owned(),
    }
}

/// What a server named, as said in a message: quoted, escaped, at most 120 characters.
pub(crate) fn cut(s: &str) -> String {
    match s.char_indices().nth(120) {
        Some((at, _)) => format!("{:?}…", &s[..at]),
        None => format!("{s:?}"),
    }
}

/// `scheme://host[:port]` of `url`.
pub(crate) fn origin(url: &Url) -> String {
    url.origin().ascii_serialization()
}

/// Metadata must be fetched over TLS, but from this machine.
fn check_scheme(url: &Url) -> Result<(), OAuthError> {
    match (url.scheme(), loopback(url)) {
        ("https", _) | ("http", true) => Ok(()),
        _ => Err(OAuthError::failed(format!(
            "{} is not https: kite sends credentials only over TLS (or to this machine)",
            shown(url)
        ))),
    }
}

/// Whether kite may fetch `url` for the MCP server at `server`, told of it by the server
/// (its challenge, its resource metadata): from the server's own origin; on this machine
/// only for a server that is on it too (which could reach it anyway), so that a remote
/// server's challenge never sends kite to a port of its host (a Redis, an admin page);
/// anywhere else, only over TLS.
fn check_reach(server: &Url, url: &Url) -> Result<(), OAuthError> {
    if origin(url) == origin(server) {
        return Ok(());
    }
    match (loopback(url), loopback(server)) {
        (true, true) => Ok(()),
        (true, false) => Err(OAuthError::failed(format!(
            "{} is on this machine, and the server ({}) is not: refused",
            shown(url),
            origin(server)
        ))),
        (false, _) if url.scheme() == "https" => Ok(()),
        (false, _) => Err(OAuthError::failed(format!(
            "{} is neither on the server's own origin ({}) nor https: refused",
            shown(url),
            origin(server)
        ))),
    }
}

/// Whether `url` is on this machine.
pub(crate) fn loopback(url: &Url) -> bool {
    match url.host() {
        Some(url::Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    }
}

/// The resource the metadata describes must be this server: the same origin, and a path
/// that is the server's or a parent of it.
fn check_resource(server: &Url, resource: &str) -> Result<(), OAuthError> {
    let mismatch = || {
        OAuthError::failed(format!(
            "its resource metadata describes {}, not this server: kite will not ask for a \
             token to it",
            cut(resource)
        ))
    };
    let described = Url::parse(resource).map_err(|_| mismatch())?;
    if origin(&described) != origin(server) {
        return Err(mismatch());
    }
    let parent = described.path().trim_end_matches('/');
    let path = server.path().trim_end_matches('/');
    let within = parent.is_empty()
        || path == parent
        || path
            .strip_prefix(parent)
            .is_some_and(|rest| rest.starts_with('/'));
    match within {
        true => Ok(()),
        false => Err(mismatch()),
    }
}

/// An authorization server's endpoints are its own: on its issuer's origin, so that no
/// code, secret or token is sent to another host.
fn check_endpoints(meta: &ServerMetadata) -> Result<(), OAuthError> {
    let issuer = Url::parse(&meta.issuer)
        .map_err(|_| OAuthError::failed(format!("its issuer {} is no URL", cut(&meta.issuer))))?;
    for (what, endpoint) in [
        ("authorization", &meta.authorization_endpoint),
        ("token", &meta.token_endpoint),
        ("registration", &meta.registration_endpoint),
    ] {
        let Some(endpoint) = endpoint else { continue };
        let url = Url::parse(endpoint).map_err(|_| {
            OAuthError::failed(format!("its {what} endpoint {} is no URL", cut(endpoint)))
        })?;
        check_scheme(&url)?;
        if origin(&url) != origin(&issuer) {
            return Err(OAuthError::failed(format!(
                "its {what} endpoint {} is not on its issuer's host ({}): refused",
                cut(endpoint),
                cut(&meta.issuer)
            )));
        }
    }
    Ok(())
}

/// The JSON document at `url`: `None` when there is none (an error status); an error when
/// what is there is no such document, too large, or slow.
async fn fetch<T: serde::de::DeserializeOwned>(
    http: &reqwest::Client,
    url: &Url,
) -> Result<Option<T>, OAuthError> {
    let asked = async {
        let mut r = http
            .get(url.clone())
            .header(http::header::ACCEPT, "application/json")
            .send()
            .await
            .map_err(|e| OAuthError::failed(format!("{}: {}", shown(url), super::said(e))))?;
        if !r.status().is_success() {
            return Ok(None);
        }
        let mut body = Vec::new();
        while let Some(chunk) = r
            .chunk()
            .await
            .map_err(|e| OAuthError::failed(format!("{}: {}", shown(url), super::said(e))))?
        {
            if body.len() + chunk.len() > MAX_DOCUMENT {
                return Err(OAuthError::failed(format!(
                    "{}: the document is over {} KiB",
                    shown(url),
                    MAX_DOCUMENT / 1024
                )));
            }
            body.extend_from_slice(&chunk);
        }
        serde_json::from_slice(&body).map(Some).map_err(|e| {
            OAuthError::failed(format!("{}: not the metadata expected: {e}", shown(url)))
        })
    };
    match tokio::time::timeout(FETCH, asked).await {
        Ok(r) => r,
        Err(_) => Err(OAuthError::failed(format!(
            "{}: no answer within {} s",
            shown(url),
            FETCH.as_secs()
        ))),
    }
}

#[cfg(test)]
mod tests;
