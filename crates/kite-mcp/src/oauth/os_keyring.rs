//! Logins kept in the OS keyring (feature `keyring`): keyring-rs chooses the platform's
//! store, the Secret Service over D-Bus on Linux and the BSDs.

use super::{Saved, TokenStore};

/// Logins kept in the OS keyring: the Secret Service (over D-Bus), the macOS Keychain or
/// Windows' Credential Manager, one entry per server (`kite-mcp`, the server's name).
pub struct KeyringTokens;

impl KeyringTokens {
    /// The keyring, when one answers (a Secret Service on the session bus, say).
    pub fn open() -> Option<Self> {
        keyring::Entry::store_status().as_ref().ok()?;
        // A store that answers a read: an entry that is not there is an answer.
        let probe = keyring::Entry::new(SERVICE, "kite-probe").ok()?;
        match probe.get_password() {
            Ok(_) | Err(keyring::Error::NoEntry) => Some(Self),
            Err(e) => {
                tracing::debug!("the OS keyring does not answer: {e}");
                None
            }
        }
    }
}

/// The keyring service kite's logins are kept under.
const SERVICE: &str = "kite-mcp";

impl TokenStore for KeyringTokens {
    fn place(&self) -> String {
        "the OS keyring".into()
    }

    fn load(&self, server: &str) -> Option<Saved> {
        let text = keyring::Entry::new(SERVICE, server)
            .ok()?
            .get_password()
            .ok()?;
        super::store::read(server, &text)
    }

    fn save(&self, server: &str, saved: &Saved) -> Result<(), String> {
        let text = serde_json::to_string(saved).map_err(|e| e.to_string())?;
        keyring::Entry::new(SERVICE, server)
            .and_then(|e| e.set_password(&text))
            .map_err(|e| format!("the OS keyring: {e}"))
    }

    fn clear(&self, server: &str) -> Result<bool, String> {
        let entry = keyring::Entry::new(SERVICE, server).map_err(|e| e.to_string())?;
        match entry.delete_credential() {
            Ok(()) => Ok(true),
            Err(keyring::Error::NoEntry) => Ok(false),
            Err(e) => Err(format!("the OS keyring: {e}")),
        }
    }
}
