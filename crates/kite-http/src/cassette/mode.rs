//! What a cassette does with a request: replay, record, or both.

use kite_core::Error;

/// What a cassette does with a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Only replay; a request with no recording is an error naming the file to record.
    Replay,
    /// Replay what is recorded, record what is missing.
    Auto,
    /// Record everything again, replacing the cassette.
    Record,
}

impl Mode {
    /// `replay`, `auto` or `record`.
    pub fn parse(s: &str) -> Result<Self, Error> {
        match s {
            "replay" => Ok(Self::Replay),
            "auto" => Ok(Self::Auto),
            "record" => Ok(Self::Record),
            other => Err(Error::Config(format!(
                "KITE_CASSETTE={other:?}; expected replay, auto or record"
            ))),
        }
    }

    /// The mode `KITE_CASSETTE` names; without it, `Replay` when `CI` is set, else `Auto`.
    pub fn from_env() -> Result<Self, Error> {
        let ci = std::env::var_os("CI").is_some();
        Self::from_env_or(if ci { Self::Replay } else { Self::Auto })
    }

    /// The mode `KITE_CASSETTE` names, or `default`.
    pub fn from_env_or(default: Self) -> Result<Self, Error> {
        match std::env::var("KITE_CASSETTE") {
            Ok(v) if !v.is_empty() => Self::parse(&v),
            _ => Ok(default),
        }
    }
}
