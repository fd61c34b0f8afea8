//! Providers of the user's own: a `[providers.NAME]` table under a name kite does not know
//! is an OpenAI-compatible server (vLLM, llama.cpp's server, a company's gateway, a service
//! kite has no name for), reached at its `base_url`, its key read from the variable
//! `key_env`, with `headers` and `query` parameters sent with every request (`${VAR}` in a
//! value takes the variable's value). `--provider NAME`, `[defaults] provider` and a
//! route's `provider` name it as they name kite's own providers.
//!
//! Its key, and every header value, is as secret as a provider's key: kept out of logs,
//! errors, cassettes and answers; a query value is too when it looks like one.

use crate::config::settings::ProviderDefaults;
use kite::wire::openai_chat::Dialect;
use kite::{Endpoint, Error, OpenAiCompatible};

/// Whether `name` may name a provider of the user's own (lowercase letters, digits, `-`,
/// `_` and `.`, at most 64), said as an error.
pub(crate) fn check_name(name: &str) -> Result<(), String> {
    let fits = name != "local"
        && !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "-_.".contains(c));
    match fits {
        true => Ok(()),
        false => Err(format!(
            "{:?} is not a provider: name one of kite's ({}), `local`, or one of yours from \
             kite.toml's [providers.NAME] (lowercase letters, digits, -, _ and .)",
            crate::terminal::text::printable(name),
            kite::Provider::ALL.map(|p| p.name()).join(", ")
        )),
    }
}

/// Refuses a `[providers.NAME]` table that could not work as written: one of the user's
/// own with no `base_url`, or one of kite's providers given what only the user's own take.
pub(crate) fn check(name: &str, own: &ProviderDefaults) -> Result<(), String> {
    if let Ok(p) = kite::Provider::parse(name) {
        if own.key_env.is_some() || !own.headers.is_empty() || !own.query.is_empty() {
            return Err(format!(
                "[providers.{name}]: key_env, headers and query are for a provider of your \
                 own; {name}'s key is {} (name your gateway as a provider of its own to send it \
                 more)",
                p.key_var()
            ));
        }
        return Ok(());
    }
    check_name(name).map_err(|e| format!("[providers.{name}]: {e}"))?;
    if own.base_url.is_none() {
        return Err(format!(
            "[providers.{name}]: kite knows no provider {name:?} ({}); one of your own needs \
             base_url, the address of an OpenAI-compatible server",
            kite::Provider::ALL.map(|p| p.name()).join(", ")
        ));
    }
    Ok(())
}

/// Provider `name`'s model API, at `endpoint`'s base URL (`--base-url`) else its own, with
/// its key, headers and query parameters.
pub(crate) fn model(
    name: &str,
    own: &ProviderDefaults,
    endpoint: &Endpoint,
) -> Result<OpenAiCompatible, Error> {
    let context = |e: String| Error::Config(format!("[providers.{name}]: {e}"));
    let base = endpoint
        .base_url
        .as_deref()
        .or(own.base_url.as_deref())
        .ok_or_else(|| context("no base_url".into()))?;
    let mut m = OpenAiCompatible::new(base, Dialect::Compatible);
    if let Some(var) = &own.key_env {
        let key = std::env::var(var)
            .ok()
            .filter(|k| !k.trim().is_empty())
            .ok_or_else(|| context(format!("key_env names {var}, which is not set")))?;
        crate::terminal::secrets::secret(&key);
        m = m.api_key(key);
    }
    for (header, value) in &own.headers {
        let value = kite::mcp::expand_env(value).map_err(|e| context(format!("headers: {e}")))?;
        crate::terminal::secrets::secret(&value);
        m = m
            .with_header(header, &value)
            .map_err(|e| context(e.to_string()))?;
    }
    for (param, value) in &own.query {
        let value = kite::mcp::expand_env(value).map_err(|e| context(format!("query: {e}")))?;
        if kite::mcp::looks_secret(param, &value) {
            crate::terminal::secrets::secret(&value);
        }
        m = m.query(param, &value);
    }
    endpoint.carry(m)
}
