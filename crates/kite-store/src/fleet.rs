//! What a fleet of gateways (`kite serve` replicas) shares in the store: client keys and
//! teams, the spend ledger and its running totals, and stored Responses.
//!
//! Keys and teams are kept whole as JSON (with their id, name and digest in columns of
//! their own, unique), and every change to them moves one counter, [`Fleet::version`], so
//! a replica notices a change by reading one number. A key's secret is never stored: only
//! its SHA-256 digest. Ledger rows are written in batches, and the same transaction adds
//! their cost to per-key and per-team totals for the day, the month and all time, which
//! budgets are checked against.

use crate::StoreFuture;
use serde::{Deserialize, Serialize};

/// What a key or team may use per minute, and at once (none: no limit).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FleetLimits {
    /// Requests per minute.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rpm: Option<u32>,
    /// Input and output tokens per minute.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tpm: Option<u64>,
    /// Requests under way at once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_parallel: Option<u32>,
    /// The largest request body, in bytes (a key's own; a team's is not used).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_body: Option<u64>,
    /// What its stored responses may hold together, in bytes (a key's own).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_stored: Option<u64>,
}

/// Over what a budget is spent.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Period {
    /// The UTC day.
    Day,
    /// The UTC month.
    Month,
    /// All time.
    Total,
}

impl Period {
    /// The name of the period that holds `time_ms` (`day:2026-11-26`, `month:2026-11`,
    /// `total`), as [`Spend::period`] gives it.
    pub fn at(self, time_ms: i64) -> String {
        let when = chrono::DateTime::from_timestamp_millis(time_ms).unwrap_or_default();
        match self {
            Period::Day => format!("day:{}", when.format("%Y-%m-%d")),
            Period::Month => format!("month:{}", when.format("%Y-%m")),
            Period::Total => "total".into(),
        }
    }

    /// When the period that holds `time_ms` ends (Unix milliseconds; none for all time).
    pub fn end(self, time_ms: i64) -> Option<i64> {
        use chrono::{Datelike, NaiveDate};
        let day = chrono::DateTime::from_timestamp_millis(time_ms)?.date_naive();
        let next = match self {
            Period::Day => day.succ_opt()?,
            Period::Month => match day.month() {
                12 => NaiveDate::from_ymd_opt(day.year() + 1, 1, 1)?,
                m => NaiveDate::from_ymd_opt(day.year(), m + 1, 1)?,
            },
            Period::Total => return None,
        };
        Some(next.and_hms_opt(0, 0, 0)?.and_utc().timestamp_millis())
    }

    /// Every period, as for [`Fleet::spend`].
    pub const ALL: [Period; 3] = [Period::Day, Period::Month, Period::Total];
}

/// US dollars that may be spent per period.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Budget {
    /// The most that may be spent.
    pub usd: f64,
    /// Over what.
    pub period: Period,
}

/// A client key made by `kite keys create` (or `POST /v1/admin/keys`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct KeyRecord {
    /// Its id (`key_...`): stays through a rotation.
    pub id: String,
    /// The name it was given, unique.
    pub name: String,
    /// The SHA-256 digest of the key, as hex; the key itself is never kept.
    pub digest: String,
    /// The key's first and last characters, to tell it apart (`kite_...3f9a`).
    pub hint: String,
    /// The team it spends for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub team: Option<String>,
    /// Its own limits.
    #[serde(default)]
    pub limits: FleetLimits,
    /// Its own budget.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget: Option<Budget>,
    /// The models (routes' public names) it may ask for; empty: every one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub models: Vec<String>,
    /// When it stops working (Unix milliseconds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_ms: Option<i64>,
    /// When it was made.
    pub created_ms: i64,
    /// When it was revoked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revoked_ms: Option<i64>,
}

/// A team: keys that share limits and a budget.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TeamRecord {
    /// Its name, unique.
    pub name: String,
    /// Limits its keys share.
    #[serde(default)]
    pub limits: FleetLimits,
    /// A budget its keys share.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget: Option<Budget>,
    /// When it was made.
    pub created_ms: i64,
}

/// One answered request, as the ledger keeps it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LedgerRow {
    /// When it came (Unix milliseconds).
    pub time_ms: i64,
    /// The gateway's id for it.
    pub request_id: String,
    /// The key's id (none: a gateway with no keys).
    pub key: Option<String>,
    /// The key's team.
    pub team: Option<String>,
    /// The route that answered (the model's public name).
    pub route: String,
    /// The upstream provider.
    pub provider: String,
    /// The model asked upstream.
    pub model: String,
    /// Input tokens (cache reads and writes included).
    pub input_tokens: i64,
    /// Output tokens (reasoning included).
    pub output_tokens: i64,
    /// Input tokens read from the provider's cache.
    pub cache_read_tokens: i64,
    /// Input tokens written to the provider's cache.
    pub cache_write_tokens: i64,
    /// Output tokens spent reasoning.
    pub reasoning_tokens: i64,
    /// What it cost in US dollars (none: its price is not known).
    pub cost: Option<f64>,
    /// The HTTP status the answer began with.
    pub status: i32,
    /// Milliseconds until the answer's first byte.
    pub ttfb_ms: Option<i64>,
    /// Milliseconds until the answer's end.
    pub duration_ms: i64,
    /// Whether the gateway's cache answered (at no cost).
    pub cached: bool,
}

/// How [`Fleet::usage`] groups its rows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum By {
    /// The UTC day.
    Day,
    /// The upstream model.
    Model,
    /// The key's id.
    Key,
    /// The route.
    Route,
}

/// Which ledger rows [`Fleet::usage`] sums.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct UsageQuery {
    /// One key's (by id).
    pub key: Option<String>,
    /// One team's.
    pub team: Option<String>,
    /// From this time on (Unix milliseconds).
    pub since_ms: Option<i64>,
    /// Grouped by this (none: one line for all).
    pub by: Option<By>,
}

/// The sums of a group of ledger rows.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct UsageLine {
    /// The group's value (none when not grouped, or for rows with no key).
    pub group: Option<String>,
    /// Requests answered.
    pub requests: i64,
    /// Input tokens.
    pub input_tokens: i64,
    /// Output tokens.
    pub output_tokens: i64,
    /// Input tokens read from the provider's cache.
    pub cache_read_tokens: i64,
    /// Input tokens written to the provider's cache.
    pub cache_write_tokens: i64,
    /// Output tokens spent reasoning.
    pub reasoning_tokens: i64,
    /// US dollars, as far as prices are known.
    pub cost: f64,
    /// Requests whose price is not known.
    pub unpriced: i64,
    /// Requests the gateway's cache answered.
    pub cached: i64,
}

/// What a key or team has spent in a period.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Spend {
    /// `key:ID` or `team:NAME`.
    pub subject: String,
    /// As [`Period::at`] names it.
    pub period: String,
    /// US dollars.
    pub cost: f64,
}

/// A Responses API answer kept for `previous_response_id` and `GET /v1/responses/{id}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StoredResponse {
    /// Its id (`resp_...`).
    pub id: String,
    /// The key it belongs to (its id; `-` with no keys): no other key sees it.
    pub owner: String,
    /// `queued`, `in_progress`, `completed`, `incomplete`, `failed` or `cancelled`.
    pub status: String,
    /// When it was made (Unix milliseconds).
    pub created_ms: i64,
    /// When it last changed; a response under way is touched every few seconds by the
    /// replica running it, so one that stops being touched is known to have lost it.
    pub updated_ms: i64,
    /// Whether it was asked to stop.
    pub cancel: bool,
    /// The response object, as JSON.
    pub body: String,
    /// Its own input, as a JSON array of items: what came before is in the responses
    /// `previous` leads to.
    pub input: String,
    /// The response it continues (`previous_response_id`), whose conversation comes first.
    pub previous: Option<String>,
}

/// What a fleet of gateways shares: implemented by both stores.
pub trait Fleet: Send + Sync {
    /// A number that moves whenever a key or team changes.
    fn version(&self) -> StoreFuture<'_, i64>;
    /// Adds `key`, or replaces the one with its id; a name or digest another key has is
    /// refused with [`StoreError::Exists`](crate::StoreError::Exists).
    fn save_key(&self, key: KeyRecord) -> StoreFuture<'_, ()>;
    /// Every key, revoked ones included, oldest first.
    fn keys(&self) -> StoreFuture<'_, Vec<KeyRecord>>;
    /// Adds `team`, or replaces the one of its name (`new`: refuse one that exists).
    fn save_team(&self, team: TeamRecord, new: bool) -> StoreFuture<'_, ()>;
    /// Every team, oldest first.
    fn teams(&self) -> StoreFuture<'_, Vec<TeamRecord>>;
    /// Writes `rows` to the ledger, and their cost to the totals, in one transaction. A row
    /// whose request id is there already is left out, and so is its cost: a batch written
    /// twice (its first write's answer lost) counts once.
    fn record(&self, rows: Vec<LedgerRow>) -> StoreFuture<'_, ()>;
    /// The ledger's sums for `query`, largest cost first.
    fn usage(&self, query: UsageQuery) -> StoreFuture<'_, Vec<UsageLine>>;
    /// Every total for the periods named (as [`Period::at`] names them).
    fn spend(&self, periods: Vec<String>) -> StoreFuture<'_, Vec<Spend>>;
    /// Keeps a new `response` (one already kept under its id stays as it is).
    fn put_response(&self, response: StoredResponse) -> StoreFuture<'_, ()>;
    /// A later word of the response kept under `response`'s id: its status, body and time.
    /// False, and nothing written, when it is gone (deleted) or no longer under way (a
    /// final word stays, whatever a late word says).
    fn update_response(&self, response: StoredResponse) -> StoreFuture<'_, bool>;
    /// The response `id`.
    fn response(&self, id: &str) -> StoreFuture<'_, Option<StoredResponse>>;
    /// The response `id` and those it continues, newest first, at most `most` of them
    /// (fewer where a link is missing: the last one's `previous` says which).
    fn response_chain(&self, id: &str, most: usize) -> StoreFuture<'_, Vec<StoredResponse>>;
    /// The bytes `owner`'s stored responses hold (bodies and inputs).
    fn stored_bytes(&self, owner: &str) -> StoreFuture<'_, u64>;
    /// Deletes the response `id`; false when there was none.
    fn delete_response(&self, id: &str) -> StoreFuture<'_, bool>;
    /// Cancels the response `id`, while under way: it is kept as `body` (the response,
    /// cancelled), and its run is asked to stop; false when it is not under way.
    fn cancel_response(&self, id: &str, body: String) -> StoreFuture<'_, bool>;
    /// Touches the responses `ids` (under way on this replica); returns those to stop: asked
    /// to, deleted, or already ended (another replica took them for lost).
    fn touch_responses(&self, ids: Vec<String>, now_ms: i64) -> StoreFuture<'_, Vec<String>>;
    /// Marks as failed every response still under way but untouched since `before_ms`:
    /// the replica running it is gone. Returns how many.
    fn fail_stale(&self, before_ms: i64) -> StoreFuture<'_, u64>;
    /// Deletes the responses made before `before_ms` that are no longer under way. Returns
    /// how many.
    fn forget_responses(&self, before_ms: i64) -> StoreFuture<'_, u64>;
}

/// What `rows` add to the totals: per key and team, per period.
pub fn totals<'a>(rows: impl IntoIterator<Item = &'a LedgerRow>) -> Vec<Spend> {
    let mut sums: std::collections::BTreeMap<(String, String), f64> = Default::default();
    for row in rows {
        let Some(cost) = row.cost.filter(|c| *c > 0.0) else {
            continue;
        };
        let subjects = [
            row.key.as_ref().map(|k| format!("key:{k}")),
            row.team.as_ref().map(|t| format!("team:{t}")),
        ];
        for subject in subjects.into_iter().flatten() {
            for period in Period::ALL {
                *sums
                    .entry((subject.clone(), period.at(row.time_ms)))
                    .or_default() += cost;
            }
        }
    }
    sums.into_iter()
        .map(|((subject, period), cost)| Spend {
            subject,
            period,
            cost,
        })
        .collect()
}

/// `v` as JSON text, to be kept.
pub(crate) fn json<T: Serialize>(v: &T) -> Result<String, crate::StoreError> {
    serde_json::to_string(v).map_err(|e| crate::StoreError::Backend(e.to_string()))
}

/// A kept `what` read back from its JSON text.
pub(crate) fn parse<T: serde::de::DeserializeOwned>(
    what: &str,
    body: &str,
) -> Result<T, crate::StoreError> {
    serde_json::from_str(body)
        .map_err(|e| crate::StoreError::Backend(format!("a stored {what} is not readable: {e}")))
}

/// Statuses of a response under way.
pub const UNDER_WAY: [&str; 2] = ["queued", "in_progress"];

/// A response body marked failed, as a replica that lost its run leaves it.
pub(crate) fn failed_body(body: &str) -> String {
    let mut v: serde_json::Value = serde_json::from_str(body).unwrap_or_default();
    if let Some(o) = v.as_object_mut() {
        o.insert("status".into(), "failed".into());
        o.insert(
            "error".into(),
            serde_json::json!({
                "code": "server_error",
                "message": "the server running this response stopped before it finished",
            }),
        );
    }
    v.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn periods_are_named_by_utc_date() {
        // 2026-11-26T23:59:59.999Z
        let t = 1_795_737_599_999;
        assert_eq!(Period::Day.at(t), "day:2026-11-26");
        assert_eq!(Period::Month.at(t), "month:2026-11");
        assert_eq!(Period::Day.at(t + 1), "day:2026-11-27");
        assert_eq!(Period::Total.at(t), "total");
        assert_eq!(Period::Day.end(t), Some(t + 1));
        assert_eq!(Period::Month.end(t), Some(1_796_083_200_000), "2026-12-01");
        // 2026-12-31T12:00Z: the month ends with the year.
        assert_eq!(
            Period::Month.end(1_798_718_400_000),
            Some(1_798_761_600_000)
        );
        assert_eq!(Period::Total.end(t), None);
    }

    #[test]
    fn totals_add_each_rows_cost_to_its_key_and_team() {
        let row = |key: &str, team: Option<&str>, cost| LedgerRow {
            time_ms: 1_795_737_599_999,
            key: Some(key.into()),
            team: team.map(Into::into),
            cost,
            ..Default::default()
        };
        let t = totals(&[
            row("a", Some("t"), Some(0.5)),
            row("a", None, Some(0.25)),
            row("b", Some("t"), None),
        ]);
        let of = |s: &str, p: &str| t.iter().find(|x| x.subject == s && x.period == p);
        assert_eq!(of("key:a", "total").unwrap().cost, 0.75);
        assert_eq!(of("team:t", "day:2026-11-26").unwrap().cost, 0.5);
        assert!(
            of("key:b", "total").is_none(),
            "an unknown price adds nothing"
        );
        assert_eq!(t.len(), 6);
    }
}
