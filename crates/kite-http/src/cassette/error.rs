//! Why a cassette failed, as a typed error carried in [`kite_core::Error::Other`].

use kite_core::Error;

/// A cassette could not replay or record a call: the request drifted from the recording,
/// has no recording, or holds a secret, or the cassette cannot be read or written.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct CassetteError {
    /// What kind of failure.
    pub kind: CassetteErrorKind,
    /// What happened and what to do, with the cassette's folder.
    pub message: String,
}

/// Why a cassette failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum CassetteErrorKind {
    /// The request differs from the recording (the message holds a diff).
    Drift,
    /// Nothing is recorded for the request, and the mode does not allow recording.
    Missing,
    /// Recording was refused: something in the exchange looks like a key.
    Secret,
    /// The cassette cannot be read or written.
    Io,
    /// The cassette is not one this kite can use: an unknown format version, or a body
    /// that is not a plain file inside the cassette's folder.
    Invalid,
}

impl CassetteErrorKind {
    /// Its name: `drift`, `missing`, `secret`, `io` or `invalid`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Drift => "drift",
            Self::Missing => "missing",
            Self::Secret => "secret",
            Self::Io => "io",
            Self::Invalid => "invalid",
        }
    }
}

impl CassetteError {
    /// The cassette error `e` carries, if it is one.
    pub fn of(e: &Error) -> Option<&CassetteError> {
        match e {
            Error::Other(inner) => inner.downcast_ref(),
            _ => None,
        }
    }
}

impl From<CassetteError> for Error {
    fn from(e: CassetteError) -> Self {
        Error::other(e)
    }
}

/// A cassette error of `kind`, as a kite error.
pub(crate) fn cassette_error(kind: CassetteErrorKind, message: impl Into<String>) -> Error {
    CassetteError {
        kind,
        message: message.into(),
    }
    .into()
}
