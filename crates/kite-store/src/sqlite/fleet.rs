//! The fleet's shared state in one SQLite file: for a gateway on one machine.

use super::{SqliteStore, db};
use crate::fleet::{
    By, Fleet, KeyRecord, LedgerRow, Spend, StoredResponse, TeamRecord, UNDER_WAY, UsageLine,
    UsageQuery, failed_body, json, parse, totals,
};
use crate::{StoreError, StoreFuture};
use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};

/// The tables, added by the store's second migration.
pub(super) const TABLES: &str = "
    ALTER TABLE conversations ADD COLUMN owner TEXT NOT NULL DEFAULT '';
    CREATE INDEX conversations_by_owner ON conversations (owner, updated_ms DESC);
    CREATE TABLE kite_fleet (version INTEGER NOT NULL);
    INSERT INTO kite_fleet (version) VALUES (0);
    CREATE TABLE kite_keys (
        id TEXT PRIMARY KEY, name TEXT NOT NULL UNIQUE, digest TEXT NOT NULL UNIQUE,
        created_ms INTEGER NOT NULL, body TEXT NOT NULL
    );
    CREATE TABLE kite_teams (
        name TEXT PRIMARY KEY, created_ms INTEGER NOT NULL, body TEXT NOT NULL
    );
    CREATE TABLE kite_ledger (
        time_ms INTEGER NOT NULL, request_id TEXT NOT NULL UNIQUE, key_id TEXT, team TEXT,
        route TEXT NOT NULL, provider TEXT NOT NULL, model TEXT NOT NULL,
        input_tokens INTEGER NOT NULL, output_tokens INTEGER NOT NULL,
        cache_read_tokens INTEGER NOT NULL, cache_write_tokens INTEGER NOT NULL,
        reasoning_tokens INTEGER NOT NULL, cost REAL, status INTEGER NOT NULL,
        ttfb_ms INTEGER, duration_ms INTEGER NOT NULL, cached INTEGER NOT NULL
    );
    CREATE INDEX kite_ledger_by_time ON kite_ledger (time_ms);
    CREATE INDEX kite_ledger_by_key ON kite_ledger (key_id, time_ms);
    CREATE TABLE kite_spend (
        subject TEXT NOT NULL, period TEXT NOT NULL, cost REAL NOT NULL,
        PRIMARY KEY (subject, period)
    );
    CREATE TABLE kite_responses (
        id TEXT PRIMARY KEY, owner TEXT NOT NULL, status TEXT NOT NULL,
        created_ms INTEGER NOT NULL, updated_ms INTEGER NOT NULL,
        cancel INTEGER NOT NULL DEFAULT 0, body TEXT NOT NULL, input TEXT NOT NULL
    );
    CREATE INDEX kite_responses_under_way ON kite_responses (status, updated_ms);
";

/// A response and those it continues, newest first, as many as `?2`.
const CHAIN: &str = "
    WITH RECURSIVE chain(id, previous, depth) AS (
        SELECT id, previous, 1 FROM kite_responses WHERE id = ?1
        UNION ALL
        SELECT r.id, r.previous, c.depth + 1 FROM kite_responses r
        JOIN chain c ON r.id = c.previous WHERE c.depth < ?2
    )
    SELECT r.* FROM chain c JOIN kite_responses r ON r.id = c.id ORDER BY c.depth";

/// The third step: a response keeps only its own input, and a link to the one it
/// continues; each owner's responses are counted by owner.
pub(super) const CHAINS: &str = "
    ALTER TABLE kite_responses ADD COLUMN previous TEXT;
    CREATE INDEX kite_responses_by_owner ON kite_responses (owner);
";

/// A unique column's clash as [`StoreError::Exists`].
fn unique(e: rusqlite::Error, what: &str) -> StoreError {
    match e.sqlite_error_code() {
        Some(rusqlite::ErrorCode::ConstraintViolation) => StoreError::Exists(what.to_owned()),
        _ => db(e),
    }
}

fn bump(conn: &Connection) -> Result<(), StoreError> {
    conn.execute("UPDATE kite_fleet SET version = version + 1", [])
        .map_err(db)?;
    Ok(())
}

fn response(r: &rusqlite::Row<'_>) -> Result<StoredResponse, rusqlite::Error> {
    Ok(StoredResponse {
        id: r.get(0)?,
        owner: r.get(1)?,
        status: r.get(2)?,
        created_ms: r.get(3)?,
        updated_ms: r.get(4)?,
        cancel: r.get::<_, i64>(5)? != 0,
        body: r.get(6)?,
        input: r.get(7)?,
        previous: r.get(8)?,
    })
}

/// The SQL expression a usage query groups by.
fn group(by: Option<By>) -> &'static str {
    match by {
        None => "NULL",
        Some(By::Day) => "strftime('%Y-%m-%d', time_ms / 1000, 'unixepoch')",
        Some(By::Model) => "model",
        Some(By::Key) => "key_id",
        Some(By::Route) => "route",
    }
}

impl Fleet for SqliteStore {
    fn version(&self) -> StoreFuture<'_, i64> {
        self.with(|conn| {
            conn.query_row("SELECT version FROM kite_fleet", [], |r| r.get(0))
                .map_err(db)
        })
    }

    fn save_key(&self, key: KeyRecord) -> StoreFuture<'_, ()> {
        self.with(move |conn| {
            let tx = conn
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .map_err(db)?;
            tx.execute(
                "INSERT INTO kite_keys (id, name, digest, created_ms, body) \
                 VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT (id) DO UPDATE SET \
                 name = excluded.name, digest = excluded.digest, body = excluded.body",
                params![key.id, key.name, key.digest, key.created_ms, json(&key)?],
            )
            .map_err(|e| unique(e, &format!("a key named {:?}", key.name)))?;
            bump(&tx)?;
            tx.commit().map_err(db)
        })
    }

    fn keys(&self) -> StoreFuture<'_, Vec<KeyRecord>> {
        self.with(|conn| {
            let mut stmt = conn
                .prepare("SELECT body FROM kite_keys ORDER BY created_ms, id")
                .map_err(db)?;
            let rows = stmt.query_map([], |r| r.get::<_, String>(0)).map_err(db)?;
            rows.map(|b| parse("key", &b.map_err(db)?)).collect()
        })
    }

    fn save_team(&self, team: TeamRecord, new: bool) -> StoreFuture<'_, ()> {
        self.with(move |conn| {
            let tx = conn
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .map_err(db)?;
            let sql = match new {
                true => "INSERT INTO kite_teams (name, created_ms, body) VALUES (?1, ?2, ?3)",
                false => {
                    "INSERT INTO kite_teams (name, created_ms, body) VALUES (?1, ?2, ?3) \
                     ON CONFLICT (name) DO UPDATE SET body = excluded.body"
                }
            };
            tx.execute(sql, params![team.name, team.created_ms, json(&team)?])
                .map_err(|e| unique(e, &format!("a team named {:?}", team.name)))?;
            bump(&tx)?;
            tx.commit().map_err(db)
        })
    }

    fn teams(&self) -> StoreFuture<'_, Vec<TeamRecord>> {
        self.with(|conn| {
            let mut stmt = conn
                .prepare("SELECT body FROM kite_teams ORDER BY created_ms, name")
                .map_err(db)?;
            let rows = stmt.query_map([], |r| r.get::<_, String>(0)).map_err(db)?;
            rows.map(|b| parse("team", &b.map_err(db)?)).collect()
        })
    }

    fn record(&self, rows: Vec<LedgerRow>) -> StoreFuture<'_, ()> {
        self.with(move |conn| {
            let tx = conn
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .map_err(db)?;
            {
                let mut insert = tx
                    .prepare(
                        "INSERT INTO kite_ledger VALUES \
                         (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17) \
                         ON CONFLICT (request_id) DO NOTHING",
                    )
                    .map_err(db)?;
                let mut written = Vec::with_capacity(rows.len());
                for r in &rows {
                    let n = insert
                        .execute(params![
                            r.time_ms,
                            r.request_id,
                            r.key,
                            r.team,
                            r.route,
                            r.provider,
                            r.model,
                            r.input_tokens,
                            r.output_tokens,
                            r.cache_read_tokens,
                            r.cache_write_tokens,
                            r.reasoning_tokens,
                            r.cost,
                            r.status,
                            r.ttfb_ms,
                            r.duration_ms,
                            r.cached,
                        ])
                        .map_err(db)?;
                    if n > 0 {
                        written.push(r);
                    }
                }
                let mut add = tx
                    .prepare(
                        "INSERT INTO kite_spend (subject, period, cost) VALUES (?1, ?2, ?3) \
                         ON CONFLICT (subject, period) DO UPDATE SET cost = cost + excluded.cost",
                    )
                    .map_err(db)?;
                for s in totals(written) {
                    add.execute(params![s.subject, s.period, s.cost])
                        .map_err(db)?;
                }
            }
            tx.commit().map_err(db)
        })
    }

    fn usage(&self, q: UsageQuery) -> StoreFuture<'_, Vec<UsageLine>> {
        self.with(move |conn| {
            let g = group(q.by);
            let sql = format!(
                "SELECT {g}, COUNT(*), SUM(input_tokens), SUM(output_tokens), \
                 SUM(cache_read_tokens), SUM(cache_write_tokens), SUM(reasoning_tokens), \
                 COALESCE(SUM(cost), 0), SUM(cost IS NULL), SUM(cached) FROM kite_ledger \
                 WHERE (?1 IS NULL OR key_id = ?1) AND (?2 IS NULL OR team = ?2) \
                 AND (?3 IS NULL OR time_ms >= ?3) GROUP BY 1 ORDER BY 8 DESC, 1"
            );
            let mut stmt = conn.prepare(&sql).map_err(db)?;
            let rows = stmt
                .query_map(params![q.key, q.team, q.since_ms], |r| {
                    Ok(UsageLine {
                        group: r.get(0)?,
                        requests: r.get(1)?,
                        input_tokens: r.get(2)?,
                        output_tokens: r.get(3)?,
                        cache_read_tokens: r.get(4)?,
                        cache_write_tokens: r.get(5)?,
                        reasoning_tokens: r.get(6)?,
                        cost: r.get(7)?,
                        unpriced: r.get(8)?,
                        cached: r.get(9)?,
                    })
                })
                .map_err(db)?;
            rows.collect::<Result<_, _>>().map_err(db)
        })
    }

    fn spend(&self, periods: Vec<String>) -> StoreFuture<'_, Vec<Spend>> {
        self.with(move |conn| {
            let mut stmt = conn
                .prepare("SELECT subject, period, cost FROM kite_spend WHERE period = ?1")
                .map_err(db)?;
            let mut out = Vec::new();
            for p in &periods {
                let rows = stmt
                    .query_map([p], |r| {
                        Ok(Spend {
                            subject: r.get(0)?,
                            period: r.get(1)?,
                            cost: r.get(2)?,
                        })
                    })
                    .map_err(db)?;
                for row in rows {
                    out.push(row.map_err(db)?);
                }
            }
            Ok(out)
        })
    }

    fn put_response(&self, r: StoredResponse) -> StoreFuture<'_, ()> {
        self.with(move |conn| {
            conn.execute(
                "INSERT INTO kite_responses VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9) \
                 ON CONFLICT (id) DO NOTHING",
                params![
                    r.id,
                    r.owner,
                    r.status,
                    r.created_ms,
                    r.updated_ms,
                    r.cancel,
                    r.body,
                    r.input,
                    r.previous
                ],
            )
            .map_err(db)?;
            Ok(())
        })
    }

    fn update_response(&self, r: StoredResponse) -> StoreFuture<'_, bool> {
        self.with(move |conn| {
            let n = conn
                .execute(
                    "UPDATE kite_responses SET status = ?2, updated_ms = ?3, body = ?4 \
                     WHERE id = ?1 AND status IN (?5, ?6)",
                    params![
                        r.id,
                        r.status,
                        r.updated_ms,
                        r.body,
                        UNDER_WAY[0],
                        UNDER_WAY[1]
                    ],
                )
                .map_err(db)?;
            Ok(n > 0)
        })
    }

    fn response(&self, id: &str) -> StoreFuture<'_, Option<StoredResponse>> {
        let id = id.to_owned();
        self.with(move |conn| {
            conn.query_row(
                "SELECT * FROM kite_responses WHERE id = ?1",
                [&id],
                response,
            )
            .optional()
            .map_err(db)
        })
    }

    fn response_chain(&self, id: &str, most: usize) -> StoreFuture<'_, Vec<StoredResponse>> {
        let id = id.to_owned();
        let most = i64::try_from(most).unwrap_or(i64::MAX);
        self.with(move |conn| {
            let mut statement = conn.prepare(CHAIN).map_err(db)?;
            let rows = statement
                .query_map(params![id, most], response)
                .map_err(db)?;
            rows.collect::<Result<_, _>>().map_err(db)
        })
    }

    fn stored_bytes(&self, owner: &str) -> StoreFuture<'_, u64> {
        let owner = owner.to_owned();
        self.with(move |conn| {
            let n: i64 = conn
                .query_row(
                    "SELECT COALESCE(SUM(LENGTH(CAST(body AS BLOB)) \
                     + LENGTH(CAST(input AS BLOB))), 0) FROM kite_responses WHERE owner = ?1",
                    [&owner],
                    |r| r.get(0),
                )
                .map_err(db)?;
            Ok(u64::try_from(n).unwrap_or(0))
        })
    }

    fn delete_response(&self, id: &str) -> StoreFuture<'_, bool> {
        let id = id.to_owned();
        self.with(move |conn| {
            let n = conn
                .execute("DELETE FROM kite_responses WHERE id = ?1", [&id])
                .map_err(db)?;
            Ok(n > 0)
        })
    }

    fn cancel_response(&self, id: &str, body: String) -> StoreFuture<'_, bool> {
        let id = id.to_owned();
        self.with(move |conn| {
            let n = conn
                .execute(
                    "UPDATE kite_responses SET cancel = 1, status = 'cancelled', body = ?4 \
                     WHERE id = ?1 AND status IN (?2, ?3)",
                    params![id, UNDER_WAY[0], UNDER_WAY[1], body],
                )
                .map_err(db)?;
            Ok(n > 0)
        })
    }

    fn touch_responses(&self, ids: Vec<String>, now_ms: i64) -> StoreFuture<'_, Vec<String>> {
        self.with(move |conn| {
            let tx = conn
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .map_err(db)?;
            let mut cancelled = Vec::new();
            for id in ids {
                let cancel: Option<bool> = tx
                    .query_row(
                        "UPDATE kite_responses SET updated_ms = ?2 WHERE id = ?1 \
                         RETURNING cancel OR status NOT IN (?3, ?4)",
                        params![id, now_ms, UNDER_WAY[0], UNDER_WAY[1]],
                        |r| r.get(0),
                    )
                    .optional()
                    .map_err(db)?;
                // Asked to stop, ended, or deleted.
                if cancel != Some(false) {
                    cancelled.push(id);
                }
            }
            tx.commit().map_err(db)?;
            Ok(cancelled)
        })
    }

    fn fail_stale(&self, before_ms: i64) -> StoreFuture<'_, u64> {
        self.with(move |conn| {
            let tx = conn
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .map_err(db)?;
            let stale: Vec<(String, String)> = {
                let mut stmt = tx
                    .prepare(
                        "SELECT id, body FROM kite_responses \
                         WHERE status IN (?1, ?2) AND updated_ms < ?3",
                    )
                    .map_err(db)?;
                let rows = stmt
                    .query_map(params![UNDER_WAY[0], UNDER_WAY[1], before_ms], |r| {
                        Ok((r.get(0)?, r.get(1)?))
                    })
                    .map_err(db)?;
                rows.collect::<Result<_, _>>().map_err(db)?
            };
            for (id, body) in &stale {
                tx.execute(
                    "UPDATE kite_responses SET status = 'failed', body = ?2 WHERE id = ?1",
                    params![id, failed_body(body)],
                )
                .map_err(db)?;
            }
            tx.commit().map_err(db)?;
            Ok(stale.len() as u64)
        })
    }

    fn forget_responses(&self, before_ms: i64) -> StoreFuture<'_, u64> {
        self.with(move |conn| {
            let n = conn
                .execute(
                    "DELETE FROM kite_responses WHERE created_ms < ?1 AND status NOT IN (?2, ?3)",
                    params![before_ms, UNDER_WAY[0], UNDER_WAY[1]],
                )
                .map_err(db)?;
            Ok(n as u64)
        })
    }
}
