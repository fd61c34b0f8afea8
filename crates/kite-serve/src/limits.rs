//! Rate limits: requests and tokens per minute, and requests at once, for each key and
//! each team. In this process (a sliding minute per subject), or, for a fleet of
//! replicas, in Redis or Valkey, where one server-side script checks every subject of a
//! request and takes its place in each, atomically, on the server's clock; a replica that
//! dies leaves its places at once to lapse with their lease.
//!
//! While Redis cannot be reached, [`Unavailable`] decides: refuse (503) or let requests
//! through within this process's own limits. Either way it is logged once per outage and
//! counted, and the connection comes back by itself.

mod shared;

pub(crate) use shared::Shared;
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const MINUTE: Duration = Duration::from_secs(60);

/// What one key or team may use (none: no limit).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Limits {
    /// Requests per minute.
    pub requests_per_minute: Option<u32>,
    /// Input and output tokens per minute.
    pub tokens_per_minute: Option<u64>,
    /// Requests under way at once.
    pub max_parallel: Option<u32>,
}

impl Limits {
    fn is_none(&self) -> bool {
        *self == Limits::default()
    }
}

/// What happens while Redis cannot be reached (`[serve] limits_unavailable`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Unavailable {
    /// Refuse requests that have limits with 503 and `Retry-After`.
    #[default]
    Deny,
    /// Let them through, within this replica's own limits.
    Allow,
}

/// Whose limits a request must fit: `key:ID` or `team:NAME`, with its limits.
#[derive(Clone, Debug)]
pub(crate) struct Subject {
    pub id: String,
    pub limits: Limits,
}

/// Why a request was refused.
#[derive(Debug, PartialEq)]
pub(crate) enum Refusal {
    /// Over a limit (`requests`, `tokens` or `parallel`), the key's or (true) its team's:
    /// try again after this.
    Wait(Duration, &'static str, bool),
    /// Redis cannot be reached and the policy is to refuse.
    Unavailable,
}

/// What releases a slot: given the tokens the request used.
pub(crate) type Release = Box<dyn FnOnce(u64) + Send + Sync>;

/// A request admitted: its places among those at once, and the tokens its answer uses as
/// they are reported. When the last holder lets it go (the answer's end, or a background
/// run's), the tokens are counted against every subject's tokens per minute and the places
/// given back: in one call to Redis for a fleet.
pub(crate) struct Slot {
    tokens: std::sync::atomic::AtomicU64,
    release: Option<Release>,
}

impl Drop for Slot {
    fn drop(&mut self) {
        if let Some(release) = self.release.take() {
            release(*self.tokens.get_mut());
        }
    }
}

impl Slot {
    pub(crate) fn none() -> Self {
        Self::releasing(None)
    }

    pub(crate) fn releasing(release: Option<Release>) -> Self {
        Self {
            tokens: 0.into(),
            release,
        }
    }

    /// Counts `n` tokens more.
    pub(crate) fn used(&self, n: u64) {
        self.tokens
            .fetch_add(n, std::sync::atomic::Ordering::Relaxed);
    }
}

/// Whether a request within `subjects` needs its slot back: for its tokens or its places.
pub(crate) fn counts_at_end(subjects: &[Subject]) -> bool {
    subjects
        .iter()
        .any(|s| s.limits.tokens_per_minute.is_some() || s.limits.max_parallel.is_some())
}

#[derive(Default)]
struct Window {
    requests: VecDeque<Instant>,
    tokens: VecDeque<(Instant, u64)>,
    parallel: u32,
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

    /// Why `limits` refuse one more request now, if they do.
    fn refuses(&self, limits: &Limits, now: Instant) -> Option<(Duration, &'static str)> {
        let wait = |since: Instant| {
            MINUTE
                .saturating_sub(now - since)
                .max(Duration::from_secs(1))
        };
        if let Some(max) = limits.requests_per_minute
            && self.requests.len() >= max as usize
        {
            return Some((wait(self.requests.front().copied()?), "requests"));
        }
        if let Some(max) = limits.tokens_per_minute
            && self.tokens.iter().map(|(_, n)| *n).sum::<u64>() >= max
        {
            return Some((wait(self.tokens.front()?.0), "tokens"));
        }
        if let Some(max) = limits.max_parallel
            && self.parallel >= max
        {
            return Some((Duration::from_secs(1), "parallel"));
        }
        None
    }
}

/// Limits held in this process.
#[derive(Default)]
pub(crate) struct Local {
    windows: Mutex<HashMap<String, Window>>,
}

impl Local {
    pub(crate) fn admit(self: &Arc<Self>, subjects: &[Subject]) -> Result<Slot, Refusal> {
        let now = Instant::now();
        let mut windows = self.windows.lock().unwrap_or_else(|e| e.into_inner());
        for s in subjects {
            let w = windows.entry(s.id.clone()).or_default();
            w.forget_before(now);
            if let Some((wait, kind)) = w.refuses(&s.limits, now) {
                return Err(Refusal::Wait(wait, kind, s.id.starts_with("team:")));
            }
        }
        let mut parallel = Vec::new();
        for s in subjects {
            let w = windows.entry(s.id.clone()).or_default();
            if s.limits.requests_per_minute.is_some() {
                w.requests.push_back(now);
            }
            if s.limits.max_parallel.is_some() {
                w.parallel += 1;
                parallel.push(s.id.clone());
            }
        }
        if !counts_at_end(subjects) {
            return Ok(Slot::none());
        }
        let (me, subjects) = (self.clone(), subjects.to_vec());
        Ok(Slot::releasing(Some(Box::new(move |tokens| {
            let mut windows = me.windows.lock().unwrap_or_else(|e| e.into_inner());
            for id in parallel {
                if let Some(w) = windows.get_mut(&id) {
                    w.parallel = w.parallel.saturating_sub(1);
                }
            }
            drop(windows);
            me.spent(&subjects, tokens);
        }))))
    }

    pub(crate) fn spent(&self, subjects: &[Subject], tokens: u64) {
        if tokens == 0 {
            return;
        }
        let now = Instant::now();
        let mut windows = self.windows.lock().unwrap_or_else(|e| e.into_inner());
        for s in subjects
            .iter()
            .filter(|s| s.limits.tokens_per_minute.is_some())
        {
            windows
                .entry(s.id.clone())
                .or_default()
                .tokens
                .push_back((now, tokens));
        }
    }
}

/// Where limits are held.
pub(crate) enum Limiter {
    Local(Arc<Local>),
    Shared(Arc<Shared>),
}

impl Default for Limiter {
    fn default() -> Self {
        Limiter::Local(Arc::default())
    }
}

impl Limiter {
    /// Admits one request within every subject's limits, or says why not.
    pub(crate) async fn admit(
        &self,
        subjects: &[Subject],
        metrics: &crate::metrics::Metrics,
    ) -> Result<Slot, Refusal> {
        let subjects: Vec<Subject> = subjects
            .iter()
            .filter(|s| !s.limits.is_none())
            .cloned()
            .collect();
        if subjects.is_empty() {
            return Ok(Slot::none());
        }
        match self {
            Limiter::Local(l) => l.admit(&subjects),
            Limiter::Shared(s) => s.admit(&subjects, metrics).await,
        }
    }

    /// Whether requests can be admitted, for `/ready`: Redis answers, or the policy lets
    /// requests through without it.
    pub(crate) async fn ready(&self) -> bool {
        match self {
            Limiter::Local(_) => true,
            Limiter::Shared(s) => s.policy == Unavailable::Allow || s.ready().await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn subject(id: &str, limits: Limits) -> Subject {
        Subject {
            id: id.into(),
            limits,
        }
    }

    #[test]
    fn every_subject_must_fit_and_nothing_is_taken_from_any_when_one_refuses() {
        let local = Arc::new(Local::default());
        let key = subject(
            "key:a",
            Limits {
                requests_per_minute: Some(2),
                ..Limits::default()
            },
        );
        let team = subject(
            "team:t",
            Limits {
                max_parallel: Some(1),
                ..Limits::default()
            },
        );
        let first = local.admit(&[key.clone(), team.clone()]).unwrap();
        assert_eq!(
            local.admit(&[key.clone(), team.clone()]).err(),
            Some(Refusal::Wait(Duration::from_secs(1), "parallel", true))
        );
        drop(first);
        // The refusal took no request from the key: one is left.
        let _second = local.admit(&[key.clone(), team.clone()]).unwrap();
        let Err(Refusal::Wait(wait, "requests", false)) = local.admit(std::slice::from_ref(&key))
        else {
            panic!("the key has had its two requests");
        };
        assert!(wait > Duration::from_secs(55), "{wait:?}");
    }

    #[test]
    fn tokens_count_once_spent() {
        let local = Arc::new(Local::default());
        let key = subject(
            "key:a",
            Limits {
                tokens_per_minute: Some(100),
                ..Limits::default()
            },
        );
        let slot = local.admit(std::slice::from_ref(&key)).unwrap();
        slot.used(150);
        assert!(
            local.admit(std::slice::from_ref(&key)).is_ok(),
            "not until its end"
        );
        drop(slot);
        assert!(matches!(
            local.admit(&[key]),
            Err(Refusal::Wait(_, "tokens", false))
        ));
    }
}
