//! The response cache (`[serve.cache]`, off unless set): an answer is kept as the events
//! it streamed, under the SHA-256 of the normalised request (kite's request, as any
//! client API decodes to it: model, messages, tools and settings) and, unless shared, the
//! caller's key. The same request again is answered from it, streamed or whole as it asks,
//! with `x-kite-cache: hit`, at no cost to the caller (its ledger row says so); a request
//! that says `Cache-Control: no-cache` is answered afresh and not kept.
//!
//! Entries live in Redis when the gateway has one (every replica shares them, and Redis
//! expires them), else in a bounded in-process LRU (by bytes, each with its expiry). An
//! answer larger than `max_entry_bytes`, or that failed, is not kept. Redis that does not
//! answer within [`DEADLINE`] is a miss.

use kite_core::Event;
use redis::aio::ConnectionManager;
use sha2::{Digest, Sha256};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long a lookup or a write may take in Redis.
const DEADLINE: Duration = Duration::from_millis(250);

/// Whose an entry is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Scope {
    /// Each key's own (the default): another key's answers are never given.
    #[default]
    Key,
    /// Every key's together.
    Shared,
}

/// How the cache works.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CacheSettings {
    /// How long an answer is kept.
    pub ttl: Duration,
    /// The largest answer kept, in bytes (as kept: its events as JSON).
    pub max_entry_bytes: usize,
    /// The most the in-process cache holds, in bytes.
    pub max_bytes: usize,
    /// Whose entries are.
    pub scope: Scope,
}

impl CacheSettings {
    /// The longest an answer may be kept: a year.
    pub const MAX_TTL: Duration = Duration::from_secs(365 * 24 * 3600);

    /// Why these settings cannot work, if they cannot.
    pub(crate) fn check(&self) -> Result<(), String> {
        if self.ttl.is_zero() || self.ttl > Self::MAX_TTL {
            return Err(format!(
                "ttl_secs must be from 1 to {} (a year), not {}",
                Self::MAX_TTL.as_secs(),
                self.ttl.as_secs()
            ));
        }
        if self.max_entry_bytes == 0 {
            return Err("max_entry_bytes must be at least 1".into());
        }
        Ok(())
    }
}

impl Default for CacheSettings {
    fn default() -> Self {
        Self {
            ttl: Duration::from_secs(300),
            max_entry_bytes: 1 << 20,
            max_bytes: 64 << 20,
            scope: Scope::Key,
        }
    }
}

enum Place {
    Redis(ConnectionManager),
    Memory(Mutex<Memory>),
}

struct Memory {
    entries: lru::LruCache<[u8; 32], (Instant, Vec<u8>)>,
    bytes: usize,
}

/// The response cache.
pub(crate) struct Cache {
    settings: CacheSettings,
    place: Place,
}

impl Cache {
    /// A cache in this process.
    pub(crate) fn memory(settings: CacheSettings) -> Self {
        Self {
            settings,
            place: Place::Memory(Mutex::new(Memory {
                entries: lru::LruCache::unbounded(),
                bytes: 0,
            })),
        }
    }

    /// A cache in the Redis at `url`, shared by every replica.
    pub(crate) fn redis(url: &str, settings: CacheSettings) -> Result<Self, String> {
        let client = redis::Client::open(url).map_err(|e| format!("the Redis URL: {e}"))?;
        let config = redis::aio::ConnectionManagerConfig::new()
            .set_connection_timeout(Some(DEADLINE))
            .set_response_timeout(Some(DEADLINE))
            .set_number_of_retries(1);
        let redis = ConnectionManager::new_lazy_with_config(client, config)
            .map_err(|e| format!("Redis: {e}"))?;
        Ok(Self {
            settings,
            place: Place::Redis(redis),
        })
    }

    /// The key of `request` asked by `owner` (a key's id; `-` for no key).
    pub(crate) fn key(&self, request: &kite_core::Request, owner: &str) -> [u8; 32] {
        let mut h = Sha256::new();
        match self.settings.scope {
            Scope::Key => h.update(owner.as_bytes()),
            Scope::Shared => h.update(b"-shared-"),
        }
        h.update([0]);
        h.update(serde_json::to_vec(request).unwrap_or_default());
        h.finalize().into()
    }

    /// The answer kept under `key`, when there is one.
    pub(crate) async fn get(&self, key: &[u8; 32]) -> Option<Vec<Event>> {
        let bytes = match &self.place {
            Place::Memory(m) => {
                let mut m = m.lock().unwrap_or_else(|e| e.into_inner());
                match m.entries.get(key) {
                    Some((until, bytes)) if *until > Instant::now() => Some(bytes.clone()),
                    Some(_) => {
                        if let Some((_, old)) = m.entries.pop(key) {
                            m.bytes -= old.len();
                        }
                        None
                    }
                    None => None,
                }
            }
            Place::Redis(r) => {
                let mut c = r.clone();
                let cmd = redis::cmd("GET").arg(redis_key(key)).clone();
                let asked = cmd.query_async::<Option<Vec<u8>>>(&mut c);
                tokio::time::timeout(DEADLINE, asked).await.ok()?.ok()?
            }
        }?;
        serde_json::from_slice(&bytes).ok()
    }

    /// Keeps `events` under `key`, when not too large.
    pub(crate) async fn put(&self, key: [u8; 32], events: &[Event]) {
        let Ok(bytes) = serde_json::to_vec(events) else {
            return;
        };
        if bytes.len() > self.settings.max_entry_bytes {
            return;
        }
        let ttl = self.settings.ttl;
        match &self.place {
            Place::Memory(m) => {
                let mut m = m.lock().unwrap_or_else(|e| e.into_inner());
                m.bytes += bytes.len();
                if let Some((_, old)) = m.entries.put(key, (Instant::now() + ttl, bytes)) {
                    m.bytes -= old.len();
                }
                while m.bytes > self.settings.max_bytes {
                    match m.entries.pop_lru() {
                        Some((_, (_, old))) => m.bytes -= old.len(),
                        None => break,
                    }
                }
            }
            Place::Redis(r) => {
                let mut c = r.clone();
                let cmd = redis::cmd("SET")
                    .arg(redis_key(&key))
                    .arg(bytes)
                    .arg("PX")
                    .arg(ttl.as_millis() as u64)
                    .clone();
                let asked = cmd.query_async::<()>(&mut c);
                let _ = tokio::time::timeout(DEADLINE, asked).await;
            }
        }
    }

    /// The largest answer kept, in bytes.
    pub(crate) fn max_entry_bytes(&self) -> usize {
        self.settings.max_entry_bytes
    }
}

fn redis_key(key: &[u8; 32]) -> String {
    format!("kite:cache:{}", crate::ids::hex(key))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(s: &str) -> Vec<Event> {
        vec![Event::TextDelta {
            part: 0,
            text: s.into(),
        }]
    }

    #[test]
    fn settings_that_cannot_work_are_refused() {
        let ok = CacheSettings::default();
        assert_eq!(ok.check(), Ok(()));
        for (ttl, bytes) in [
            (Duration::ZERO, 1),
            (Duration::MAX, 1),
            (CacheSettings::MAX_TTL + Duration::from_secs(1), 1),
            (Duration::from_secs(1), 0),
        ] {
            let bad = CacheSettings {
                ttl,
                max_entry_bytes: bytes,
                ..ok
            };
            assert!(bad.check().is_err(), "{bad:?}");
        }
        let year = CacheSettings {
            ttl: CacheSettings::MAX_TTL,
            ..ok
        };
        assert_eq!(year.check(), Ok(()));
    }

    #[tokio::test]
    async fn the_memory_cache_expires_entries_and_keeps_within_its_bytes() {
        let cache = Cache::memory(CacheSettings {
            ttl: Duration::from_millis(200),
            max_entry_bytes: 100,
            max_bytes: 150,
            scope: Scope::Key,
        });
        let request = kite_core::Request::new("m");
        let (a, b) = (cache.key(&request, "key_a"), cache.key(&request, "key_b"));
        assert_ne!(a, b, "each key's own");
        cache.put(a, &text("one")).await;
        assert_eq!(cache.get(&a).await, Some(text("one")));
        assert_eq!(cache.get(&b).await, None);
        // Too large to keep.
        cache.put(b, &text(&"x".repeat(200))).await;
        assert_eq!(cache.get(&b).await, None);
        // Past its bytes, the least recently used goes.
        cache.put(b, &text(&"y".repeat(40))).await;
        let c = cache.key(&kite_core::Request::new("n"), "key_a");
        cache.put(c, &text(&"z".repeat(40))).await;
        assert_eq!(cache.get(&a).await, None);
        assert!(cache.get(&c).await.is_some());
        tokio::time::sleep(Duration::from_millis(250)).await;
        assert_eq!(cache.get(&c).await, None, "expired");
    }
}
