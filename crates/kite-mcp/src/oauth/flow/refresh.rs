//! Renewing a login: the refresh grant (a refresh token refused is dropped, unless another
//! process rotated it first), and what a token endpoint gave written into the login.

use super::super::grant::{self, Client};
use super::super::{OAuthError, Saved};
use super::{Login, now_ms};
use std::time::Duration;

impl Login {
    /// A new token from the refresh token (and none kept when it is refused).
    pub(super) async fn refresh(&self, saved: &mut Saved) -> Result<String, OAuthError> {
        let (Some(endpoint), Some(refresh), Some(id)) = (
            saved.token_endpoint.clone(),
            saved.refresh_token.clone(),
            saved.client_id.clone(),
        ) else {
            return Err(OAuthError::failed("nothing to refresh"));
        };
        let client = Client {
            secret: self.secret_of(saved, &id)?,
            id,
            method: saved.auth_method.clone().unwrap_or_else(|| "none".into()),
        };
        let mut params = vec![
            ("grant_type", "refresh_token".into()),
            ("refresh_token", refresh),
        ];
        if let Some(r) = &saved.resource {
            params.push(("resource", r.clone()));
        }
        match grant::token(&self.http, &endpoint, &client, params, None).await {
            Ok(tokens) => {
                let scopes = saved.scopes.clone();
                self.took(saved, tokens, scopes);
                self.keep(saved);
                saved
                    .access_token
                    .clone()
                    .ok_or_else(|| OAuthError::failed("no token"))
            }
            // Only a refresh token refused is dropped (unless another process refreshed it
            // first); a failure to reach the server leaves the login as it was.
            Err(e @ OAuthError::InvalidGrant(_)) => {
                // Another process may have taken the same refresh token a moment before,
                // and be about to keep what it got: it is waited for, two seconds at most.
                let mut now = self.stored();
                for _ in 0..10 {
                    if let Some(kept) = &now
                        && kept.refresh_token != saved.refresh_token
                        && !kept.refused
                        && let Some(token) = kept.access_token.clone()
                    {
                        self.options.hide(&kept.secrets());
                        *saved = kept.clone();
                        return Ok(token);
                    }
                    tokio::time::sleep(Duration::from_millis(200)).await;
                    now = self.stored();
                }
                tracing::info!(server = %self.name, "its refresh token was refused: {e}");
                // What is kept is dropped only while it still holds the token refused.
                let still = now.is_none_or(|k| k.refresh_token == saved.refresh_token);
                saved.access_token = None;
                saved.refresh_token = None;
                if still {
                    self.keep(saved);
                }
                Err(e)
            }
            Err(e) => {
                tracing::info!(server = %self.name, "its token could not be refreshed: {e}");
                Err(e)
            }
        }
    }

    /// Writes what the token endpoint gave into `saved`.
    pub(super) fn took(&self, saved: &mut Saved, tokens: grant::Tokens, asked: Vec<String>) {
        if let Some(account) = tokens.account() {
            saved.account = Some(account);
        }
        saved.access_token = Some(tokens.access_token);
        if tokens.refresh_token.is_some() {
            saved.refresh_token = tokens.refresh_token;
        }
        // All of the login's secrets, told again: each stays hidden while in use.
        self.options.hide(&saved.secrets());
        let now = now_ms();
        saved.obtained_ms = Some(now);
        // A lifetime past a year is taken as a year.
        saved.expires_at_ms = tokens
            .expires_in
            .map(|s| now.saturating_add(s.min(365 * 86_400) as i64 * 1000));
        saved.scopes = match tokens.scope {
            Some(s) => s.split_whitespace().map(str::to_owned).collect(),
            None => asked,
        };
        saved.refused = false;
    }
}
