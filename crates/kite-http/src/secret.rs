//! A secret string (API key, bearer token) that never prints.

/// Holds a secret. `Debug` and `Display` print `[redacted]`; [`Secret::redact`] removes the
/// secret from text that may have echoed it (provider error messages do).
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Wraps a secret.
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    /// The secret itself, for the one place that must send it.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// `text` with every occurrence of the secret replaced by `[redacted]`.
    pub fn redact(&self, text: &str) -> String {
        redact_all(text, std::slice::from_ref(&self.0))
    }
}

pub use kite_core::redact::redact_all;

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("[redacted]")
    }
}

impl std::fmt::Display for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("[redacted]")
    }
}
