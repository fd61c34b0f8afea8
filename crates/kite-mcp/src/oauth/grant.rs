//! Getting tokens: who kite is to an authorization server (pre-registered, its Client ID
//! Metadata Document, or registered now, RFC 7591), PKCE, and the token endpoint's grants
//! (authorization code, refresh, client credentials with a secret or a signed assertion),
//! each request authenticated as the registration or the metadata says.

use super::OAuthError;
use super::discovery::ServerMetadata;
use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use serde::Deserialize;
use std::time::Duration;

/// How long one request to the authorization server may take.
const DEADLINE: Duration = Duration::from_secs(15);
/// The largest answer read from it.
const MAX_ANSWER: usize = 64 * 1024;

/// Who kite is to an authorization server (no `Debug`: it holds a secret).
#[derive(Clone, Default, PartialEq)]
pub(crate) struct Client {
    pub id: String,
    pub secret: Option<String>,
    /// `client_secret_basic`, `client_secret_post`, `none` or `private_key_jwt`.
    pub method: String,
}

/// `n` random bytes, as base64url.
pub(crate) fn random(n: usize) -> Result<String, OAuthError> {
    let mut bytes = vec![0u8; n];
    getrandom::fill(&mut bytes).map_err(|e| OAuthError::failed(format!("no randomness: {e}")))?;
    Ok(URL_SAFE_NO_PAD.encode(bytes))
}

/// A PKCE verifier (43 characters) and its S256 challenge.
pub(crate) fn pkce() -> Result<(String, String), OAuthError> {
    use sha2::Digest;
    let verifier = random(32)?;
    let challenge = URL_SAFE_NO_PAD.encode(sha2::Sha256::digest(verifier.as_bytes()));
    Ok((verifier, challenge))
}

/// How a client with or without a secret authenticates, as the metadata allows.
pub(crate) fn method_for(meta: &ServerMetadata, secret: bool) -> String {
    let supported = &meta.token_endpoint_auth_methods_supported;
    let method = match secret {
        false => "none",
        true if supported.is_empty() || supported.iter().any(|m| m == "client_secret_basic") => {
            "client_secret_basic"
        }
        true if supported.iter().any(|m| m == "client_secret_post") => "client_secret_post",
        true => "client_secret_basic",
    };
    method.to_owned()
}

/// Registers kite with the authorization server (RFC 7591).
pub(crate) async fn register(
    http: &reqwest::Client,
    meta: &ServerMetadata,
    redirect_uri: &str,
) -> Result<Client, OAuthError> {
    let Some(endpoint) = &meta.registration_endpoint else {
        return Err(OAuthError::failed(
            "its authorization server takes no registration and no client metadata document: \
             give a client_id in [mcp.servers.NAME.oauth]",
        ));
    };
    let public = meta.token_endpoint_auth_methods_supported.is_empty()
        || meta
            .token_endpoint_auth_methods_supported
            .iter()
            .any(|m| m == "none");
    let body = serde_json::json!({
        "client_name": "kite",
        "redirect_uris": [redirect_uri],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": if public { "none" } else { "client_secret_basic" },
        "application_type": "native",
    });
    #[derive(Deserialize)]
    struct Registered {
        client_id: String,
        client_secret: Option<String>,
        token_endpoint_auth_method: Option<String>,
    }
    let request = http.post(endpoint).json(&body);
    let registered: Registered = send(request, "registration", &[]).await?;
    let method = registered
        .token_endpoint_auth_method
        .clone()
        .unwrap_or_else(|| method_for(meta, registered.client_secret.is_some()));
    Ok(Client {
        id: registered.client_id,
        secret: registered.client_secret,
        method,
    })
}

/// What a token endpoint answers (no `Debug`: it holds tokens).
#[derive(Clone, Deserialize)]
pub(crate) struct Tokens {
    pub access_token: String,
    #[serde(default)]
    pub token_type: String,
    pub refresh_token: Option<String>,
    /// Seconds, as a number or a string of one.
    #[serde(default, deserialize_with = "seconds")]
    pub expires_in: Option<u64>,
    pub scope: Option<String>,
    /// OpenID Connect's ID token: who logged in.
    pub id_token: Option<String>,
}

/// `expires_in` as servers write it: a whole number, a float, or a string of either.
fn seconds<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    let v = Option::<serde_json::Value>::deserialize(d)?;
    let n = match &v {
        Some(serde_json::Value::Number(n)) => n.as_f64(),
        Some(serde_json::Value::String(s)) => s.trim().parse::<f64>().ok(),
        _ => None,
    };
    Ok(n.filter(|n| n.is_finite() && *n >= 0.0)
        .map(|n| n.min(u64::MAX as f64) as u64))
}

impl Tokens {
    /// Who the ID token names (read, not verified: it is only shown).
    pub(crate) fn account(&self) -> Option<String> {
        let payload = self.id_token.as_deref()?.split('.').nth(1)?;
        let claims: serde_json::Value =
            serde_json::from_slice(&URL_SAFE_NO_PAD.decode(payload).ok()?).ok()?;
        ["email", "preferred_username", "sub"]
            .iter()
            .find_map(|k| claims[*k].as_str())
            .map(|s| s.chars().take(200).collect())
    }
}

/// A signed client assertion's key: PEM (PKCS#8), ES256 or RS256.
pub(crate) struct AssertionKey(pub String);

/// Asks the token endpoint for a bearer token with `params`, authenticating as `client`
/// (with an assertion for `audience` when it signs one).
pub(crate) async fn token(
    http: &reqwest::Client,
    endpoint: &str,
    client: &Client,
    params: Vec<(&'static str, String)>,
    key: Option<(&AssertionKey, &str)>,
) -> Result<Tokens, OAuthError> {
    let tokens = ask(http, endpoint, client, params, key).await?;
    if !tokens.token_type.is_empty() && !tokens.token_type.eq_ignore_ascii_case("bearer") {
        return Err(OAuthError::failed(format!(
            "the token endpoint gave a {:?} token; kite sends bearer tokens only",
            tokens.token_type
        )));
    }
    Ok(tokens)
}

/// Exchanges a token (RFC 8693) at `endpoint`: the token issued for it.
pub(crate) async fn token_exchange(
    http: &reqwest::Client,
    endpoint: &str,
    client: &Client,
    params: Vec<(&'static str, String)>,
) -> Result<String, OAuthError> {
    Ok(ask(http, endpoint, client, params, None)
        .await?
        .access_token)
}

/// A request to a token endpoint.
async fn ask(
    http: &reqwest::Client,
    endpoint: &str,
    client: &Client,
    mut params: Vec<(&'static str, String)>,
    key: Option<(&AssertionKey, &str)>,
) -> Result<Tokens, OAuthError> {
    let mut request = http.post(endpoint);
    // What is sent that no error may echo back.
    let mut hidden: Vec<String> = params
        .iter()
        .filter(|(k, _)| {
            matches!(
                *k,
                "code" | "code_verifier" | "refresh_token" | "subject_token" | "assertion"
            )
        })
        .map(|(_, v)| v.clone())
        .collect();
    hidden.extend(client.secret.clone());
    // As the form carries them, too.
    let encoded: Vec<String> = hidden
        .iter()
        .map(|h| url::form_urlencoded::byte_serialize(h.as_bytes()).collect())
        .collect();
    hidden.extend(encoded);
    match client.method.as_str() {
        "client_secret_basic" => {
            let encode = |v: &str| -> String {
                url::form_urlencoded::byte_serialize(v.as_bytes()).collect()
            };
            let pair = format!(
                "{}:{}",
                encode(&client.id),
                encode(client.secret.as_deref().unwrap_or(""))
            );
            let basic = STANDARD.encode(&pair);
            hidden.extend([pair, basic.clone()]);
            request = request.header(http::header::AUTHORIZATION, format!("Basic {basic}"));
        }
        "client_secret_post" => {
            params.push(("client_id", client.id.clone()));
            params.push(("client_secret", client.secret.clone().unwrap_or_default()));
        }
        "private_key_jwt" => {
            let Some((key, audience)) = key else {
                return Err(OAuthError::failed(
                    "a signed assertion needs the client's key",
                ));
            };
            params.push((
                "client_assertion_type",
                "urn:ietf:params:oauth:client-assertion-type:jwt-bearer".into(),
            ));
            let signed = assertion(key, &client.id, audience)?;
            hidden.push(signed.clone());
            params.push(("client_assertion", signed));
        }
        _ => params.push(("client_id", client.id.clone())),
    }
    let body: String = url::form_urlencoded::Serializer::new(String::new())
        .extend_pairs(params.iter().map(|(k, v)| (*k, v.as_str())))
        .finish();
    let request = request
        .header(
            http::header::CONTENT_TYPE,
            "application/x-www-form-urlencoded",
        )
        .body(body);
    let tokens: Tokens = send(request, "token", &hidden).await?;
    if tokens.access_token.is_empty() {
        return Err(OAuthError::failed("the token endpoint gave an empty token"));
    }
    Ok(tokens)
}

/// Sends `request` to the authorization server's `what` endpoint; its JSON answer, or its
/// error (`error` and `error_description`, as RFC 6749 has it, with nothing of `hidden`,
/// what was sent, in it).
async fn send<T: serde::de::DeserializeOwned>(
    request: reqwest::RequestBuilder,
    what: &str,
    hidden: &[String],
) -> Result<T, OAuthError> {
    let asked = async {
        let mut r = request
            .header(http::header::ACCEPT, "application/json")
            .send()
            .await
            .map_err(|e| OAuthError::failed(format!("its {what} endpoint: {}", super::said(e))))?;
        let status = r.status();
        let mut body = Vec::new();
        while let Some(chunk) = r
            .chunk()
            .await
            .map_err(|e| OAuthError::failed(format!("its {what} endpoint: {}", super::said(e))))?
        {
            if body.len() + chunk.len() > MAX_ANSWER {
                return Err(OAuthError::failed(format!(
                    "its {what} endpoint answered with over {} KiB",
                    MAX_ANSWER / 1024
                )));
            }
            body.extend_from_slice(&chunk);
        }
        if !status.is_success() {
            #[derive(Deserialize)]
            struct Refusal {
                error: Option<String>,
                error_description: Option<String>,
            }
            let said = serde_json::from_slice::<Refusal>(&body).ok();
            // A 4xx (but 429) is the server's answer; anything else, the server away.
            let invalid_grant = status.is_client_error() && status.as_u16() != 429;
            let why = said
                .map(|r| {
                    let mut why = r
                        .error
                        .map(|e| {
                            let e: String = e.chars().take(64).collect();
                            e.escape_debug().to_string()
                        })
                        .unwrap_or_default();
                    if let Some(d) = r.error_description {
                        // Hidden before cut: no secret shows by halves.
                        let d = kite_http::redact_all(&d, hidden);
                        why = format!("{why}: {}", d.chars().take(200).collect::<String>());
                    }
                    why
                })
                .filter(|w| !w.is_empty())
                .unwrap_or_else(|| format!("HTTP {}", status.as_u16()));
            let why = kite_http::redact_all(&why, hidden);
            let message = format!("its {what} endpoint refused ({why})");
            return Err(match invalid_grant {
                true => OAuthError::InvalidGrant(message),
                false => OAuthError::failed(message),
            });
        }
        serde_json::from_slice(&body).map_err(|e| {
            OAuthError::failed(format!(
                "its {what} endpoint answered with no such JSON: {e}"
            ))
        })
    };
    match tokio::time::timeout(DEADLINE, asked).await {
        Ok(r) => r,
        Err(_) => Err(OAuthError::failed(format!(
            "its {what} endpoint did not answer within {} s",
            DEADLINE.as_secs()
        ))),
    }
}

/// A client assertion (RFC 7523): a JWT naming `client` to `audience` (the authorization
/// server's issuer), signed with `key` (ES256 for a P-256 key, RS256 for RSA).
pub(crate) fn assertion(
    key: &AssertionKey,
    client: &str,
    audience: &str,
) -> Result<String, OAuthError> {
    use ring::signature::{self, KeyPair as _};
    let der = pem_body(&key.0)
        .ok_or_else(|| OAuthError::failed("the client's key is not a PEM private key"))?;
    let rng = ring::rand::SystemRandom::new();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let claims = serde_json::json!({
        "iss": client,
        "sub": client,
        "aud": audience,
        "iat": now,
        "exp": now + 300,
        "jti": random(16)?,
    });
    let encode = |v: &serde_json::Value| URL_SAFE_NO_PAD.encode(v.to_string());
    let ec = signature::EcdsaKeyPair::from_pkcs8(
        &signature::ECDSA_P256_SHA256_FIXED_SIGNING,
        &der,
        &rng,
    );
    let signed = match ec {
        Ok(pair) => {
            let _ = pair.public_key();
            let input = format!(
                "{}.{}",
                encode(&serde_json::json!({"alg": "ES256", "typ": "JWT"})),
                encode(&claims)
            );
            let sig = pair
                .sign(&rng, input.as_bytes())
                .map_err(|_| OAuthError::failed("the client's key cannot sign"))?;
            format!("{input}.{}", URL_SAFE_NO_PAD.encode(sig.as_ref()))
        }
        Err(_) => {
            let pair = signature::RsaKeyPair::from_pkcs8(&der).map_err(|_| {
                OAuthError::failed("the client's key is neither a P-256 nor an RSA key (PKCS#8)")
            })?;
            let input = format!(
                "{}.{}",
                encode(&serde_json::json!({"alg": "RS256", "typ": "JWT"})),
                encode(&claims)
            );
            let mut sig = vec![0u8; pair.public().modulus_len()];
            pair.sign(
                &signature::RSA_PKCS1_SHA256,
                &rng,
                input.as_bytes(),
                &mut sig,
            )
            .map_err(|_| OAuthError::failed("the client's key cannot sign"))?;
            format!("{input}.{}", URL_SAFE_NO_PAD.encode(sig))
        }
    };
    Ok(signed)
}

/// The DER inside a PEM private key.
fn pem_body(pem: &str) -> Option<Vec<u8>> {
    let body: String = pem
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with("-----"))
        .collect();
    STANDARD.decode(body).ok().filter(|d| !d.is_empty())
}

#[cfg(test)]
mod tests;
