//! The grant with a person: who kite is to the authorization server (pre-registered, a
//! client registered before for the same redirect URI, its Client ID Metadata Document, or
//! registered now), the authorization URL with PKCE, the person's approval (its `state` and
//! `iss` checked), and the code exchanged for tokens.

use super::super::discovery::{self, Guard};
use super::super::grant::{self, Client};
use super::super::{CLIENT_METADATA_URL, OAuthError, Saved};
use super::{APPROVAL, Login, Registered};

impl Login {
    /// A person approves, in a browser.
    pub(super) async fn authorization_code(
        &self,
        saved: &mut Saved,
        guard: &Guard,
        token_endpoint: &str,
        scopes: &mut Vec<String>,
        registered: Option<Registered>,
    ) -> Result<grant::Tokens, OAuthError> {
        let meta = &guard.server;
        let authorizer = self
            .options
            .authorizer
            .clone()
            .ok_or_else(|| OAuthError::NeedsLogin(self.config.login_args(&self.name)))?;
        let s256 = meta
            .code_challenge_methods_supported
            .as_ref()
            .is_some_and(|m| m.iter().any(|m| m == "S256"));
        if !s256 && guard.from_metadata {
            return Err(OAuthError::failed(
                "its authorization server does not offer PKCE with S256, without which kite \
                 does not log in",
            ));
        }
        if !scopes.is_empty()
            && meta.scopes_supported.iter().any(|s| s == "offline_access")
            && !scopes.iter().any(|s| s == "offline_access")
        {
            scopes.push("offline_access".into());
        }
        let redirect = authorizer.redirect_uri();
        let client = self.client(saved, meta, &redirect, registered).await?;
        let Some(endpoint) = &meta.authorization_endpoint else {
            return Err(OAuthError::failed(
                "its authorization server names no authorization endpoint",
            ));
        };
        let (verifier, challenge) = grant::pkce()?;
        let state = grant::random(16)?;
        let mut url = reqwest::Url::parse(endpoint)
            .map_err(|_| OAuthError::failed("its authorization endpoint is no URL"))?;
        {
            let mut q = url.query_pairs_mut();
            q.append_pair("response_type", "code")
                .append_pair("client_id", &client.id)
                .append_pair("redirect_uri", &redirect)
                .append_pair("code_challenge", &challenge)
                .append_pair("code_challenge_method", "S256")
                .append_pair("state", &state);
            if !scopes.is_empty() {
                q.append_pair("scope", &scopes.join(" "));
            }
            if let Some(r) = &saved.resource {
                q.append_pair("resource", r);
            }
        }
        let approval = match tokio::time::timeout(
            APPROVAL,
            authorizer.approve(&self.name, url.as_str()),
        )
        .await
        {
            Ok(Ok(a)) => a,
            Ok(Err(e)) => return Err(OAuthError::failed(format!("the login failed: {e}"))),
            Err(_) => {
                return Err(OAuthError::failed(format!(
                    "the login was not approved within {} minutes",
                    APPROVAL.as_secs() / 60
                )));
            }
        };
        self.options
            .hide(&[approval.code.clone(), verifier.clone()]);
        if approval.state.as_deref() != Some(state.as_str()) {
            return Err(OAuthError::failed(
                "the answer to the login is not for the login kite asked (its state differs)",
            ));
        }
        match (
            &approval.iss,
            meta.authorization_response_iss_parameter_supported,
        ) {
            (Some(iss), _) if *iss != meta.issuer => {
                return Err(OAuthError::failed(format!(
                    "the login was answered by {}, not by {}",
                    discovery::cut(iss),
                    discovery::cut(&meta.issuer)
                )));
            }
            (None, true) => {
                return Err(OAuthError::failed(
                    "its authorization server names itself in its answers (iss), but did not",
                ));
            }
            _ => {}
        }
        let mut params = vec![
            ("grant_type", "authorization_code".to_owned()),
            ("code", approval.code),
            ("redirect_uri", redirect),
            ("code_verifier", verifier),
        ];
        if let Some(r) = &saved.resource {
            params.push(("resource", r.clone()));
        }
        grant::token(&self.http, token_endpoint, &client, params, None).await
    }

    /// Who kite is to the authorization server: pre-registered, `registered` before with
    /// it (for this redirect URI), its Client ID Metadata Document, or registered now.
    async fn client(
        &self,
        saved: &mut Saved,
        meta: &discovery::ServerMetadata,
        redirect: &str,
        registered: Option<Registered>,
    ) -> Result<Client, OAuthError> {
        let registered = registered.filter(|(_, uri)| uri == redirect);
        let client = if let Some((id, secret)) = self.own_client()? {
            let method = grant::method_for(meta, secret.is_some());
            Client { id, secret, method }
        } else if let Some(((id, method), _)) = registered {
            Client {
                id,
                secret: saved.client_secret.clone(),
                method,
            }
        } else if meta.client_id_metadata_document_supported {
            let id = self
                .options
                .client_metadata_url
                .clone()
                .unwrap_or_else(|| CLIENT_METADATA_URL.to_owned());
            Client {
                id,
                secret: None,
                method: "none".into(),
            }
        } else {
            let client = grant::register(&self.http, meta, redirect).await?;
            saved.redirect_uri = Some(redirect.to_owned());
            client
        };
        saved.client_id = Some(client.id.clone());
        // A secret from kite.toml stays there, read again each time; a registered one is kept.
        saved.client_secret = match self.own_client()? {
            Some(_) => None,
            None => client.secret.clone(),
        };
        saved.auth_method = Some(client.method.clone());
        if let Some(secret) = &client.secret {
            self.options.hide(std::slice::from_ref(secret));
        }
        Ok(client)
    }
}
