//! Where a command's requests go: `--base-url` and `--cassette`, shared by the commands that
//! call a provider.

use clap::Args;
use kite::http::ReqwestTransport;
use kite::http::cassette::{Cassette, Mode, Rules};
use kite::{Endpoint, Error, HttpModel, Service};
use std::path::PathBuf;

#[derive(Args)]
pub struct EndpointArgs {
    /// Send requests here instead (llama.cpp, vLLM, Ollama, a proxy). Without --provider,
    /// the key is taken from KITE_API_KEY, if set.
    #[arg(long, env = "KITE_BASE_URL")]
    pub base_url: Option<String>,
    /// Record the HTTP traffic into the cassette folder PATH, or replay it from there:
    /// KITE_CASSETTE=replay|record|auto (default auto: replay what is recorded, record
    /// what is missing).
    #[arg(long, value_name = "PATH")]
    pub cassette: Option<PathBuf>,
}

impl EndpointArgs {
    /// Where requests go: the base URL if given, through the cassette if given.
    pub fn endpoint(&self) -> Result<Endpoint, Error> {
        let endpoint = Endpoint {
            base_url: self.base_url.clone(),
            transport: None,
        };
        let Some(path) = &self.cassette else {
            return Ok(endpoint);
        };
        let mode = Mode::from_env_or(Mode::Auto)?;
        let recorder =
            Cassette::with_mode(path, mode, Rules::default(), ReqwestTransport::shared()?)?;
        Ok(endpoint.transport(recorder))
    }
}

/// `m`, a model of a server named only by `--base-url`, set up for `endpoint`: its key comes
/// from `KITE_API_KEY` only, so no provider's key is sent to a server it was not meant for.
pub fn compatible<A: Service + Clone>(mut m: HttpModel<A>, endpoint: &Endpoint) -> HttpModel<A> {
    if let Ok(key) = std::env::var("KITE_API_KEY")
        && !key.is_empty()
    {
        m = m.api_key(key);
    }
    match &endpoint.transport {
        Some(t) => m.transport(t.clone()),
        None => m,
    }
}
