//! Approving a login with no person: the authorization URL is asked for and its redirect
//! read, for authorization servers that approve at once (test servers, the conformance
//! suite's); and reading a redirect back to kite, whichever way it came.

use super::{Approval, Authorizer};
use reqwest::Url;
use std::time::Duration;

/// Approves by asking the authorization URL itself and reading where it redirects.
pub struct Headless {
    http: reqwest::Client,
    redirect_uri: String,
}

impl Headless {
    /// One that gives `redirect_uri` as where the browser comes back.
    pub fn new(redirect_uri: impl Into<String>) -> Self {
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(Duration::from_secs(15))
            .build()
            .unwrap_or_default();
        Self {
            http,
            redirect_uri: redirect_uri.into(),
        }
    }
}

impl Authorizer for Headless {
    fn redirect_uri(&self) -> String {
        self.redirect_uri.clone()
    }

    fn approve<'a>(
        &'a self,
        _server: &'a str,
        url: &'a str,
    ) -> futures_util::future::BoxFuture<'a, Result<Approval, String>> {
        Box::pin(async move {
            let r = self
                .http
                .get(url)
                .send()
                .await
                .map_err(|e| format!("the authorization endpoint: {}", super::said(e)))?;
            let location = r
                .headers()
                .get(http::header::LOCATION)
                .and_then(|l| l.to_str().ok())
                .filter(|_| r.status().is_redirection())
                .ok_or_else(|| {
                    format!(
                        "the authorization endpoint answered {} with no redirect: it wants a \
                         person (use a browser)",
                        r.status().as_u16()
                    )
                })?;
            Approval::from_redirect(&self.redirect_uri, location)
        })
    }
}

impl Approval {
    /// The value of `key` in the query of `url`, if it has one.
    pub fn query_value(url: &str, key: &str) -> Option<String> {
        let url = Url::parse(url).ok()?;
        url.query_pairs()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.into_owned())
    }

    /// What came back to `expected` (kite's redirect URI) at `location`: refused when it is
    /// another place, or says the login was refused.
    pub fn from_redirect(expected: &str, location: &str) -> Result<Self, String> {
        let expected =
            Url::parse(expected).map_err(|_| "kite's redirect URI is no URL".to_owned())?;
        let came = Url::parse(location)
            .or_else(|_| expected.join(location))
            .map_err(|_| "the authorization server redirected to no URL".to_owned())?;
        let place = |u: &Url| format!("{}{}", u.origin().ascii_serialization(), u.path());
        if place(&came) != place(&expected) {
            return Err(format!(
                "the authorization server sent the browser to {}, not back to kite ({}): refused",
                place(&came),
                place(&expected)
            ));
        }
        let mut out = Approval::default();
        let (mut error, mut description) = (None, None);
        for (k, v) in came.query_pairs() {
            match k.as_ref() {
                "code" => out.code = v.into_owned(),
                "state" => out.state = Some(v.into_owned()),
                "iss" => out.iss = Some(v.into_owned()),
                "error" => error = Some(v.into_owned()),
                "error_description" => description = Some(v.chars().take(200).collect::<String>()),
                _ => {}
            }
        }
        if let Some(error) = error {
            return Err(match description {
                Some(d) => format!("the login was refused: {error}: {d}"),
                None => format!("the login was refused: {error}"),
            });
        }
        if out.code.is_empty() {
            return Err("the authorization server sent back no code".into());
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::Approval;

    #[test]
    fn a_redirect_is_taken_only_back_at_kite() {
        let back = "http://127.0.0.1:4000/callback";
        let a =
            Approval::from_redirect(back, "http://127.0.0.1:4000/callback?code=c&state=s&iss=i")
                .unwrap();
        assert_eq!(
            (a.code.as_str(), a.state.as_deref(), a.iss.as_deref()),
            ("c", Some("s"), Some("i"))
        );
        for (elsewhere, says) in [
            ("https://evil.example/callback?code=c", "evil.example"),
            ("http://127.0.0.1:4001/callback?code=c", "4001"),
            ("http://127.0.0.1:4000/other?code=c", "/other"),
            (
                "http://127.0.0.1:4000/callback?error=access_denied",
                "access_denied",
            ),
            ("http://127.0.0.1:4000/callback?state=s", "no code"),
        ] {
            let e = Approval::from_redirect(back, elsewhere).unwrap_err();
            assert!(e.contains(says), "{elsewhere}: {e}");
        }
    }
}
