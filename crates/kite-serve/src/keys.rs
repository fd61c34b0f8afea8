//! Client keys: kept as SHA-256 digests and compared in constant time (every key is
//! compared, so the time taken says nothing of which one matched), each with its rate
//! limits over the last minute and its usage so far. With no key, a token of the gateway's
//! own (made at start, as Jupyter does) is asked of every caller instead, in a header or
//! in the cookie the web chat's first visit sets.

use axum::http::{HeaderMap, header};
use kite_store::Store;
use sha2::{Digest, Sha256};
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use subtle::ConstantTimeEq;

const MINUTE: Duration = Duration::from_secs(60);

/// What one key may spend per minute (none: no limit).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Limits {
    /// Requests per minute.
    pub requests_per_minute: Option<u32>,
    /// Input and output tokens per minute.
    pub tokens_per_minute: Option<u64>,
}

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

#[derive(Default)]
struct Window {
    requests: VecDeque<Instant>,
    tokens: VecDeque<(Instant, u64)>,
    used: KeyUsage,
}

impl Window {
    fn forget_before(&mut self, now: Instant) {
        while self.requests.front().is_some_and(|t| now - *t >= MINUTE) {
            self.requests.pop_front();
        }
        while self.tokens.front().is_some_and(|(t, _)| now - *t >= MINUTE) {
            self.tokens.pop_front();
        }
    }
}

struct Key {
    digest: [u8; 32],
    limits: Limits,
    window: Mutex<Window>,
    /// Where the web chat keeps this key's conversations, apart from every other key's.
    store: Option<Arc<dyn Store>>,
}

/// The keys clients may use, and what is used when none is set.
#[derive(Default)]
pub(crate) struct Keys {
    keys: Vec<Key>,
    /// What callers used when no key is set.
    open: Mutex<KeyUsage>,
    /// With no key, the digest of the token every caller must give (none: anyone on
    /// loopback is let in).
    token: Option<[u8; 32]>,
}

/// The cookie that carries the token for a gateway on `port` (cookies are shared by every
/// port of a host, so each port has its own).
pub(crate) fn cookie_name(port: &str) -> String {
    format!("kite-token-{port}")
}

/// A new token: 32 random bytes as hex.
pub fn new_token() -> std::io::Result<String> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|e| std::io::Error::other(e.to_string()))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
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
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Caller {
    /// No keys are set: anyone (on loopback).
    Anyone,
    /// The key at this place.
    Key(usize),
}

impl Keys {
    /// How `/metrics` names the key `caller` gave: by its place among the keys given
    /// (`key-1`, ...), which shows nothing of it (a digest's start would let a weak key be
    /// guessed); `-` for no key.
    pub(crate) fn label(&self, caller: Caller) -> String {
        match caller {
            Caller::Key(i) => format!("key-{}", i + 1),
            Caller::Anyone => "-".into(),
        }
    }

    /// Adds `key` (an empty one is never a key).
    pub(crate) fn add(&mut self, key: &str, limits: Limits) {
        if key.trim().is_empty() {
            return;
        }
        self.keys.push(Key {
            digest: Sha256::digest(key.as_bytes()).into(),
            limits,
            window: Mutex::new(Window::default()),
            store: None,
        });
    }

    /// Keeps the web chat's conversations of `key` (one added before) in `store`.
    pub(crate) fn set_store(&mut self, key: &str, store: Arc<dyn Store>) -> bool {
        let digest: [u8; 32] = Sha256::digest(key.as_bytes()).into();
        match self.keys.iter_mut().find(|k| k.digest == digest) {
            Some(k) => {
                k.store = Some(store);
                true
            }
            None => false,
        }
    }

    /// Where the web chat keeps the conversations of the key at `i`.
    pub(crate) fn store(&self, i: usize) -> Option<&Arc<dyn Store>> {
        self.keys.get(i)?.store.as_ref()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.keys.is_empty()
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
        let given = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| {
                let (scheme, token) = v.split_once(' ')?;
                scheme.eq_ignore_ascii_case("bearer").then_some(token)
            })
            .or_else(|| headers.get("x-api-key").and_then(|v| v.to_str().ok()));
        if self.keys.is_empty() {
            if self.token.is_none() {
                return Some(Caller::Anyone);
            }
            let in_cookie = cookie(headers).is_some_and(|c| self.is_token(&c));
            let in_header = given.is_some_and(|g| self.is_token(g));
            return (in_cookie || in_header).then_some(Caller::Anyone);
        }
        let digest: [u8; 32] = Sha256::digest(given?.trim().as_bytes()).into();
        let mut found = None;
        for (i, k) in self.keys.iter().enumerate() {
            // The first that matches (every key is compared all the same).
            if bool::from(k.digest.ct_eq(&digest)) && found.is_none() {
                found = Some(i);
            }
        }
        found.map(Caller::Key)
    }

    /// Admits one request from `caller`, or says how long to wait.
    pub(crate) fn admit(&self, caller: Caller) -> Result<(), Duration> {
        let Caller::Key(i) = caller else {
            self.open.lock().unwrap_or_else(|e| e.into_inner()).requests += 1;
            return Ok(());
        };
        let key = &self.keys[i];
        let now = Instant::now();
        let mut w = key.window.lock().unwrap_or_else(|e| e.into_inner());
        w.forget_before(now);
        let wait = |since: Instant| {
            MINUTE
                .saturating_sub(now - since)
                .max(Duration::from_secs(1))
        };
        if let Some(max) = key.limits.requests_per_minute
            && w.requests.len() >= max as usize
        {
            return Err(wait(w.requests.front().copied().unwrap_or(now)));
        }
        if let Some(max) = key.limits.tokens_per_minute
            && w.tokens
                .iter()
                .fold(0u64, |sum, (_, n)| sum.saturating_add(*n))
                >= max
        {
            return Err(wait(w.tokens.front().map_or(now, |(t, _)| *t)));
        }
        w.requests.push_back(now);
        w.used.requests += 1;
        Ok(())
    }

    /// Counts `spent` against `caller`.
    pub(crate) fn spent(&self, caller: Caller, spent: Spent) {
        let tokens = spent.input_tokens.saturating_add(spent.output_tokens);
        let count = |used: &mut KeyUsage| {
            used.tokens = used.tokens.saturating_add(tokens);
            used.input_tokens = used.input_tokens.saturating_add(spent.input_tokens);
            used.output_tokens = used.output_tokens.saturating_add(spent.output_tokens);
            used.cost += spent.cost;
            used.unpriced += u64::from(spent.unpriced);
        };
        let Caller::Key(i) = caller else {
            count(&mut self.open.lock().unwrap_or_else(|e| e.into_inner()));
            return;
        };
        let mut w = self.keys[i]
            .window
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        w.tokens.push_back((Instant::now(), tokens));
        count(&mut w.used);
    }

    /// What `caller` has used.
    pub(crate) fn used(&self, caller: Caller) -> KeyUsage {
        match caller {
            Caller::Anyone => *self.open.lock().unwrap_or_else(|e| e.into_inner()),
            Caller::Key(i) => self.usage(i).unwrap_or_default(),
        }
    }

    /// What the key at `i` has used.
    pub(crate) fn usage(&self, i: usize) -> Option<KeyUsage> {
        let k = self.keys.get(i)?;
        Some(k.window.lock().unwrap_or_else(|e| e.into_inner()).used)
    }
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
    fn keys_are_told_apart_and_limited_by_requests_and_tokens() {
        let mut keys = Keys::default();
        keys.add(
            "first",
            Limits {
                requests_per_minute: Some(1),
                tokens_per_minute: None,
            },
        );
        keys.add(
            "second",
            Limits {
                requests_per_minute: None,
                tokens_per_minute: Some(100),
            },
        );
        assert_eq!(keys.caller(&bearer("nope")), None);
        assert_eq!(keys.caller(&HeaderMap::new()), None);
        let first = keys.caller(&bearer("first")).unwrap();
        let second = keys.caller(&bearer("second")).unwrap();
        assert_eq!((first, second), (Caller::Key(0), Caller::Key(1)));

        assert!(keys.admit(first).is_ok());
        let wait = keys.admit(first).unwrap_err();
        assert!(wait > Duration::from_secs(55) && wait <= MINUTE, "{wait:?}");

        assert!(keys.admit(second).is_ok());
        keys.spent(
            second,
            Spent {
                input_tokens: 100,
                output_tokens: 50,
                cost: 0.25,
                unpriced: false,
            },
        );
        assert!(keys.admit(second).is_err(), "over its tokens");
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

        let open = Keys::default();
        assert_eq!(open.caller(&HeaderMap::new()), Some(Caller::Anyone));
        assert!(open.admit(Caller::Anyone).is_ok());
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
