//! One server's login: the token each request carries (refreshed before it expires), and
//! what a 401 or a 403 `insufficient_scope` starts: a refresh, or a new authorization with
//! the scopes the server asks for, at most [`MAX_AUTHORIZATIONS`] times before a request
//! succeeds. A login outlives its sessions: a reconnected server keeps its token.

use super::discovery::{self, Challenge};
use super::{Grant, OAuthConfig, OAuthError, OAuthOptions, Saved};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

mod machines;
mod person;
mod refresh;

/// A client registered before: its id and method, and the redirect URI it was registered
/// with.
type Registered = ((String, String), String);

/// How many authorizations may follow one another with no request succeeding between.
const MAX_AUTHORIZATIONS: u32 = 3;
/// How long before it expires a token is refreshed.
const EARLY_MS: i64 = 60_000;
/// How long a refresh that failed is not tried again by a request.
const REST_MS: i64 = 10_000;
/// How long a person has to approve a login.
const APPROVAL: Duration = Duration::from_secs(300);

/// The logins of a hub's servers, by server.
#[derive(Default)]
pub(crate) struct Logins {
    options: OAuthOptions,
    by_server: Mutex<HashMap<String, Arc<Login>>>,
}

impl Logins {
    pub(crate) fn new(options: OAuthOptions) -> Self {
        Self {
            options,
            by_server: Mutex::default(),
        }
    }

    /// The login of server `name` at `url` (made again when either changed).
    pub(crate) fn of(&self, name: &str, url: &str, config: Option<&OAuthConfig>) -> Arc<Login> {
        let config = config.cloned().unwrap_or_default();
        let mut all = self.by_server.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(l) = all.get(name).filter(|l| l.url == url && l.config == config) {
            return l.clone();
        }
        let login = Arc::new(Login {
            name: name.to_owned(),
            url: url.to_owned(),
            config,
            options: self.options.clone(),
            http: oauth_client(),
            saved: tokio::sync::Mutex::new(None),
            authorizations: AtomicU32::new(0),
            refresh_failed_ms: std::sync::atomic::AtomicI64::new(0),
        });
        all.insert(name.to_owned(), login.clone());
        login
    }
}

/// The client for the authorization server: no redirects followed (an authorization
/// server's answer is its own), deadlines on connecting.
fn oauth_client() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .connect_timeout(Duration::from_secs(10))
        .build()
        .unwrap_or_default()
}

/// One server's login.
pub(crate) struct Login {
    name: String,
    url: String,
    config: OAuthConfig,
    options: OAuthOptions,
    http: reqwest::Client,
    /// What is kept of it (read from the store on first use).
    saved: tokio::sync::Mutex<Option<Saved>>,
    /// Authorizations since a request last succeeded.
    authorizations: AtomicU32,
    /// When a refresh last failed (Unix milliseconds).
    refresh_failed_ms: std::sync::atomic::AtomicI64,
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

impl Login {
    /// The kept login, read from the store the first time (one for another URL is none).
    fn loaded<'a>(&self, slot: &'a mut Option<Saved>) -> &'a mut Saved {
        slot.get_or_insert_with(|| {
            let mut kept = self.stored().unwrap_or_else(|| Saved {
                server_url: self.url.clone(),
                ..Saved::default()
            });
            self.options.hide(&kept.secrets());
            if self.options.fresh {
                kept.access_token = None;
                kept.refresh_token = None;
                kept.account = None;
                kept.refused = false;
            }
            kept
        })
    }

    /// The login in the store now, if it is this server's, and safe to use: its server and
    /// its token endpoint over TLS, or on this machine.
    fn stored(&self) -> Option<Saved> {
        let kept = self
            .options
            .store
            .as_ref()?
            .load(&self.config.kept_as(&self.name))?;
        let safe = |u: &str| {
            reqwest::Url::parse(u).is_ok_and(|u| u.scheme() == "https" || discovery::loopback(&u))
        };
        let usable = kept.server_url == self.url
            && safe(&kept.server_url)
            && kept.token_endpoint.as_deref().is_none_or(safe);
        usable.then_some(kept)
    }

    /// Takes up what another process (`kite serve` beside `kite ask`, say) kept since this
    /// one read the store: a newer token, before refreshing the old one.
    fn caught_up(&self, saved: &mut Saved) {
        // A new login takes up nothing kept before it.
        if self.options.fresh {
            return;
        }
        if let Some(kept) = self.stored()
            && !kept.refused
            && kept.access_token != saved.access_token
            && kept.obtained_ms > saved.obtained_ms
        {
            self.options.hide(&kept.secrets());
            *saved = kept;
        }
    }

    /// Whether `saved`'s token expires soon: within a minute, or half its life.
    fn expiring(saved: &Saved) -> bool {
        let Some(at) = saved.expires_at_ms else {
            return false;
        };
        let life = saved.obtained_ms.map_or(EARLY_MS * 2, |from| at - from);
        at - EARLY_MS.min(life / 2) <= now_ms()
    }

    fn keep(&self, saved: &Saved) {
        if let Some(store) = &self.options.store
            && let Err(e) = store.save(&self.config.kept_as(&self.name), saved)
        {
            tracing::warn!(server = %self.name, "its login cannot be kept: {e}");
        }
    }

    /// The token to send now, if there is one: refreshed first when about to expire.
    pub(crate) async fn bearer(&self) -> Option<String> {
        let mut slot = self.saved.lock().await;
        let saved = self.loaded(&mut slot);
        let due = saved.refused || (saved.access_token.is_some() && Self::expiring(saved));
        if due {
            self.caught_up(saved);
        }
        let due = saved.refused || (saved.access_token.is_some() && Self::expiring(saved));
        // A refresh that failed is not tried again for a while: each request would wait.
        let rested = now_ms() - self.refresh_failed_ms.load(Ordering::Relaxed) > REST_MS;
        if due && rested && saved.refresh_token.is_some() && self.refresh(saved).await.is_err() {
            self.refresh_failed_ms.store(now_ms(), Ordering::Relaxed);
        }
        saved.access_token.clone().filter(|_| !saved.refused)
    }

    /// A request with a token succeeded: the count of authorizations starts again.
    pub(crate) fn worked(&self) {
        self.authorizations.store(0, Ordering::Relaxed);
    }

    /// The server refused the request that carried `sent` with `header` (its
    /// `WWW-Authenticate`; `forbidden` for a 403): the token to send it again with.
    pub(crate) async fn challenged(
        &self,
        sent: Option<&str>,
        header: &str,
        forbidden: bool,
    ) -> Result<String, OAuthError> {
        let bearer = header.split(',').any(|challenge| {
            let scheme = challenge.split_whitespace().next().unwrap_or("");
            scheme.eq_ignore_ascii_case("bearer")
        });
        if !header.trim().is_empty() && !bearer {
            return Err(OAuthError::failed(format!(
                "it asks for {} authentication, which kite does not do: give it `headers`",
                discovery::cut(header.split_whitespace().next().unwrap_or("other"))
            )));
        }
        let challenge = Challenge::parse(header);
        let mut slot = self.saved.lock().await;
        let saved = self.loaded(&mut slot);
        self.caught_up(saved);
        // Another request got a new token meanwhile.
        if let Some(current) = &saved.access_token
            && !saved.refused
            && Some(current.as_str()) != sent
        {
            return Ok(current.clone());
        }
        if !forbidden && sent.is_some() && saved.refresh_token.is_some() {
            let rested = now_ms() - self.refresh_failed_ms.load(Ordering::Relaxed) > REST_MS;
            if !rested {
                return Err(OAuthError::failed(
                    "its authorization server could not be reached a moment ago",
                ));
            }
            match self.refresh(saved).await {
                Ok(token) => return Ok(token),
                // Refused: a new login, below.
                Err(OAuthError::InvalidGrant(_)) => {}
                // The authorization server is away: the login stays as it is.
                Err(e) => {
                    self.refresh_failed_ms.store(now_ms(), Ordering::Relaxed);
                    return Err(e);
                }
            }
        }
        if forbidden && sent.is_some() && challenge.scopes.iter().all(|s| saved.scopes.contains(s))
        {
            return Err(OAuthError::failed(format!(
                "the server refuses its token though it grants what it asks for ({}): \
                 another login will not do better",
                saved.scopes.join(" ")
            )));
        }
        if self.authorizations.fetch_add(1, Ordering::Relaxed) >= MAX_AUTHORIZATIONS {
            return Err(OAuthError::failed(format!(
                "the server refused {MAX_AUTHORIZATIONS} new tokens in a row: kite stops asking"
            )));
        }
        if sent.is_some() && !forbidden {
            saved.refused = true;
            self.keep(saved);
        }
        let token = self.authorize(saved, &challenge, forbidden).await?;
        self.keep(saved);
        Ok(token)
    }

    /// A new authorization, after `challenge`.
    async fn authorize(
        &self,
        saved: &mut Saved,
        challenge: &Challenge,
        forbidden: bool,
    ) -> Result<String, OAuthError> {
        let guard = discovery::discover(
            &self.http,
            &self.url,
            challenge.resource_metadata.as_deref(),
        )
        .await?;
        let mut scopes = if !challenge.scopes.is_empty() {
            challenge.scopes.clone()
        } else if !self.config.scopes.is_empty() {
            self.config.scopes.clone()
        } else {
            guard
                .resource
                .as_ref()
                .map(|r| r.scopes_supported.clone())
                .unwrap_or_default()
        };
        if forbidden {
            for s in &saved.scopes {
                if !scopes.contains(s) {
                    scopes.push(s.clone());
                }
            }
        }
        let Some(token_endpoint) = guard.server.token_endpoint.clone() else {
            return Err(OAuthError::failed(
                "its authorization server names no token endpoint",
            ));
        };
        // A client registered before is used again with the issuer it was registered with;
        // nothing of another issuer's (its refresh token least of all) goes to this one.
        let registered = match saved.issuer.as_deref() == Some(guard.server.issuer.as_str()) {
            true => saved
                .client_id
                .clone()
                .zip(saved.auth_method.clone())
                .zip(saved.redirect_uri.clone()),
            false => {
                saved.refresh_token = None;
                saved.client_id = None;
                saved.client_secret = None;
                saved.auth_method = None;
                saved.account = None;
                saved.scopes.clear();
                None
            }
        };
        if let Some(pinned) = &self.config.issuer
            && *pinned != guard.server.issuer
        {
            return Err(OAuthError::failed(format!(
                "its authorization server is {}, not the issuer kite.toml names ({pinned:?})",
                discovery::cut(&guard.server.issuer)
            )));
        }
        saved.issuer = Some(guard.server.issuer.clone());
        saved.token_endpoint = Some(token_endpoint.clone());
        saved.resource = guard.resource.as_ref().map(|r| r.resource.clone());
        let context = self.options.context.as_ref();
        let text = |k: &str| context.and_then(|c| c[k].as_str()).map(str::to_owned);
        let tokens = if let Some(id_token) = text("idp_id_token") {
            self.cross_app(&guard, &token_endpoint, &id_token, &scopes)
                .await?
        } else if self.config.grant == Grant::ClientCredentials {
            self.client_credentials(&guard, &token_endpoint, &scopes)
                .await?
        } else {
            self.authorization_code(saved, &guard, &token_endpoint, &mut scopes, registered)
                .await?
        };
        self.took(saved, tokens, scopes);
        saved
            .access_token
            .clone()
            .ok_or_else(|| OAuthError::failed("no token"))
    }

    /// The secret of client `id`: kite.toml's when it is that client, else the one kept.
    fn secret_of(&self, saved: &Saved, id: &str) -> Result<Option<String>, OAuthError> {
        match self.own_client()? {
            Some((own, secret)) if own == id => Ok(secret),
            _ => Ok(saved.client_secret.clone()),
        }
    }

    /// The client's id and secret, from kite.toml (`${VAR}` read from the environment) or
    /// the context.
    fn own_client(&self) -> Result<Option<(String, Option<String>)>, OAuthError> {
        let context = self.options.context.as_ref();
        let text = |k: &str| context.and_then(|c| c[k].as_str()).map(str::to_owned);
        let Some(id) = self.config.client_id.clone().or_else(|| text("client_id")) else {
            return Ok(None);
        };
        let secret = match &self.config.client_secret {
            Some(s) => Some(
                crate::child::expand(s)
                    .map_err(|e| OAuthError::failed(format!("its client_secret names {e}")))?,
            ),
            None => text("client_secret"),
        };
        Ok(Some((id, secret)))
    }
}
