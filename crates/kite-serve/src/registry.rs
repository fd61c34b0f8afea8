//! The keys and teams kept in the store (made by `kite keys create` or
//! `POST /v1/admin/keys`, on any machine), and what each has spent: read again by every
//! replica whenever the store's version of them moves, which it checks twice a second, so
//! a key made or revoked anywhere works, or stops working, everywhere within a second.
//! Spending is read on the same beat, and again as soon as this replica's ledger writes.

use crate::keys::Key;
use crate::limits::Limits;
use kite_store::Fleet;
use kite_store::fleet::{Budget, FleetLimits, KeyRecord, Period, TeamRecord};
use std::collections::HashMap;
use std::sync::{Arc, RwLock};
use std::time::Duration;

/// How often the store is asked whether keys changed.
pub(crate) const POLL: Duration = Duration::from_millis(500);

/// How far short of a budget its spending may fall and still reach it (a millionth of a
/// cent): float sums of many small costs fall short by less.
const SPENT_DUST: f64 = 1e-8;

/// How long one read of the store may take.
const DEADLINE: Duration = Duration::from_secs(5);

use crate::Conversations;
use crate::admin::now_ms;

#[derive(Default)]
struct Table {
    version: Option<i64>,
    /// The store holds keys (revoked ones too): every caller needs one from then on.
    any: bool,
    keys: HashMap<[u8; 32], Arc<Key>>,
    /// The ids of revoked keys.
    revoked: std::collections::HashSet<String>,
    teams: HashMap<String, TeamRecord>,
    /// `subject|period` to dollars.
    spend: HashMap<String, f64>,
}

/// The store's keys, teams and spending, as last read.
pub(crate) struct Registry {
    pub(crate) fleet: Arc<dyn Fleet>,
    conversations: Option<Conversations>,
    table: RwLock<Arc<Table>>,
    /// Asks for the spending to be read again now (the ledger wrote).
    pub(crate) spent: tokio::sync::Notify,
    /// Whether the store last failed to answer (said once per outage).
    down: std::sync::atomic::AtomicBool,
    /// What this replica spent that the totals do not show yet.
    pub(crate) pending: crate::pending::Pending,
}

pub(crate) fn limits(l: FleetLimits) -> Limits {
    Limits {
        requests_per_minute: l.rpm,
        tokens_per_minute: l.tpm,
        max_parallel: l.max_parallel,
    }
}

fn digest(hex: &str) -> Option<[u8; 32]> {
    let mut out = [0u8; 32];
    if hex.len() != 64 {
        return None;
    }
    for (i, b) in out.iter_mut().enumerate() {
        *b = u8::from_str_radix(hex.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(out)
}

/// Why a key over its budget, or its team's, is refused.
pub(crate) struct OverBudget {
    pub whose: String,
    pub budget: Budget,
}

/// A request's worst case held against its key's budget and its team's until it ends.
pub(crate) struct Reservation {
    registry: Arc<Registry>,
    id: u64,
}

impl Drop for Reservation {
    fn drop(&mut self) {
        self.registry.pending.release(self.id);
    }
}

impl Registry {
    pub(crate) fn new(fleet: Arc<dyn Fleet>, conversations: Option<Conversations>) -> Self {
        Self {
            fleet,
            conversations,
            table: RwLock::default(),
            spent: tokio::sync::Notify::new(),
            down: false.into(),
            pending: Default::default(),
        }
    }

    fn table(&self) -> Arc<Table> {
        self.table.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Whether the store failed to answer when last read (twice a second).
    pub(crate) fn store_down(&self) -> bool {
        self.down.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Whether the store holds any key, even a revoked one: once keys are made, revoking
    /// the last does not open the gateway to callers with none.
    pub(crate) fn has_keys(&self) -> bool {
        self.table().any
    }

    /// Whether the key `id` of the store was revoked.
    pub(crate) fn revoked(&self, id: &str) -> bool {
        self.table().revoked.contains(id)
    }

    /// The live key whose digest is `digest`.
    pub(crate) fn find(&self, digest: &[u8; 32]) -> Option<Arc<Key>> {
        let key = self.table().keys.get(digest).cloned()?;
        let expired = key.expires_ms.is_some_and(|t| t <= now_ms());
        (!expired).then_some(key)
    }

    /// The limits of the team `name`.
    pub(crate) fn team_limits(&self, name: &str) -> Option<Limits> {
        Some(limits(self.table().teams.get(name)?.limits))
    }

    /// Whether `key`, or its team, has spent its budget: by the totals last read, and what
    /// this replica spent since.
    pub(crate) fn over_budget(&self, key: &Key) -> Option<OverBudget> {
        let table = self.table();
        let now = now_ms();
        let over = |subject: String, budget: Option<Budget>, whose: String| {
            let budget = budget?;
            let at = format!("{subject}|{}", budget.period.at(now));
            let spent = table.spend.get(&at).copied().unwrap_or(0.0) + self.pending.get(&at);
            // Costs summed in floats may fall a hair short of the budget they reach.
            (spent >= budget.usd - SPENT_DUST).then_some(OverBudget { whose, budget })
        };
        over(format!("key:{}", key.id), key.budget, "this key".into()).or_else(|| {
            let team = key.team.as_ref()?;
            let budget = table.teams.get(team)?.budget;
            over(format!("team:{team}"), budget, format!("team {team:?}"))
        })
    }

    /// Whether `key` or its team has a budget.
    pub(crate) fn has_budget(&self, key: &Key) -> bool {
        key.budget.is_some()
            || key.team.as_ref().is_some_and(|t| {
                self.table()
                    .teams
                    .get(t)
                    .is_some_and(|t| t.budget.is_some())
            })
    }

    /// Holds `dollars`, a request's worst case, against `key`'s budget and its team's until
    /// the [`Reservation`] goes: refused when it would take either past its budget, by the
    /// totals last read, what this replica spent since, and what its requests under way
    /// hold.
    pub(crate) fn reserve(
        self: &Arc<Self>,
        key: &Key,
        dollars: f64,
    ) -> Result<Reservation, OverBudget> {
        let table = self.table();
        let now = now_ms();
        let mut subjects = vec![(format!("key:{}", key.id), key.budget, "this key".to_owned())];
        if let Some(team) = &key.team {
            let budget = table.teams.get(team).and_then(|t| t.budget);
            subjects.push((format!("team:{team}"), budget, format!("team {team:?}")));
        }
        let mut wanted = Vec::new();
        let mut whose = Vec::new();
        for (subject, budget, who) in subjects {
            let Some(budget) = budget else {
                continue;
            };
            let at = format!("{subject}|{}", budget.period.at(now));
            let spent = table.spend.get(&at).copied().unwrap_or(0.0);
            wanted.push((at, dollars, budget.usd - spent - SPENT_DUST));
            whose.push(OverBudget { whose: who, budget });
        }
        match self.pending.reserve(&wanted) {
            Ok(id) => Ok(Reservation {
                registry: self.clone(),
                id,
            }),
            Err(i) => Err(whose.swap_remove(i)),
        }
    }

    /// Reads the store again: keys and teams when their version moved, spending always.
    pub(crate) async fn refresh(&self) -> Result<(), kite_store::StoreError> {
        // The totals read below show every row written so far.
        let writes = self.pending.writes();
        let version = self.fleet.version().await?;
        let old = self.table();
        let mut table = Table {
            version: Some(version),
            any: old.any,
            keys: old.keys.clone(),
            revoked: old.revoked.clone(),
            teams: old.teams.clone(),
            spend: HashMap::new(),
        };
        if old.version != Some(version) {
            let (keys, teams) = (self.fleet.keys().await?, self.fleet.teams().await?);
            table.teams = teams.into_iter().map(|t| (t.name.clone(), t)).collect();
            table.any = !keys.is_empty();
            table.revoked = keys
                .iter()
                .filter(|k| k.revoked_ms.is_some())
                .map(|k| k.id.clone())
                .collect();
            table.keys = keys
                .into_iter()
                .filter(|k| k.revoked_ms.is_none())
                .filter_map(|k| {
                    // A key already known keeps its usage and conversations.
                    let d = digest(&k.digest)?;
                    let known = old.keys.get(&d).filter(|o| same(o, &k)).cloned();
                    Some((d, known.unwrap_or_else(|| Arc::new(self.key(k, d)))))
                })
                .collect();
        }
        let now = now_ms();
        let periods = Period::ALL.iter().map(|p| p.at(now)).collect();
        table.spend = self
            .fleet
            .spend(periods)
            .await?
            .into_iter()
            .map(|s| (format!("{}|{}", s.subject, s.period), s.cost))
            .collect();
        *self.table.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(table);
        self.pending.settled(writes);
        Ok(())
    }

    fn key(&self, k: KeyRecord, digest: [u8; 32]) -> Key {
        Key {
            store: self.conversations.as_ref().map(|make| make(&k.id)),
            label: k.name,
            id: k.id,
            digest,
            limits: limits(k.limits),
            team: k.team,
            budget: k.budget,
            models: k.models,
            sizes: crate::allowance::Sizes {
                max_body: k.limits.max_body,
                max_stored: k.limits.max_stored,
            },
            expires_ms: k.expires_ms,
            used: Default::default(),
        }
    }

    /// Reads the store again and again until `stop`; an outage is said once, and its end.
    pub(crate) async fn watch(self: Arc<Self>, stop: tokio_util::sync::CancellationToken) {
        use std::sync::atomic::Ordering;
        loop {
            let ok = matches!(
                tokio::time::timeout(DEADLINE, self.refresh()).await,
                Ok(Ok(()))
            );
            match (ok, self.down.swap(!ok, Ordering::Relaxed)) {
                (false, false) => tracing::warn!(
                    target: "kite::serve",
                    "the store cannot be read: keys and spending stay as last read until it is back"
                ),
                (true, true) => tracing::info!(target: "kite::serve", "the store is back"),
                _ => {}
            }
            tokio::select! {
                () = tokio::time::sleep(POLL) => {}
                () = self.spent.notified() => {}
                () = stop.cancelled() => return,
            }
        }
    }
}

/// Whether `known` is still what the store says of `k` (else it is made again).
fn same(known: &Key, k: &KeyRecord) -> bool {
    known.id == k.id
        && known.label == k.name
        && known.limits == limits(k.limits)
        && known.team == k.team
        && known.budget == k.budget
        && known.models == k.models
        && known.expires_ms == k.expires_ms
}

#[cfg(test)]
mod tests {
    #[test]
    fn digests_are_read_from_hex_and_nothing_else() {
        let hex = "ab".repeat(32);
        assert_eq!(super::digest(&hex), Some([0xab; 32]));
        assert_eq!(super::digest("ab"), None);
        assert_eq!(super::digest(&"zz".repeat(32)), None);
        assert_eq!(super::digest(&"é".repeat(32)), None);
    }
}
