//! Where a command's requests go and how long they may take: `--base-url`, `--cassette`,
//! `--timeout` and `--idle-timeout`, shared by the commands that call a provider.

use crate::config::{HttpConfig, seconds};
use clap::Args;
use kite::http::ReqwestTransport;
use kite::http::cassette::{Cassette, Mode, Rules};
use kite::{Api, Endpoint, Error, HttpModel};
use std::path::PathBuf;
use std::time::Duration;

#[derive(Args, Clone)]
pub(crate) struct EndpointArgs {
    /// Send requests here instead (llama.cpp, vLLM, Ollama, a proxy). Without --provider,
    /// the key is taken from KITE_API_KEY, if set.
    #[arg(long, env = "KITE_BASE_URL", value_parser = base_url)]
    pub base_url: Option<String>,
    /// Record the HTTP traffic into the cassette folder PATH, or replay it from there:
    /// KITE_CASSETTE=replay|record|auto (default auto: replay what is recorded, record
    /// what is missing).
    #[arg(long, value_name = "PATH")]
    pub cassette: Option<PathBuf>,
    /// Seconds to wait for an answer to start (default 600, and 60 for `kite serve`, whose
    /// clients wait meanwhile; or `timeout_secs` in kite.toml's [http]): reasoning models
    /// may think that long first.
    #[arg(long, value_name = "SECS", value_parser = seconds)]
    pub timeout: Option<Duration>,
    /// Seconds of silence allowed once an answer has started (default 120, or
    /// `idle_timeout_secs` in kite.toml's [http]).
    #[arg(long, value_name = "SECS", value_parser = seconds)]
    pub idle_timeout: Option<Duration>,
}

impl EndpointArgs {
    /// Where requests go and their deadlines: the base URL if given, through the cassette
    /// if given, with the flags' deadlines over those of `http`.
    pub(crate) fn endpoint(&self, http: &HttpConfig) -> Result<Endpoint, Error> {
        let timeouts = http.timeouts(self.timeout, self.idle_timeout);
        let endpoint = Endpoint {
            base_url: self.base_url.clone(),
            transport: None,
            timeouts: Some(timeouts),
        };
        let Some(path) = &self.cassette else {
            return Ok(endpoint);
        };
        let mode = Mode::from_env_or(Mode::Auto)?;
        let real = ReqwestTransport::shared()?.with_timeouts(timeouts);
        let recorder = Cassette::with_mode(path, mode, Rules::default(), real)?;
        Ok(endpoint.transport(recorder))
    }
}

/// `m`, a model of a server named only by `--base-url`, set up for `endpoint`: its key comes
/// from `KITE_API_KEY` only, so no provider's key is sent to a server it was not meant for.
pub(crate) fn compatible<A: Api + Clone>(
    mut m: HttpModel<A>,
    endpoint: &Endpoint,
) -> Result<HttpModel<A>, Error> {
    match std::env::var("KITE_API_KEY") {
        Ok(key) if !key.is_empty() => m = m.api_key(key),
        Err(std::env::VarError::NotUnicode(_)) => {
            return Err(Error::Config(
                "KITE_API_KEY is not UTF-8; a key is plain text: set it again".into(),
            ));
        }
        _ => {}
    }
    endpoint.carry(m)
}

/// A base URL as `--base-url` takes it: http or https, with a host (a mistake caught at the
/// start, not at every request).
fn base_url(s: &str) -> Result<String, String> {
    let hint = "give an http:// or https:// URL with a host, like http://127.0.0.1:8080/v1";
    let uri = http::Uri::try_from(s).map_err(|e| format!("not a URL ({e}); {hint}"))?;
    match (uri.scheme_str(), uri.host()) {
        (Some("http" | "https"), Some(host)) if !host.is_empty() => Ok(s.to_owned()),
        _ => Err(hint.to_owned()),
    }
}
