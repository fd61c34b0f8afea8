//! Grants with no person: the client's own credentials (a secret, or a JWT assertion
//! signed with its key), and cross-app access (an identity provider's ID token exchanged
//! for an ID-JAG, which the authorization server takes as a JWT bearer grant).

use super::super::OAuthError;
use super::super::discovery::Guard;
use super::super::grant::{self, AssertionKey, Client};
use super::Login;

impl Login {
    /// The client's own credentials: a secret, or an assertion signed with its key.
    pub(super) async fn client_credentials(
        &self,
        guard: &Guard,
        token_endpoint: &str,
        scopes: &[String],
    ) -> Result<grant::Tokens, OAuthError> {
        let Some((id, secret)) = self.own_client()? else {
            return Err(OAuthError::failed(
                "client_credentials needs a client_id in [mcp.servers.NAME.oauth]",
            ));
        };
        let context = self.options.context.as_ref();
        let pem = match (&self.config.private_key_file, context) {
            (Some(path), _) => Some(std::fs::read_to_string(path).map_err(|e| {
                OAuthError::failed(format!("the client's key {}: {e}", path.display()))
            })?),
            (None, Some(c)) => c["private_key_pem"].as_str().map(str::to_owned),
            (None, None) => None,
        };
        let key = pem.map(AssertionKey);
        let client = match (&key, secret) {
            (Some(_), _) => Client {
                id,
                secret: None,
                method: "private_key_jwt".into(),
            },
            (None, Some(secret)) => Client {
                method: grant::method_for(&guard.server, true),
                id,
                secret: Some(secret),
            },
            (None, None) => {
                return Err(OAuthError::failed(
                    "client_credentials needs a client_secret or a private_key_file",
                ));
            }
        };
        let mut params = vec![("grant_type", "client_credentials".to_owned())];
        if !scopes.is_empty() {
            params.push(("scope", scopes.join(" ")));
        }
        if let Some(r) = &guard.resource {
            params.push(("resource", r.resource.clone()));
        }
        let issuer = guard.server.issuer.as_str();
        let signed = key.as_ref().map(|k| (k, issuer));
        grant::token(&self.http, token_endpoint, &client, params, signed).await
    }

    /// Cross-app access: the identity provider's ID token exchanged for an ID-JAG
    /// (RFC 8693), which the authorization server takes as a JWT bearer grant (RFC 7523).
    pub(super) async fn cross_app(
        &self,
        guard: &Guard,
        token_endpoint: &str,
        id_token: &str,
        scopes: &[String],
    ) -> Result<grant::Tokens, OAuthError> {
        let context = self.options.context.as_ref();
        let text = |k: &str| context.and_then(|c| c[k].as_str()).map(str::to_owned);
        let Some(idp_endpoint) = text("idp_token_endpoint") else {
            return Err(OAuthError::failed(
                "cross-app access needs the identity provider's token endpoint",
            ));
        };
        let Some((id, secret)) = self.own_client()? else {
            return Err(OAuthError::failed("cross-app access needs a client_id"));
        };
        let idp_client = Client {
            id: text("idp_client_id").unwrap_or_else(|| id.clone()),
            secret: None,
            method: "none".into(),
        };
        let mut params = vec![
            (
                "grant_type",
                "urn:ietf:params:oauth:grant-type:token-exchange".to_owned(),
            ),
            ("subject_token", id_token.to_owned()),
            (
                "subject_token_type",
                "urn:ietf:params:oauth:token-type:id_token".to_owned(),
            ),
            (
                "requested_token_type",
                "urn:ietf:params:oauth:token-type:id-jag".to_owned(),
            ),
            ("audience", guard.server.issuer.clone()),
        ];
        if let Some(r) = &guard.resource {
            params.push(("resource", r.resource.clone()));
        }
        if !scopes.is_empty() {
            params.push(("scope", scopes.join(" ")));
        }
        let jag = grant::token_exchange(&self.http, &idp_endpoint, &idp_client, params).await?;
        let client = Client {
            method: grant::method_for(&guard.server, secret.is_some()),
            id,
            secret,
        };
        let params = vec![
            (
                "grant_type",
                "urn:ietf:params:oauth:grant-type:jwt-bearer".to_owned(),
            ),
            ("assertion", jag),
        ];
        grant::token(&self.http, token_endpoint, &client, params, None).await
    }
}
