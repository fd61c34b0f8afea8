//! OAuth 2.1 for Streamable HTTP servers, as the MCP specification (2025-11-25) asks.
//!
//! A server that answers 401, or 403 `insufficient_scope`, is discovered (its protected
//! resource metadata, RFC 9728, then its authorization server's, RFC 8414 or OpenID
//! Connect; the 2025-03-26 fallbacks for older servers); kite names itself to the
//! authorization server (a pre-registered client, a Client ID Metadata Document, or
//! dynamic registration, RFC 7591); the user approves (authorization code with PKCE S256,
//! the RFC 8707 `resource` on both requests, the RFC 9207 `iss` checked); and the request
//! is sent again with the token. Tokens are refreshed before they expire and on a 401, kept
//! by a [`TokenStore`], and sent only to the server they were issued for. Machines use the
//! client-credentials grant (a secret, or a JWT signed with their key).
//!
//! Written on reqwest rather than on rmcp's `auth` feature: the order of discovery, the
//! scope rules, the bound on re-authorizations, the older servers' fallbacks, a
//! pre-registered secret kept across runs and a request replayed within its session are
//! each done otherwise there, and each must be exactly what the specification says for
//! kite to work with every server; here every fetch has a deadline and a size bound, and
//! no token or secret can reach a message.

mod discovery;
mod flow;
mod grant;
mod headless;
mod store;

pub(crate) use flow::{Login, Logins};
pub use headless::Headless;
#[cfg(feature = "keyring")]
mod os_keyring;
#[cfg(feature = "keyring")]
pub use os_keyring::KeyringTokens;
pub use store::{FileTokens, MemoryTokens};

use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// The Client ID Metadata Document kite names itself by, to authorization servers that
/// take one (`client_id_metadata_document_supported`): `docs/oauth/client-metadata.json` in
/// the repository, published with the documentation. Its redirect URIs are loopback ones,
/// whose port may vary (RFC 8252).
pub const CLIENT_METADATA_URL: &str = "https://kite-rs.github.io/kite/oauth/client-metadata.json";

/// How a server's tokens are got: the `[mcp.servers.NAME.oauth]` table of `kite.toml`.
#[derive(Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct OAuthConfig {
    /// A client id registered with the authorization server beforehand.
    pub client_id: Option<String>,
    /// Its secret (`${VAR}` reads it from the environment).
    pub client_secret: Option<String>,
    /// The scopes to ask for, when the server does not say.
    #[serde(default)]
    pub scopes: Vec<String>,
    /// The loopback port the browser is sent back to (any free one by default).
    pub redirect_port: Option<u16>,
    /// How tokens are got.
    #[serde(default)]
    pub grant: Grant,
    /// For `client_credentials` with a signed assertion: the PEM file of the client's
    /// private key (ES256 or RS256).
    pub private_key_file: Option<std::path::PathBuf>,
    /// The only authorization server the client's id and secret are sent to: a server
    /// whose metadata names another is refused.
    pub issuer: Option<String>,
    /// Which of the logins kept for this server to use (`kite mcp login NAME --account
    /// WHO`); the one made with no account by default.
    pub account: Option<String>,
}

impl OAuthConfig {
    /// Under what name the login of server `name` is kept: `NAME`, or `NAME@ACCOUNT`.
    pub fn kept_as(&self, name: &str) -> String {
        match &self.account {
            Some(a) => format!("{name}@{a}"),
            None => name.to_owned(),
        }
    }

    /// What `kite mcp login` takes to make that login: `NAME`, or `NAME --account WHO`.
    pub fn login_args(&self, name: &str) -> String {
        match &self.account {
            Some(a) => format!("{name} --account {a}"),
            None => name.to_owned(),
        }
    }
}

impl std::fmt::Debug for OAuthConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuthConfig")
            .field("client_id", &self.client_id)
            .field("client_secret", &self.client_secret.as_ref().map(|_| "…"))
            .field("scopes", &self.scopes)
            .field("redirect_port", &self.redirect_port)
            .field("grant", &self.grant)
            .field("private_key_file", &self.private_key_file)
            .field("issuer", &self.issuer)
            .field("account", &self.account)
            .finish()
    }
}

/// How tokens are got.
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Grant {
    /// A person approves in a browser (`kite mcp login`).
    #[default]
    AuthorizationCode,
    /// The client's own credentials, with no person present.
    ClientCredentials,
}

/// What is kept of a login to one server: its tokens, and who kite is to its
/// authorization server. Never shown: its `Debug` hides every token and secret.
#[derive(Clone, Default, Deserialize, Serialize, PartialEq)]
pub struct Saved {
    /// The server it is for: a login is never sent to another URL.
    pub server_url: String,
    /// The authorization server that issued it.
    pub issuer: Option<String>,
    /// Where it is refreshed.
    pub token_endpoint: Option<String>,
    /// The resource (RFC 8707) it was asked for.
    pub resource: Option<String>,
    /// Who kite is to the authorization server.
    pub client_id: Option<String>,
    /// The secret it was given, if any.
    pub client_secret: Option<String>,
    /// How it authenticates at the token endpoint.
    pub auth_method: Option<String>,
    /// The token sent to the server.
    pub access_token: Option<String>,
    /// What gets a new one.
    pub refresh_token: Option<String>,
    /// When the token expires (Unix milliseconds).
    pub expires_at_ms: Option<i64>,
    /// When it was issued (Unix milliseconds).
    #[serde(default)]
    pub obtained_ms: Option<i64>,
    /// The scopes it grants.
    #[serde(default)]
    pub scopes: Vec<String>,
    /// Who is logged in, when the authorization server says (its ID token's `email`,
    /// `preferred_username` or `sub`).
    #[serde(default)]
    pub account: Option<String>,
    /// Whether the server refused the token last (it needs a new login).
    #[serde(default)]
    pub refused: bool,
    /// The redirect URI the client was registered with (registered again for another).
    #[serde(default)]
    pub redirect_uri: Option<String>,
}

impl std::fmt::Debug for Saved {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let hidden = |v: &Option<String>| v.as_ref().map(|_| "…");
        f.debug_struct("Saved")
            .field("server_url", &self.server_url)
            .field("issuer", &self.issuer)
            .field("client_id", &self.client_id)
            .field("client_secret", &hidden(&self.client_secret))
            .field("access_token", &hidden(&self.access_token))
            .field("refresh_token", &hidden(&self.refresh_token))
            .field("expires_at_ms", &self.expires_at_ms)
            .field("scopes", &self.scopes)
            .field("account", &self.account)
            .field("refused", &self.refused)
            .finish()
    }
}

impl Saved {
    /// Every token and secret in it, to be hidden wherever text is shown.
    pub fn secrets(&self) -> Vec<String> {
        [&self.access_token, &self.refresh_token, &self.client_secret]
            .into_iter()
            .flatten()
            .cloned()
            .collect()
    }
}

/// Where logins are kept between runs, by server name (and account:
/// [`OAuthConfig::kept_as`]).
pub trait TokenStore: Send + Sync {
    /// The login kept for `server`.
    fn load(&self, server: &str) -> Option<Saved>;
    /// Keeps `saved` for `server`.
    fn save(&self, server: &str, saved: &Saved) -> Result<(), String>;
    /// Forgets `server`'s login; false when there was none.
    fn clear(&self, server: &str) -> Result<bool, String>;
    /// Whether logins can be kept now (why not, when they cannot).
    fn writable(&self) -> Result<(), String> {
        Ok(())
    }
    /// Where logins are kept, as said to a person.
    fn place(&self) -> String;
}

/// What the authorization server sent the browser back with.
#[derive(Clone, Default, PartialEq)]
pub struct Approval {
    /// The authorization code.
    pub code: String,
    /// The state kite sent, as it came back.
    pub state: Option<String>,
    /// The issuer that answered (RFC 9207), when it says.
    pub iss: Option<String>,
}

impl std::fmt::Debug for Approval {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Approval")
            .field("code", &"…")
            .field("state", &self.state.as_ref().map(|_| "…"))
            .field("iss", &self.iss)
            .finish()
    }
}

/// Has a person approve: opens the authorization URL, and takes the redirect back.
pub trait Authorizer: Send + Sync {
    /// Where the browser is sent back (a loopback URL).
    fn redirect_uri(&self) -> String;
    /// Has the user approve at `url` (for `server`), and gives what came back.
    fn approve<'a>(
        &'a self,
        server: &'a str,
        url: &'a str,
    ) -> futures_util::future::BoxFuture<'a, Result<Approval, String>>;
}

/// What is told of each secret of a login.
pub type SecretSink = Arc<dyn Fn(&str) + Send + Sync>;

/// How a hub gets tokens for servers that ask for them.
#[derive(Clone, Default)]
pub struct OAuthOptions {
    /// Where logins are kept (in memory, for this process, when none).
    pub store: Option<Arc<dyn TokenStore>>,
    /// Who approves a login; without one, a server that needs a login is reported with
    /// the command that makes one.
    pub authorizer: Option<Arc<dyn Authorizer>>,
    /// The Client ID Metadata Document kite names itself by ([`CLIENT_METADATA_URL`]
    /// when unset).
    pub client_metadata_url: Option<String>,
    /// Extra context for the client-credentials and cross-app grants, as the conformance
    /// suite gives it (a JSON object: `private_key_pem`, `signing_algorithm`, `idp_*`).
    pub context: Option<serde_json::Value>,
    /// Told every token, code and secret of a login as it is read or received, so that
    /// whatever shows text (a log, a tool's output) hides it.
    pub on_secret: Option<SecretSink>,
    /// Leave the kept tokens aside and log in again (`kite mcp login`): they are replaced
    /// once the new login succeeds, and kept if it does not.
    pub fresh: bool,
}

impl OAuthOptions {
    /// Tells [`OAuthOptions::on_secret`] of `secrets`.
    pub(crate) fn hide(&self, secrets: &[String]) {
        if let Some(tell) = &self.on_secret {
            for s in secrets {
                tell(s);
                // As a form or a query carries it.
                let encoded: String = url::form_urlencoded::byte_serialize(s.as_bytes()).collect();
                if encoded != *s {
                    tell(&encoded);
                }
            }
        }
    }
}

/// Why a server's token could not be had.
#[derive(Debug, thiserror::Error)]
pub enum OAuthError {
    /// The server needs a login, and none is kept: the arguments of the `kite mcp login`
    /// that makes one (`NAME`, or `NAME --account WHO`).
    #[error("it needs a login: run `kite mcp login {0}`")]
    NeedsLogin(String),
    /// The authorization server refused a request (a 4xx but 429: `invalid_grant` for a
    /// refresh token no longer good, `invalid_client` for a registration it forgot, ...).
    #[error("authorization failed: {0}")]
    InvalidGrant(String),
    /// Anything else, said without a token or secret.
    #[error("authorization failed: {0}")]
    Failed(String),
}

impl OAuthError {
    pub(crate) fn failed(message: impl Into<String>) -> Self {
        Self::Failed(message.into())
    }
}

/// What went wrong with a request, without its URL's query or any header.
pub(crate) fn said(e: reqwest::Error) -> String {
    if e.is_timeout() {
        return "it timed out".into();
    }
    if e.is_connect() {
        return "cannot connect".into();
    }
    let e = e.without_url();
    let mut out = e.to_string();
    let mut source = std::error::Error::source(&e);
    while let Some(s) = source {
        out.push_str(": ");
        out.push_str(&s.to_string());
        source = s.source();
    }
    out
}
