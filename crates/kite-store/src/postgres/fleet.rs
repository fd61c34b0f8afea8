//! The fleet's shared state in Postgres: what every replica of a gateway reads and writes.
//! A ledger batch is one `INSERT ... SELECT FROM UNNEST(...)` (one round trip however
//! many rows), in the transaction that adds its cost to the totals.

use super::{PostgresStore, db};
use crate::fleet::{
    By, Fleet, KeyRecord, LedgerRow, Spend, StoredResponse, TeamRecord, UNDER_WAY, UsageLine,
    UsageQuery, failed_body, json, parse, totals,
};
use crate::{StoreError, StoreFuture};

/// The tables, added by the store's second migration.
pub(super) const TABLES: &str = "
    ALTER TABLE conversations ADD COLUMN owner TEXT NOT NULL DEFAULT '';
    CREATE INDEX conversations_by_owner ON conversations (owner, updated_ms DESC);
    CREATE TABLE kite_fleet (version BIGINT NOT NULL);
    INSERT INTO kite_fleet (version) VALUES (0);
    CREATE TABLE kite_keys (
        id TEXT PRIMARY KEY, name TEXT NOT NULL UNIQUE, digest TEXT NOT NULL UNIQUE,
        created_ms BIGINT NOT NULL, body TEXT NOT NULL
    );
    CREATE TABLE kite_teams (
        name TEXT PRIMARY KEY, created_ms BIGINT NOT NULL, body TEXT NOT NULL
    );
    CREATE TABLE kite_ledger (
        time_ms BIGINT NOT NULL, request_id TEXT NOT NULL UNIQUE, key_id TEXT, team TEXT,
        route TEXT NOT NULL, provider TEXT NOT NULL, model TEXT NOT NULL,
        input_tokens BIGINT NOT NULL, output_tokens BIGINT NOT NULL,
        cache_read_tokens BIGINT NOT NULL, cache_write_tokens BIGINT NOT NULL,
        reasoning_tokens BIGINT NOT NULL, cost DOUBLE PRECISION, status INTEGER NOT NULL,
        ttfb_ms BIGINT, duration_ms BIGINT NOT NULL, cached BOOLEAN NOT NULL
    );
    CREATE INDEX kite_ledger_by_time ON kite_ledger (time_ms);
    CREATE INDEX kite_ledger_by_key ON kite_ledger (key_id, time_ms);
    CREATE TABLE kite_spend (
        subject TEXT NOT NULL, period TEXT NOT NULL, cost DOUBLE PRECISION NOT NULL,
        PRIMARY KEY (subject, period)
    );
    CREATE TABLE kite_responses (
        id TEXT PRIMARY KEY, owner TEXT NOT NULL, status TEXT NOT NULL,
        created_ms BIGINT NOT NULL, updated_ms BIGINT NOT NULL,
        cancel BOOLEAN NOT NULL DEFAULT FALSE, body TEXT NOT NULL, input TEXT NOT NULL
    );
    CREATE INDEX kite_responses_under_way ON kite_responses (status, updated_ms);
";

/// Each row's first column, a kept `what` as JSON text, read back.
fn parse_all<T: serde::de::DeserializeOwned>(
    what: &str,
    rows: Vec<tokio_postgres::Row>,
) -> Result<Vec<T>, StoreError> {
    rows.iter().map(|r| parse(what, r.get(0))).collect()
}

/// A unique column's clash, named as what clashed.
fn exists(e: StoreError, what: String) -> StoreError {
    match e {
        StoreError::Exists(_) => StoreError::Exists(what),
        other => other,
    }
}

fn group(by: Option<By>) -> &'static str {
    match by {
        None => "NULL::TEXT",
        Some(By::Day) => "to_char(to_timestamp(time_ms / 1000.0) AT TIME ZONE 'UTC', 'YYYY-MM-DD')",
        Some(By::Model) => "model",
        Some(By::Key) => "key_id",
        Some(By::Route) => "route",
    }
}

fn response(r: &tokio_postgres::Row) -> StoredResponse {
    StoredResponse {
        id: r.get(0),
        owner: r.get(1),
        status: r.get(2),
        created_ms: r.get(3),
        updated_ms: r.get(4),
        cancel: r.get(5),
        body: r.get(6),
        input: r.get(7),
        previous: r.get(8),
    }
}

const RESPONSE: &str = "id, owner, status, created_ms, updated_ms, cancel, body, input, previous";

/// A response and those it continues, newest first, as many as `$2`.
const CHAIN: &str = "
    WITH RECURSIVE chain(id, previous, depth) AS (
        SELECT id, previous, 1::BIGINT FROM kite_responses WHERE id = $1
        UNION ALL
        SELECT r.id, r.previous, c.depth + 1 FROM kite_responses r
        JOIN chain c ON r.id = c.previous WHERE c.depth < $2
    )
    SELECT r.id, r.owner, r.status, r.created_ms, r.updated_ms, r.cancel, r.body, r.input,
        r.previous
    FROM chain c JOIN kite_responses r ON r.id = c.id ORDER BY c.depth";

/// The third step: a response keeps only its own input, and a link to the one it
/// continues; each owner's responses are counted by owner.
pub(super) const CHAINS: &str = "
    ALTER TABLE kite_responses ADD COLUMN previous TEXT;
    CREATE INDEX kite_responses_by_owner ON kite_responses (owner);
";

impl Fleet for PostgresStore {
    fn version(&self) -> StoreFuture<'_, i64> {
        Box::pin(async move {
            let row = self
                .client()
                .await?
                .query_one("SELECT version FROM kite_fleet", &[])
                .await
                .map_err(db)?;
            Ok(row.get(0))
        })
    }

    fn save_key(&self, key: KeyRecord) -> StoreFuture<'_, ()> {
        Box::pin(async move {
            let mut client = self.client().await?;
            let tx = client.transaction().await.map_err(db)?;
            tx.execute(
                "INSERT INTO kite_keys (id, name, digest, created_ms, body) \
                 VALUES ($1, $2, $3, $4, $5) ON CONFLICT (id) DO UPDATE SET \
                 name = excluded.name, digest = excluded.digest, body = excluded.body",
                &[
                    &key.id,
                    &key.name,
                    &key.digest,
                    &key.created_ms,
                    &json(&key)?,
                ],
            )
            .await
            .map_err(|e| exists(db(e), format!("a key named {:?}", key.name)))?;
            tx.execute("UPDATE kite_fleet SET version = version + 1", &[])
                .await
                .map_err(db)?;
            tx.commit().await.map_err(db)
        })
    }

    fn keys(&self) -> StoreFuture<'_, Vec<KeyRecord>> {
        Box::pin(async move {
            let rows = self
                .client()
                .await?
                .query("SELECT body FROM kite_keys ORDER BY created_ms, id", &[])
                .await
                .map_err(db)?;
            parse_all("key", rows)
        })
    }

    fn save_team(&self, team: TeamRecord, new: bool) -> StoreFuture<'_, ()> {
        Box::pin(async move {
            let mut client = self.client().await?;
            let tx = client.transaction().await.map_err(db)?;
            let sql = match new {
                true => "INSERT INTO kite_teams (name, created_ms, body) VALUES ($1, $2, $3)",
                false => {
                    "INSERT INTO kite_teams (name, created_ms, body) VALUES ($1, $2, $3) \
                     ON CONFLICT (name) DO UPDATE SET body = excluded.body"
                }
            };
            tx.execute(sql, &[&team.name, &team.created_ms, &json(&team)?])
                .await
                .map_err(|e| exists(db(e), format!("a team named {:?}", team.name)))?;
            tx.execute("UPDATE kite_fleet SET version = version + 1", &[])
                .await
                .map_err(db)?;
            tx.commit().await.map_err(db)
        })
    }

    fn teams(&self) -> StoreFuture<'_, Vec<TeamRecord>> {
        Box::pin(async move {
            let rows = self
                .client()
                .await?
                .query("SELECT body FROM kite_teams ORDER BY created_ms, name", &[])
                .await
                .map_err(db)?;
            parse_all("team", rows)
        })
    }

    fn record(&self, rows: Vec<LedgerRow>) -> StoreFuture<'_, ()> {
        Box::pin(async move {
            macro_rules! column {
                ($f:ident) => {
                    rows.iter().map(|r| r.$f.clone()).collect::<Vec<_>>()
                };
            }
            let (time, id, key, team) = (
                column!(time_ms),
                column!(request_id),
                column!(key),
                column!(team),
            );
            let (route, provider, model) = (column!(route), column!(provider), column!(model));
            let (input, output, read, write, reasoning) = (
                column!(input_tokens),
                column!(output_tokens),
                column!(cache_read_tokens),
                column!(cache_write_tokens),
                column!(reasoning_tokens),
            );
            let (cost, status, ttfb, duration, cached) = (
                column!(cost),
                column!(status),
                column!(ttfb_ms),
                column!(duration_ms),
                column!(cached),
            );
            let mut client = self.client().await?;
            let tx = client.transaction().await.map_err(db)?;
            let written = tx
                .query(
                    "INSERT INTO kite_ledger SELECT * FROM UNNEST($1::BIGINT[], $2::TEXT[], \
                     $3::TEXT[], $4::TEXT[], $5::TEXT[], $6::TEXT[], $7::TEXT[], $8::BIGINT[], \
                     $9::BIGINT[], $10::BIGINT[], $11::BIGINT[], $12::BIGINT[], \
                     $13::DOUBLE PRECISION[], $14::INTEGER[], $15::BIGINT[], $16::BIGINT[], \
                     $17::BOOLEAN[]) ON CONFLICT (request_id) DO NOTHING RETURNING request_id",
                    &[
                        &time, &id, &key, &team, &route, &provider, &model, &input, &output, &read,
                        &write, &reasoning, &cost, &status, &ttfb, &duration, &cached,
                    ],
                )
                .await
                .map_err(db)?;
            let written: std::collections::HashSet<String> =
                written.iter().map(|r| r.get(0)).collect();
            let spent = totals(rows.iter().filter(|r| written.contains(&r.request_id)));
            let (subjects, periods, costs): (Vec<_>, Vec<_>, Vec<_>) = (
                spent.iter().map(|s| s.subject.clone()).collect(),
                spent.iter().map(|s| s.period.clone()).collect(),
                spent.iter().map(|s| s.cost).collect(),
            );
            tx.execute(
                "INSERT INTO kite_spend (subject, period, cost) \
                 SELECT * FROM UNNEST($1::TEXT[], $2::TEXT[], $3::DOUBLE PRECISION[]) \
                 ON CONFLICT (subject, period) DO UPDATE SET cost = kite_spend.cost + excluded.cost",
                &[&subjects, &periods, &costs],
            )
            .await
            .map_err(db)?;
            tx.commit().await.map_err(db)
        })
    }

    fn usage(&self, q: UsageQuery) -> StoreFuture<'_, Vec<UsageLine>> {
        Box::pin(async move {
            let g = group(q.by);
            let sql = format!(
                "SELECT {g}, COUNT(*), SUM(input_tokens)::BIGINT, SUM(output_tokens)::BIGINT, \
                 SUM(cache_read_tokens)::BIGINT, SUM(cache_write_tokens)::BIGINT, \
                 SUM(reasoning_tokens)::BIGINT, COALESCE(SUM(cost), 0), \
                 COUNT(*) FILTER (WHERE cost IS NULL), COUNT(*) FILTER (WHERE cached) \
                 FROM kite_ledger WHERE ($1::TEXT IS NULL OR key_id = $1) \
                 AND ($2::TEXT IS NULL OR team = $2) AND ($3::BIGINT IS NULL OR time_ms >= $3) \
                 GROUP BY 1 ORDER BY 8 DESC, 1"
            );
            let rows = self
                .client()
                .await?
                .query(&sql, &[&q.key, &q.team, &q.since_ms])
                .await
                .map_err(db)?;
            Ok(rows
                .iter()
                .map(|r| UsageLine {
                    group: r.get(0),
                    requests: r.get(1),
                    input_tokens: r.get(2),
                    output_tokens: r.get(3),
                    cache_read_tokens: r.get(4),
                    cache_write_tokens: r.get(5),
                    reasoning_tokens: r.get(6),
                    cost: r.get(7),
                    unpriced: r.get(8),
                    cached: r.get(9),
                })
                .collect())
        })
    }

    fn spend(&self, periods: Vec<String>) -> StoreFuture<'_, Vec<Spend>> {
        Box::pin(async move {
            let rows = self
                .client()
                .await?
                .query(
                    "SELECT subject, period, cost FROM kite_spend WHERE period = ANY($1)",
                    &[&periods],
                )
                .await
                .map_err(db)?;
            Ok(rows
                .iter()
                .map(|r| Spend {
                    subject: r.get(0),
                    period: r.get(1),
                    cost: r.get(2),
                })
                .collect())
        })
    }

    fn put_response(&self, r: StoredResponse) -> StoreFuture<'_, ()> {
        Box::pin(async move {
            self.client()
                .await?
                .execute(
                    &format!(
                        "INSERT INTO kite_responses ({RESPONSE}) \
                         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT (id) DO NOTHING"
                    ),
                    &[
                        &r.id,
                        &r.owner,
                        &r.status,
                        &r.created_ms,
                        &r.updated_ms,
                        &r.cancel,
                        &r.body,
                        &r.input,
                        &r.previous,
                    ],
                )
                .await
                .map_err(db)?;
            Ok(())
        })
    }

    fn update_response(&self, r: StoredResponse) -> StoreFuture<'_, bool> {
        Box::pin(async move {
            let n = self
                .client()
                .await?
                .execute(
                    "UPDATE kite_responses SET status = $2, updated_ms = $3, body = $4 \
                     WHERE id = $1 AND status = ANY($5)",
                    &[&r.id, &r.status, &r.updated_ms, &r.body, &&UNDER_WAY[..]],
                )
                .await
                .map_err(db)?;
            Ok(n > 0)
        })
    }

    fn response(&self, id: &str) -> StoreFuture<'_, Option<StoredResponse>> {
        let id = id.to_owned();
        Box::pin(async move {
            let row = self
                .client()
                .await?
                .query_opt(
                    &format!("SELECT {RESPONSE} FROM kite_responses WHERE id = $1"),
                    &[&id],
                )
                .await
                .map_err(db)?;
            Ok(row.as_ref().map(response))
        })
    }

    fn response_chain(&self, id: &str, most: usize) -> StoreFuture<'_, Vec<StoredResponse>> {
        let id = id.to_owned();
        let most = i64::try_from(most).unwrap_or(i64::MAX);
        Box::pin(async move {
            let rows = self
                .client()
                .await?
                .query(CHAIN, &[&id, &most])
                .await
                .map_err(db)?;
            Ok(rows.iter().map(response).collect())
        })
    }

    fn stored_bytes(&self, owner: &str) -> StoreFuture<'_, u64> {
        let owner = owner.to_owned();
        Box::pin(async move {
            let row = self
                .client()
                .await?
                .query_one(
                    "SELECT COALESCE(SUM(octet_length(body) + octet_length(input)), 0)::BIGINT \
                     FROM kite_responses WHERE owner = $1",
                    &[&owner],
                )
                .await
                .map_err(db)?;
            Ok(u64::try_from(row.get::<_, i64>(0)).unwrap_or(0))
        })
    }

    fn delete_response(&self, id: &str) -> StoreFuture<'_, bool> {
        let id = id.to_owned();
        Box::pin(async move {
            let n = self
                .client()
                .await?
                .execute("DELETE FROM kite_responses WHERE id = $1", &[&id])
                .await
                .map_err(db)?;
            Ok(n > 0)
        })
    }

    fn cancel_response(&self, id: &str, body: String) -> StoreFuture<'_, bool> {
        let id = id.to_owned();
        Box::pin(async move {
            let n = self
                .client()
                .await?
                .execute(
                    "UPDATE kite_responses SET cancel = TRUE, status = 'cancelled', body = $3 \
                     WHERE id = $1 AND status = ANY($2)",
                    &[&id, &&UNDER_WAY[..], &body],
                )
                .await
                .map_err(db)?;
            Ok(n > 0)
        })
    }

    fn touch_responses(&self, ids: Vec<String>, now_ms: i64) -> StoreFuture<'_, Vec<String>> {
        Box::pin(async move {
            let rows = self
                .client()
                .await?
                .query(
                    "UPDATE kite_responses SET updated_ms = $2 \
                     WHERE id = ANY($1) RETURNING id, cancel OR NOT (status = ANY($3))",
                    &[&ids, &now_ms, &&UNDER_WAY[..]],
                )
                .await
                .map_err(db)?;
            // Asked to stop, ended, or deleted.
            let running: std::collections::HashSet<String> = rows
                .iter()
                .filter(|r| !r.get::<_, bool>(1))
                .map(|r| r.get(0))
                .collect();
            Ok(ids.into_iter().filter(|id| !running.contains(id)).collect())
        })
    }

    fn fail_stale(&self, before_ms: i64) -> StoreFuture<'_, u64> {
        Box::pin(async move {
            let mut client = self.client().await?;
            let tx = client.transaction().await.map_err(db)?;
            let stale = tx
                .query(
                    "SELECT id, body FROM kite_responses \
                     WHERE status = ANY($1) AND updated_ms < $2 FOR UPDATE SKIP LOCKED",
                    &[&&UNDER_WAY[..], &before_ms],
                )
                .await
                .map_err(db)?;
            for r in &stale {
                let (id, body): (String, String) = (r.get(0), r.get(1));
                tx.execute(
                    "UPDATE kite_responses SET status = 'failed', body = $2 WHERE id = $1",
                    &[&id, &failed_body(&body)],
                )
                .await
                .map_err(db)?;
            }
            tx.commit().await.map_err(db)?;
            Ok(stale.len() as u64)
        })
    }

    fn forget_responses(&self, before_ms: i64) -> StoreFuture<'_, u64> {
        Box::pin(async move {
            self.client()
                .await?
                .execute(
                    "DELETE FROM kite_responses WHERE created_ms < $1 AND NOT (status = ANY($2))",
                    &[&before_ms, &&UNDER_WAY[..]],
                )
                .await
                .map_err(db)
        })
    }
}
