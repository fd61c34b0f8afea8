//! What this replica's answers have spent that the totals it last read from the store do
//! not show yet: their rows wait for the ledger's next write, or were written after the
//! totals were read. A budget is checked against both, so requests one after another on
//! one replica never pass a budget for want of the store's next read. A row written while
//! the totals are being read may be counted twice until the next read, a moment later (the
//! ledger asks for one at once): a budget errs toward refusing, never toward spending.
//! Rows waiting for a write are as many as the ledger holds; written ones wait for a read
//! of the totals, and past [`WRITTEN`] of them (the totals cannot be read) the oldest are
//! let go.
//!
//! Requests under way are counted too, before they cost anything: each reserves its worst
//! case ([`Pending::reserve`]) until its answer ends and its own row counts it. So requests
//! at once on one replica cannot together pass a budget; replicas see each other's
//! spending only once it is written, so a fleet passes a budget by at most about one
//! request per replica.

use kite_store::fleet::LedgerRow;
use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

/// How many written rows may wait for a read of the totals.
const WRITTEN: usize = 100_000;

/// Spending not yet in the totals last read.
#[derive(Default)]
pub(crate) struct Pending(Mutex<State>);

/// Dollars by `subject|period`.
type Parts = Vec<(String, f64)>;

#[derive(Default)]
struct State {
    /// Dollars by `subject|period`, as the registry's totals are kept.
    sums: HashMap<String, f64>,
    /// Each row's part of `sums`, by request id.
    rows: HashMap<String, Parts>,
    /// The rows written, in order, with the write that took each.
    written: VecDeque<(u64, String)>,
    /// How many writes the ledger has made.
    writes: u64,
    /// Dollars reserved by requests under way, by `subject|period`.
    reserved: HashMap<String, f64>,
    /// Each reservation's parts, by its number.
    reservations: HashMap<u64, Parts>,
    /// The next reservation's number.
    next: u64,
}

impl Pending {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Counts `row`, answered here, until the totals show it.
    pub(crate) fn add(&self, row: &LedgerRow) {
        let parts: Parts = kite_store::fleet::totals([row])
            .into_iter()
            .map(|s| (format!("{}|{}", s.subject, s.period), s.cost))
            .collect();
        if parts.is_empty() {
            return;
        }
        let mut state = self.state();
        for (at, cost) in &parts {
            *state.sums.entry(at.clone()).or_default() += cost;
        }
        state.rows.insert(row.request_id.clone(), parts);
    }

    /// The rows of `ids` are in the store now: the totals read after this show them.
    pub(crate) fn written<'a>(&self, ids: impl IntoIterator<Item = &'a str>) {
        let mut state = self.state();
        state.writes += 1;
        let write = state.writes;
        for id in ids {
            if state.rows.contains_key(id) {
                state.written.push_back((write, id.to_owned()));
            }
        }
        while state.written.len() > WRITTEN {
            if let Some((_, id)) = state.written.pop_front() {
                state.drop_row(&id);
            }
        }
    }

    /// The rows of `ids` will never be written (dropped): no longer counted.
    pub(crate) fn forget<'a>(&self, ids: impl IntoIterator<Item = &'a str>) {
        let mut state = self.state();
        for id in ids {
            state.drop_row(id);
        }
    }

    /// How many writes the ledger has made: what totals read from now on show.
    pub(crate) fn writes(&self) -> u64 {
        self.state().writes
    }

    /// Totals read after write `upto` show the rows it and those before it took.
    pub(crate) fn settled(&self, upto: u64) {
        let mut state = self.state();
        while state.written.front().is_some_and(|(w, _)| *w <= upto) {
            if let Some((_, id)) = state.written.pop_front() {
                state.drop_row(&id);
            }
        }
    }

    /// Dollars spent, or reserved by requests under way, at `subject|period` that the
    /// totals do not show yet.
    pub(crate) fn get(&self, at: &str) -> f64 {
        let state = self.state();
        state.sums.get(at).copied().unwrap_or(0.0) + state.reserved.get(at).copied().unwrap_or(0.0)
    }

    /// Reserves at each `(subject|period, dollars, room)` the dollars, or what is left of
    /// its room (its budget less the totals) once what is pending there is taken, when that
    /// is less; all or none: refused (with the index of the first) where nothing is left.
    /// So near a budget's end one request at a time holds the rest, and only it can pass
    /// the budget. Returns the reservation's number.
    pub(crate) fn reserve(&self, wanted: &[(String, f64, f64)]) -> Result<u64, usize> {
        let mut state = self.state();
        let mut parts: Parts = Vec::with_capacity(wanted.len());
        for (i, (at, dollars, room)) in wanted.iter().enumerate() {
            let pending = state.sums.get(at).copied().unwrap_or(0.0)
                + state.reserved.get(at).copied().unwrap_or(0.0);
            let left = room - pending;
            if left <= 0.0 {
                return Err(i);
            }
            parts.push((at.clone(), dollars.min(left)));
        }
        state.next += 1;
        let id = state.next;
        for (at, dollars) in &parts {
            *state.reserved.entry(at.clone()).or_default() += dollars;
        }
        state.reservations.insert(id, parts);
        Ok(id)
    }

    /// Gives back reservation `id`: its request ended (and its row, if any, counts it).
    pub(crate) fn release(&self, id: u64) {
        let mut state = self.state();
        let Some(parts) = state.reservations.remove(&id) else {
            return;
        };
        for (at, dollars) in parts {
            if let Some(sum) = state.reserved.get_mut(&at) {
                *sum -= dollars;
                if *sum <= 1e-12 {
                    state.reserved.remove(&at);
                }
            }
        }
    }
}

impl State {
    /// No longer counts the row `id`.
    fn drop_row(&mut self, id: &str) {
        let Some(parts) = self.rows.remove(id) else {
            return;
        };
        for (at, cost) in parts {
            if let Some(sum) = self.sums.get_mut(&at) {
                *sum -= cost;
                // Sums go back to nothing exactly, with no float dust left.
                if *sum <= 1e-12 {
                    self.sums.remove(&at);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Pending;
    use kite_store::fleet::LedgerRow;

    fn row(id: &str, cost: f64) -> LedgerRow {
        LedgerRow {
            request_id: id.into(),
            key: Some("k1".into()),
            team: Some("t".into()),
            time_ms: 1_700_000_000_000,
            cost: Some(cost),
            ..Default::default()
        }
    }

    #[test]
    fn spending_counts_until_totals_read_after_its_write_show_it() {
        let p = Pending::default();
        let at = "key:k1|total";
        p.add(&row("a", 0.25));
        p.add(&row("b", 0.5));
        p.add(&row("free", 0.0));
        assert_eq!(p.get(at), 0.75);
        assert_eq!(p.get("team:t|total"), 0.75);
        let before = p.writes();
        p.written(["a"]);
        // Totals read before the write do not show it.
        p.settled(before);
        assert_eq!(p.get(at), 0.75);
        p.settled(p.writes());
        assert_eq!(p.get(at), 0.5);
        p.forget(["b"]);
        assert_eq!(p.get(at), 0.0);
        assert_eq!(p.get("team:t|total"), 0.0);
    }

    #[test]
    fn written_rows_waiting_for_a_read_are_bounded() {
        let p = Pending::default();
        for i in 0..super::WRITTEN + 10 {
            let id = format!("r{i}");
            p.add(&row(&id, 1.0));
            p.written([id.as_str()]);
        }
        let state = p.state();
        assert_eq!(state.written.len(), super::WRITTEN);
        assert_eq!(state.rows.len(), super::WRITTEN);
        assert!(!state.rows.contains_key("r0"));
        assert_eq!(state.sums["key:k1|total"], super::WRITTEN as f64);
    }
}
