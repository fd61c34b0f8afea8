//! Where a model is, for `gen_ai.provider.name`, `server.address` and `server.port`.

/// The provider name of kite's embedded local model: it runs on this machine, and costs
/// nothing whatever it did.
pub const LOCAL_PROVIDER: &str = "kite_local";

/// Where a model is: the provider's name as the conventions spell it (`openai`,
/// `anthropic`, `mistral_ai`, `groq`, `openrouter`, ...), and the server's host and port
/// when it is reached over the network.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Origin {
    /// `gen_ai.provider.name`.
    pub provider: String,
    /// `server.address`: the host alone, never a path, query or credentials.
    pub address: Option<String>,
    /// `server.port`.
    pub port: Option<u16>,
}

impl Origin {
    /// A provider reached at `url` (only its host and port are kept).
    pub fn at(provider: impl Into<String>, url: &str) -> Self {
        let (address, port) = host_and_port(url);
        Self {
            provider: provider.into(),
            address,
            port,
        }
    }

    /// A model in this process.
    pub fn local(provider: impl Into<String>) -> Self {
        Self {
            provider: provider.into(),
            ..Self::default()
        }
    }
}

/// The host and port of `url` (`https://user:pw@host:8443/v1?k=x` gives `host`, 8443).
pub(super) fn host_and_port(url: &str) -> (Option<String>, Option<u16>) {
    let Some((scheme, rest)) = url.split_once("://") else {
        return (None, None);
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let host_port = authority.rsplit('@').next().unwrap_or_default();
    let (host, port) = match host_port.rsplit_once(':') {
        Some((h, p)) if !h.ends_with(']') || host_port.starts_with('[') => match p.parse() {
            Ok(p) => (h, Some(p)),
            Err(_) => (host_port, None),
        },
        _ => (host_port, None),
    };
    let port = port.or(match scheme {
        "https" => Some(443),
        "http" => Some(80),
        _ => None,
    });
    let host = host.trim_start_matches('[').trim_end_matches(']');
    ((!host.is_empty()).then(|| host.to_owned()), port)
}
