//! A gateway among replicas: what it shares with the others through the store (keys,
//! teams, the spend ledger, stored responses) and Redis (limits), and the tasks that keep
//! it in step with them.

use crate::{Admin, Conversations, Gateway, Unavailable, ledger, limits, registry};
use kite_store::Fleet;
use std::sync::Arc;

impl Gateway {
    /// Shares keys, teams, spending and stored responses with every other replica through
    /// `fleet` (the store): keys made by `kite keys create` are taken, each answered
    /// request is written to the ledger, and `/v1/usage` answers from it. `conversations`
    /// makes the store of one key's web-chat conversations. Starts the tasks that read and
    /// write the store (so must be called within a Tokio runtime); [`Gateway::finish`] ends
    /// them.
    pub fn fleet(mut self, fleet: Arc<dyn Fleet>, conversations: Option<Conversations>) -> Self {
        if let Some(make) = &conversations {
            self.keys.give_stores(make.as_ref());
        }
        let registry = Arc::new(registry::Registry::new(fleet.clone(), conversations));
        tokio::spawn(registry.clone().watch(self.background.clone()));
        let (ledger, task) = ledger::Ledger::start(
            fleet.clone(),
            self.background.clone(),
            registry.clone(),
            self.metrics.ledger(),
        );
        self.ledger = Some(ledger);
        tokio::spawn(crate::stored::watch(
            self.background_runs.clone(),
            registry.clone(),
            self.background.clone(),
        ));
        *self
            .ledger_task
            .get_mut()
            .unwrap_or_else(|e| e.into_inner()) = Some(task);
        self.admin = Some(Admin::new(fleet));
        self.keys.registry = Some(registry);
        self
    }

    /// Reads the store's keys, teams and spending now (they are read again twice a
    /// second anyway).
    pub async fn refresh(&self) -> Result<(), kite_store::StoreError> {
        match &self.keys.registry {
            Some(r) => r.refresh().await,
            None => Ok(()),
        }
    }

    /// Holds rate limits in the Redis (or Valkey) at `url`, shared by every replica;
    /// `policy` says what happens while it cannot be reached.
    pub fn redis(mut self, url: &str, policy: Unavailable) -> Result<Self, String> {
        let shared = Arc::new(limits::Shared::new(url, policy)?);
        tokio::spawn(shared.clone().renew(self.background.clone()));
        self.limiter = limits::Limiter::Shared(shared);
        self.redis_url = Some(url.to_owned());
        Ok(self)
    }

    /// Why the Redis given to [`Gateway::redis`] does not answer, if it does not (for a
    /// word at start: the gateway goes on, and uses it once it does).
    pub async fn check_redis(&self) -> Result<(), String> {
        match &self.limiter {
            limits::Limiter::Shared(s) => s.check().await,
            limits::Limiter::Local(_) => Ok(()),
        }
    }

    /// Keeps answers in a cache, and answers the same requests from it: in Redis when
    /// [`Gateway::redis`] was given one before, else in this process.
    /// Settings that cannot work (no time to live, more than a year, no entry size) are
    /// refused.
    pub fn cache(mut self, settings: crate::CacheSettings) -> Result<Self, String> {
        settings.check()?;
        let cache = match &self.redis_url {
            Some(url) => crate::cache::Cache::redis(url, settings)?,
            None => crate::cache::Cache::memory(settings),
        };
        self.cache = Some(Arc::new(cache));
        Ok(self)
    }

    /// Lets `key` manage keys and teams under `/v1/admin` (with a store).
    pub fn admin_key(mut self, key: &str) -> Self {
        use sha2::Digest;
        if !key.trim().is_empty() {
            self.admin_keys
                .push(sha2::Sha256::digest(key.trim().as_bytes()).into());
        }
        self
    }

    /// For the end of serving: lets the background responses under way here finish, for at
    /// most `grace` (those still running then end as failed, so that their clients ask
    /// again), then ends the tasks that read and write the store once the ledger's last
    /// rows are written (tried again, while the store does not take them, until what is
    /// left of `grace` is over, and for a few seconds at least).
    pub async fn finish(&self, grace: std::time::Duration) {
        // A grace past any clock's reach is a year.
        let now = std::time::Instant::now();
        let end = now
            .checked_add(grace)
            .unwrap_or(now + std::time::Duration::from_secs(365 * 86_400));
        self.background_runs.finish(grace).await;
        if let Some(ledger) = &self.ledger {
            ledger.end_by(end);
        }
        self.background.cancel();
        let task = self
            .ledger_task
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        if let Some(task) = task {
            let waits = end.saturating_duration_since(std::time::Instant::now())
                + ledger::LAST_WRITE
                + std::time::Duration::from_secs(5);
            let _ = tokio::time::timeout(waits, task).await;
        }
    }
}
