//! Client keys: kept as SHA-256 digests and compared in constant time (every key is
//! compared, so the time taken says nothing of which one matched), each with its limits
//! (`limits.rs`) and its usage so far; and the keys made by `kite keys create`, found by
//! digest in the store's table (`registry.rs`). With no key, a token of the gateway's
//! own (made at start, as Jupyter does) is asked of every caller instead, in a header or
//! in the cookie the web chat's first visit sets.

use crate::limits::{Limits, Subject};
use axum::http::{HeaderMap, header};
use kite_store::Store;
use kite_store::fleet::Budget;
use sha2::{Digest, Sha256};
use std::sync::{Arc, Mutex};
use subtle::ConstantTimeEq;

/// What one key (or, with no keys, everyone) has used since the gateway started.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
pub struct KeyUsage {
    /// Requests admitted.
    pub requests: u64,
    /// Input and output tokens.
    pub tokens: u64,
    /// Input tokens.
    pub input_tokens: u64,
    /// Output tokens.
    pub output_tokens: u64,
    /// What the answers cost in US dollars, as far as their prices are known.
    pub cost: f64,
    /// Answers whose price is not known (not in `cost`).
    pub unpriced: u64,
}

/// What one answer used, counted against its caller.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Spent {
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cost: f64,
    /// The first news of an answer whose price is not known.
    pub unpriced: bool,
}

/// A key the gateway takes: from kite.toml, or made by `kite keys create` and kept in the
/// store (then with a team, a budget, models and an end, perhaps).
pub(crate) struct Key {
    /// Its id in the ledger: `cfg_` and the start of its digest for a key of kite.toml,
    /// the store's id for one made by `kite keys create`.
    pub id: String,
    /// How `/metrics` names it: by place for a key of kite.toml (`key-1`; a digest's start
    /// would let a weak key be guessed), by its name for one of the store.
    pub label: String,
    pub digest: [u8; 32],
    pub limits: Limits,
    pub team: Option<String>,
    pub budget: Option<Budget>,
    /// The models it may ask for (empty: any).
    pub models: Vec<String>,
    /// The largest body it may send and what it may keep (unset: the gateway's).
    pub sizes: crate::allowance::Sizes,
    /// When it stops working (Unix milliseconds).
    pub expires_ms: Option<i64>,
    /// Where the web chat keeps this key's conversations, apart from every other key's.
    pub store: Option<Arc<dyn Store>>,
    /// What it has used since the gateway started.
    pub used: Mutex<KeyUsage>,
}

impl Key {
    /// A key of kite.toml.
    fn configured(key: &str, place: usize, limits: Limits) -> Self {
        let digest: [u8; 32] = Sha256::digest(key.as_bytes()).into();
        Self {
            id: format!("cfg_{}", crate::ids::hex(&digest[..8])),
            label: format!("key-{}", place + 1),
            digest,
            limits,
            team: None,
            budget: None,
            models: Vec::new(),
            sizes: crate::allowance::Sizes::default(),
            expires_ms: None,
            store: None,
            used: Mutex::default(),
        }
    }

    /// The limits a request of this key must fit: its own, then its team's.
    pub(crate) fn subjects(&self, team: Option<Limits>) -> Vec<Subject> {
        let mut subjects = vec![Subject {
            id: format!("key:{}", self.id),
            limits: self.limits,
        }];
        if let (Some(name), Some(limits)) = (&self.team, team) {
            subjects.push(Subject {
                id: format!("team:{name}"),
                limits,
            });
        }
        subjects
    }

    /// Whether it may ask for the model `name`.
    pub(crate) fn may_use(&self, name: &str) -> bool {
        self.models.is_empty() || self.models.iter().any(|m| m == name)
    }
}

/// The keys clients may use, and what is used when none is set.
#[derive(Default)]
pub(crate) struct Keys {
    keys: Vec<Arc<Key>>,
    /// What callers used when no key is set.
    open: Mutex<KeyUsage>,
    /// With no key, the digest of the token every caller must give (none: anyone on
    /// loopback is let in).
    token: Option<[u8; 32]>,
    /// Keys made by `kite keys create`, kept in the store.
    pub(crate) registry: Option<Arc<crate::registry::Registry>>,
}

/// The cookie that carries the token for a gateway on `port` (cookies are shared by every
/// port of a host, so each port has its own).
pub(crate) fn cookie_name(port: &str) -> String {
    format!("kite-token-{port}")
}

impl Spent {
    /// What `usage` reports, at `cost` (none: its price is not known).
    pub(crate) fn of(usage: &kite_core::Usage, cost: Option<f64>) -> Self {
        Self {
            input_tokens: usage.input_tokens,
            output_tokens: usage.output_tokens,
            cost: cost.unwrap_or(0.0),
            unpriced: cost.is_none(),
        }
    }

    /// What this report of an answer adds to `counted`, what its earlier reports came to
    /// (a provider may report an answer's whole usage more than once): an unknown price is
    /// said once per answer.
    pub(crate) fn beyond(&self, counted: &Spent) -> Spent {
        Spent {
            input_tokens: self.input_tokens.saturating_sub(counted.input_tokens),
            output_tokens: self.output_tokens.saturating_sub(counted.output_tokens),
            cost: (self.cost - counted.cost).max(0.0),
            unpriced: self.unpriced && !counted.unpriced,
        }
    }

    /// The most of each count in `self` and `other`.
    pub(crate) fn most(self, other: Spent) -> Spent {
        Spent {
            input_tokens: self.input_tokens.max(other.input_tokens),
            output_tokens: self.output_tokens.max(other.output_tokens),
            cost: self.cost.max(other.cost),
            unpriced: self.unpriced || other.unpriced,
        }
    }
}

/// Who a request comes from.
#[derive(Clone)]
pub(crate) enum Caller {
    /// No keys are set: anyone (on loopback).
    Anyone,
    /// This key.
    Key(Arc<Key>),
}

impl std::fmt::Debug for Caller {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Caller::Anyone => f.write_str("Anyone"),
            Caller::Key(k) => write!(f, "Key({})", k.id),
        }
    }
}

impl PartialEq for Caller {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Caller::Anyone, Caller::Anyone) => true,
            (Caller::Key(a), Caller::Key(b)) => Arc::ptr_eq(a, b),
            _ => false,
        }
    }
}

impl Caller {
    /// The key's id in the ledger (none with no keys).
    pub(crate) fn id(&self) -> Option<&str> {
        match self {
            Caller::Anyone => None,
            Caller::Key(k) => Some(&k.id),
        }
    }
}

impl Keys {
    /// How `/metrics` names the key `caller` gave; `-` for no key.
    pub(crate) fn label(&self, caller: &Caller) -> String {
        match caller {
            Caller::Key(k) => k.label.clone(),
            Caller::Anyone => "-".into(),
        }
    }

    /// Adds `key` (an empty one is never a key).
    pub(crate) fn add(&mut self, key: &str, limits: Limits) {
        if key.trim().is_empty() {
            return;
        }
        let place = self.keys.len();
        self.keys
            .push(Arc::new(Key::configured(key, place, limits)));
    }

    /// Keeps the web chat's conversations of `key` (one added before) in `store`.
    pub(crate) fn set_store(&mut self, key: &str, store: Arc<dyn Store>) -> bool {
        let digest: [u8; 32] = Sha256::digest(key.as_bytes()).into();
        match self.keys.iter_mut().find(|k| k.digest == digest) {
            Some(k) => {
                if let Some(k) = Arc::get_mut(k) {
                    k.store = Some(store);
                }
                true
            }
            None => false,
        }
    }

    /// Whether no key is set at all: none in kite.toml, and none live in the store.
    /// Once one is made with `kite keys create`, every caller needs a key.
    pub(crate) fn is_empty(&self) -> bool {
        self.keys.is_empty() && self.registry.as_ref().is_none_or(|r| !r.has_keys())
    }

    /// Gives each key of kite.toml that has none the store of its conversations `make`
    /// makes.
    pub(crate) fn give_stores(&mut self, make: &dyn Fn(&str) -> Arc<dyn Store>) {
        for k in &mut self.keys {
            if let Some(k) = Arc::get_mut(k)
                && k.store.is_none()
            {
                k.store = Some(make(&k.id));
            }
        }
    }

    /// Asks every caller for `token` while no key is set.
    pub(crate) fn set_token(&mut self, token: &str) {
        self.token = Some(Sha256::digest(token.trim().as_bytes()).into());
    }

    /// Whether `given` is the token.
    pub(crate) fn is_token(&self, given: &str) -> bool {
        let digest: [u8; 32] = Sha256::digest(given.trim().as_bytes()).into();
        self.token.is_some_and(|t| bool::from(t.ct_eq(&digest)))
    }

    /// The caller `headers` name (`Authorization: Bearer KEY` or `x-api-key`; with no key
    /// set, the token there or in its cookie), or `None` when one is needed and none
    /// matches.
    pub(crate) fn caller(&self, headers: &HeaderMap) -> Option<Caller> {
        let given = given_key(headers);
        if self.is_empty() {
            if self.token.is_none() {
                return Some(Caller::Anyone);
            }
            let in_cookie = cookie(headers).is_some_and(|c| self.is_token(&c));
            let in_header = given.is_some_and(|g| self.is_token(g));
            return (in_cookie || in_header).then_some(Caller::Anyone);
        }
        let digest: [u8; 32] = Sha256::digest(given?.trim().as_bytes()).into();
        let mut found = None;
        for k in &self.keys {
            // The first that matches (every key is compared all the same).
            if bool::from(k.digest.ct_eq(&digest)) && found.is_none() {
                found = Some(k.clone());
            }
        }
        // The store's keys are found by their digest (a secret's digest tells nothing of
        // the secret).
        found
            .or_else(|| self.registry.as_ref()?.find(&digest))
            .map(Caller::Key)
    }

    /// Counts one request admitted for `caller`.
    pub(crate) fn admitted(&self, caller: &Caller) {
        self.count(caller, |used| used.requests += 1);
    }

    fn count(&self, caller: &Caller, f: impl FnOnce(&mut KeyUsage)) {
        match caller {
            Caller::Anyone => f(&mut self.open.lock().unwrap_or_else(|e| e.into_inner())),
            Caller::Key(k) => f(&mut k.used.lock().unwrap_or_else(|e| e.into_inner())),
        }
    }

    /// Counts `spent` against `caller`.
    pub(crate) fn spent(&self, caller: &Caller, spent: Spent) {
        let tokens = spent.input_tokens.saturating_add(spent.output_tokens);
        self.count(caller, |used| {
            used.tokens = used.tokens.saturating_add(tokens);
            used.input_tokens = used.input_tokens.saturating_add(spent.input_tokens);
            used.output_tokens = used.output_tokens.saturating_add(spent.output_tokens);
            used.cost += spent.cost;
            used.unpriced += u64::from(spent.unpriced);
        });
    }

    /// What `caller` has used since the gateway started.
    pub(crate) fn used(&self, caller: &Caller) -> KeyUsage {
        match caller {
            Caller::Anyone => *self.open.lock().unwrap_or_else(|e| e.into_inner()),
            Caller::Key(k) => *k.used.lock().unwrap_or_else(|e| e.into_inner()),
        }
    }

    /// What the key of kite.toml at `i` has used.
    pub(crate) fn usage(&self, i: usize) -> Option<KeyUsage> {
        let k = self.keys.get(i)?;
        Some(*k.used.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

/// The key a request gives: `Authorization: Bearer KEY`, or `x-api-key`.
pub(crate) fn given_key(headers: &HeaderMap) -> Option<&str> {
    headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| {
            let (scheme, token) = v.split_once(' ')?;
            scheme.eq_ignore_ascii_case("bearer").then_some(token)
        })
        .or_else(|| headers.get("x-api-key").and_then(|v| v.to_str().ok()))
}

/// The port a request's `Host` names (80 when it names none), digits only.
pub(crate) fn port(headers: &HeaderMap) -> String {
    let host = headers
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    let after_name = host.rsplit_once(']').map_or(host, |(_, rest)| rest);
    match after_name.rsplit_once(':') {
        Some((_, p)) if !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()) => p.to_owned(),
        _ => "80".to_owned(),
    }
}

/// The token in the request's cookie for its port (the port of its `Host`).
fn cookie(headers: &HeaderMap) -> Option<String> {
    let name = cookie_name(&port(headers));
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(n, _)| *n == name)
        .map(|(_, v)| v.trim().to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bearer(key: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(
            header::AUTHORIZATION,
            format!("Bearer {key}").parse().unwrap(),
        );
        h
    }

    #[test]
    fn keys_are_told_apart_and_their_usage_kept_apart() {
        let mut keys = Keys::default();
        keys.add("first", Limits::default());
        keys.add("second", Limits::default());
        keys.add("  ", Limits::default());
        assert_eq!(keys.caller(&bearer("nope")), None);
        assert_eq!(keys.caller(&HeaderMap::new()), None);
        let first = keys.caller(&bearer("first")).unwrap();
        let second = keys.caller(&bearer("second")).unwrap();
        assert_ne!(first, second);
        assert_eq!(keys.label(&first), "key-1");
        assert_eq!(keys.label(&second), "key-2");
        assert!(first.id().unwrap().starts_with("cfg_"));

        keys.admitted(&second);
        keys.spent(
            &second,
            Spent {
                input_tokens: 100,
                output_tokens: 50,
                cost: 0.25,
                unpriced: false,
            },
        );
        assert_eq!(
            keys.usage(1),
            Some(KeyUsage {
                requests: 1,
                tokens: 150,
                input_tokens: 100,
                output_tokens: 50,
                cost: 0.25,
                unpriced: 0,
            })
        );
        assert_eq!(keys.usage(0), Some(KeyUsage::default()));

        let open = Keys::default();
        assert_eq!(open.caller(&HeaderMap::new()), Some(Caller::Anyone));
    }

    #[test]
    fn with_no_key_the_token_is_asked_for_in_a_header_or_the_ports_cookie() {
        let mut keys = Keys::default();
        keys.set_token("tok");
        assert_eq!(keys.caller(&HeaderMap::new()), None);
        assert_eq!(keys.caller(&bearer("nope")), None);
        assert_eq!(keys.caller(&bearer("tok")), Some(Caller::Anyone));
        let mut h = HeaderMap::new();
        h.insert("x-api-key", "tok".parse().unwrap());
        assert_eq!(keys.caller(&h), Some(Caller::Anyone));
        let with_cookie = |host: &str, cookie: &str| {
            let mut h = HeaderMap::new();
            h.insert(header::HOST, host.parse().unwrap());
            h.insert(header::COOKIE, cookie.parse().unwrap());
            keys.caller(&h)
        };
        assert_eq!(
            with_cookie("127.0.0.1:8080", "a=b; kite-token-8080=tok"),
            Some(Caller::Anyone)
        );
        // Another port's cookie is another gateway's.
        assert_eq!(with_cookie("127.0.0.1:8081", "kite-token-8080=tok"), None);
        assert_eq!(with_cookie("127.0.0.1:8080", "kite-token-8080=nope"), None);
    }
}
