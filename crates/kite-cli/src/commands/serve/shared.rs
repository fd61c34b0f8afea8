//! What a gateway shares with other replicas: the store (the web chat's conversations,
//! each key's apart; the keys of `kite keys`; the ledger; stored responses), Redis (rate
//! limits, and the response cache when on), each set up as kite.toml and the environment
//! say, with a word at start for what holds per replica only.

use crate::terminal::output::errln;
use kite::serve::Gateway;
use std::sync::Arc;

/// What sharing is made of.
pub(super) struct Sharing<'a> {
    pub settings: &'a crate::config::settings::ServeConfig,
    pub store: &'a crate::config::StoreConfig,
    pub no_store: bool,
    /// Keys are given in kite.toml (or the environment, or flags).
    pub kite_toml_keys: bool,
    /// Admin keys are set.
    pub admin_keys: bool,
    pub no_auth: bool,
    pub redis_url: Option<&'a str>,
}

/// `gateway` sharing what `s` says; and whether the store holds keys (then callers give
/// those, and no token).
pub(super) async fn share(mut gateway: Gateway, s: Sharing<'_>) -> Result<(Gateway, bool), String> {
    let (mut shared_store, mut store_keys) = (false, false);
    if !s.no_store {
        // One store for everything: the web chat's conversations (each key's apart), the
        // keys of `kite keys`, the ledger, stored responses.
        let backend = crate::session::history::open_backend(s.store)
            .await
            .map_err(|e| e.to_string())?;
        shared_store = backend.is_shared();
        if !s.kite_toml_keys {
            gateway = gateway.store(Arc::from(backend.store()));
        }
        let fleet = backend.fleet();
        let owned: kite::serve::Conversations = Arc::new(move |owner| backend.owned_by(owner));
        gateway = gateway.fleet(fleet, Some(owned));
        if let Err(e) = gateway.refresh().await {
            return Err(format!(
                "cannot read the gateway's keys from the store: {e}"
            ));
        }
        store_keys = gateway.has_keys();
        if store_keys && s.no_auth {
            return Err(
                "--no-auth is for a gateway with no client key, and the store holds keys \
                 (kite keys list)"
                    .into(),
            );
        }
    } else if s.admin_keys {
        errln!("kite: [serve] admin_keys need a store (not --no-store): the admin API is off");
    }
    match s.redis_url {
        Some(url) => {
            let policy = match s.settings.limits_unavailable {
                crate::config::settings::LimitsUnavailable::Deny => kite::serve::Unavailable::Deny,
                crate::config::settings::LimitsUnavailable::Allow => {
                    kite::serve::Unavailable::Allow
                }
            };
            gateway = gateway.redis(url, policy)?;
            if let Err(why) = gateway.check_redis().await {
                errln!(
                    "kite: Redis does not answer ({why}): rate limits are {} until it does",
                    match policy {
                        kite::serve::Unavailable::Deny => "refusing requests",
                        kite::serve::Unavailable::Allow => "held per replica",
                    }
                );
            }
        }
        None if shared_store && s.settings.cache.is_some() => errln!(
            "kite: the store is shared but no Redis is set (KITE_REDIS_URL or [serve] \
             redis_url): rate limits and the cache hold per replica"
        ),
        None if shared_store => errln!(
            "kite: the store is shared but no Redis is set (KITE_REDIS_URL or [serve] \
             redis_url): rate limits hold per replica"
        ),
        None => {}
    }
    // The store's and Redis's passwords are known now: no answer carries them either.
    gateway = gateway.secrets(crate::terminal::secrets::known().clone());
    if let Some(c) = &s.settings.cache {
        let defaults = kite::serve::CacheSettings::default();
        let cache = kite::serve::CacheSettings {
            ttl: c
                .ttl_secs
                .map_or(defaults.ttl, std::time::Duration::from_secs),
            max_entry_bytes: c.max_entry_bytes.unwrap_or(defaults.max_entry_bytes),
            max_bytes: c.max_bytes.unwrap_or(defaults.max_bytes),
            scope: match c.scope {
                crate::config::settings::CacheScope::Key => kite::serve::CacheScope::Key,
                crate::config::settings::CacheScope::Shared => kite::serve::CacheScope::Shared,
            },
        };
        gateway = gateway
            .cache(cache)
            .map_err(|e| format!("[serve.cache] {e}"))?;
    }
    Ok((gateway, store_keys))
}
