//! Postgres, for conversations that many machines share: `KITE_STORE_URL=postgres://...`.
//!
//! The schema is the SQLite store's, in Postgres types, brought up to date by itself from a
//! `kite_schema` table. A turn is one transaction that locks its conversation's row
//! (`SELECT ... FOR UPDATE`) and checks the version first, so writers on other machines are
//! refused rather than interleaved. Connections use TLS as the URL's `sslmode` and
//! `sslrootcert` say, as with libpq (`tls.rs`), and come from a small pool
//! (deadpool-postgres) that replaces one the server dropped: a database that restarts
//! fails the requests made while it is away, and serves the next ones.

use crate::model::now_ms;
use crate::{Conversation, Store, StoreError, StoreFuture, StoredTurn, Turn};
use deadpool_postgres::{Manager, ManagerConfig, Object, Pool, RecyclingMethod, Runtime};
use std::sync::Arc;
use tokio_postgres::{Client, Row};

mod fleet;

/// How many connections one store keeps at most.
const POOL: usize = 8;

/// The schema, one step per version.
const MIGRATIONS: &[&str] = &[
    "
    CREATE TABLE conversations (
        id TEXT PRIMARY KEY,
        title TEXT NOT NULL,
        provider TEXT,
        model TEXT,
        created_ms BIGINT NOT NULL,
        updated_ms BIGINT NOT NULL,
        version BIGINT NOT NULL
    );
    CREATE TABLE turns (
        conversation TEXT NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
        number BIGINT NOT NULL,
        created_ms BIGINT NOT NULL,
        archived BOOLEAN NOT NULL DEFAULT FALSE,
        body TEXT NOT NULL,
        PRIMARY KEY (conversation, number)
    );
    CREATE INDEX conversations_by_update ON conversations (updated_ms DESC);
",
    fleet::TABLES,
    fleet::CHAINS,
];

/// How long reaching the database, and its first answers, may take.
const CONNECT: std::time::Duration = std::time::Duration::from_secs(10);

/// Conversations in a Postgres database.
#[derive(Clone)]
pub struct PostgresStore {
    pool: Pool,
    /// Whose conversations these are (empty: the user's own).
    owner: Arc<str>,
}

impl std::fmt::Debug for PostgresStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The URL may hold a password: it is not kept.
        f.debug_struct("PostgresStore").finish_non_exhaustive()
    }
}

fn db(e: tokio_postgres::Error) -> StoreError {
    // A unique column's clash (23505).
    if e.as_db_error().map(|d| d.code().code()) == Some("23505") {
        return StoreError::Exists(
            e.as_db_error()
                .and_then(|d| d.constraint())
                .unwrap_or("that")
                .to_owned(),
        );
    }
    StoreError::Backend(match e.as_db_error() {
        Some(d) => format!("{}: {}", d.code().code(), d.message()),
        None => {
            // The TLS error is in the source: "invalid peer certificate: UnknownIssuer".
            let mut message = e.to_string();
            let mut source = std::error::Error::source(&e);
            while let Some(s) = source {
                message = format!("{message}: {s}");
                source = s.source();
            }
            if message.contains("certificate") {
                message.push_str(
                    " (name the server's CA with sslrootcert=PATH in the URL; or only \
                     encrypt with sslmode=require, when no ~/.postgresql/root.crt is there)",
                );
            }
            message
        }
    })
}

impl PostgresStore {
    /// Connects to the database at `url` (`postgres://user@host/db`, or key=value form) and
    /// brings its schema up to date.
    /// A server that accepts the connection but does not answer is given up on after 10 s.
    pub async fn connect(url: &str) -> Result<Self, StoreError> {
        let reach = |m: String| StoreError::Backend(format!("cannot reach the database: {m}"));
        let (url, tls) = crate::tls::prepare(url)?;
        let config: tokio_postgres::Config = url
            .parse()
            .map_err(|e: tokio_postgres::Error| reach(format!("the URL is not one: {e}")))?;
        let manager = Manager::from_config(
            config,
            tls,
            ManagerConfig {
                recycling_method: RecyclingMethod::Fast,
            },
        );
        let pool = Pool::builder(manager)
            .max_size(POOL)
            .runtime(Runtime::Tokio1)
            .wait_timeout(Some(CONNECT))
            .create_timeout(Some(CONNECT))
            .recycle_timeout(Some(CONNECT))
            .build()
            .map_err(|e| reach(e.to_string()))?;
        let store = Self {
            pool,
            owner: Arc::from(""),
        };
        let mut client = store.client().await.map_err(|e| match e {
            StoreError::Backend(m) if !m.starts_with("cannot reach") => reach(m),
            other => other,
        })?;
        tokio::time::timeout(CONNECT, migrate(&mut client))
            .await
            .map_err(|_| StoreError::Backend("the database did not answer in time".into()))??;
        Ok(store)
    }

    /// The same database, holding only `owner`'s conversations (a gateway's client key's,
    /// say): no other owner's are listed, read, added to or deleted through it.
    pub fn owned_by(&self, owner: &str) -> Self {
        Self {
            owner: Arc::from(owner),
            ..self.clone()
        }
    }

    /// A connection from the pool (a new one when the server dropped the last).
    pub(crate) async fn client(&self) -> Result<Object, StoreError> {
        use deadpool_postgres::PoolError;
        self.pool.get().await.map_err(|e| match e {
            PoolError::Backend(e) => db(e),
            PoolError::Timeout(_) => StoreError::Backend(format!(
                "cannot reach the database: no answer within {} s",
                CONNECT.as_secs()
            )),
            other => StoreError::Backend(format!("cannot reach the database: {other}")),
        })
    }
}

async fn migrate(client: &mut Client) -> Result<(), StoreError> {
    let tx = client.transaction().await.map_err(db)?;
    // One migrator at a time, whatever machine it runs on.
    tx.execute("SELECT pg_advisory_xact_lock(71053101)", &[])
        .await
        .map_err(db)?;
    tx.batch_execute("CREATE TABLE IF NOT EXISTS kite_schema (version BIGINT NOT NULL)")
        .await
        .map_err(db)?;
    let version: i64 = tx
        .query_opt("SELECT version FROM kite_schema", &[])
        .await
        .map_err(db)?
        .map_or(0, |r| r.get(0));
    let known = MIGRATIONS.len() as i64;
    if version > known {
        return Err(StoreError::TooNew {
            path: "the Postgres database".into(),
            found: version,
            known,
        });
    }
    for step in MIGRATIONS.iter().skip(version as usize) {
        tx.batch_execute(step).await.map_err(db)?;
    }
    tx.execute("DELETE FROM kite_schema", &[])
        .await
        .map_err(db)?;
    tx.execute("INSERT INTO kite_schema (version) VALUES ($1)", &[&known])
        .await
        .map_err(db)?;
    tx.commit().await.map_err(db)
}

const COLUMNS: &str = "id, title, provider, model, created_ms, updated_ms, version";

fn conversation(r: &Row) -> Conversation {
    Conversation {
        id: r.get(0),
        title: r.get(1),
        provider: r.get(2),
        model: r.get(3),
        created_ms: r.get(4),
        updated_ms: r.get(5),
        version: r.get(6),
    }
}

async fn get(
    client: &impl tokio_postgres::GenericClient,
    owner: &str,
    id: &str,
    lock: bool,
) -> Result<Conversation, StoreError> {
    let lock = if lock { " FOR UPDATE" } else { "" };
    client
        .query_opt(
            &format!("SELECT {COLUMNS} FROM conversations WHERE id = $1 AND owner = $2{lock}"),
            &[&id, &owner],
        )
        .await
        .map_err(db)?
        .map(|r| conversation(&r))
        .ok_or_else(|| StoreError::NotFound(id.to_owned()))
}

/// Adds `turn` to conversation `id` seen at `version`, in one transaction that locks the
/// conversation's row, checks the version and, when compacting, archives the turns numbered
/// up to `archive_through`.
async fn add_turn(
    client: &mut Client,
    owner: &str,
    id: &str,
    version: i64,
    turn: &Turn,
    archive_through: Option<i64>,
) -> Result<i64, StoreError> {
    let body = turn.body()?;
    let tx = client.transaction().await.map_err(db)?;
    get(&tx, owner, id, true).await?.check(version)?;
    if let Some(through) = archive_through {
        tx.execute(
            "UPDATE turns SET archived = TRUE WHERE conversation = $1 AND number <= $2",
            &[&id, &through],
        )
        .await
        .map_err(db)?;
    }
    let now = now_ms();
    let next = version + 1;
    tx.execute(
        "INSERT INTO turns (conversation, number, created_ms, body) VALUES ($1, $2, $3, $4)",
        &[&id, &next, &now, &body],
    )
    .await
    .map_err(db)?;
    tx.execute(
        "UPDATE conversations SET version = $2, updated_ms = $3, \
         provider = COALESCE($4, provider), model = COALESCE($5, model) WHERE id = $1",
        &[&id, &next, &now, &turn.provider, &turn.model],
    )
    .await
    .map_err(db)?;
    tx.commit().await.map_err(db)?;
    Ok(next)
}

impl Store for PostgresStore {
    fn create(&self, title: &str) -> StoreFuture<'_, Conversation> {
        let c = Conversation::begin(title);
        Box::pin(async move {
            self.client()
                .await?
                .execute(
                    &format!(
                        "INSERT INTO conversations ({COLUMNS}, owner) \
                         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)"
                    ),
                    &[
                        &c.id,
                        &c.title,
                        &c.provider,
                        &c.model,
                        &c.created_ms,
                        &c.updated_ms,
                        &c.version,
                        &&*self.owner,
                    ],
                )
                .await
                .map_err(db)?;
            Ok(c)
        })
    }

    fn get(&self, id: &str) -> StoreFuture<'_, Conversation> {
        let id = id.to_owned();
        Box::pin(async move { get(&**self.client().await?, &self.owner, &id, false).await })
    }

    fn list(&self) -> StoreFuture<'_, Vec<Conversation>> {
        Box::pin(async move {
            let rows = self
                .client()
                .await?
                .query(
                    &format!(
                        "SELECT {COLUMNS} FROM conversations WHERE owner = $1 \
                         ORDER BY updated_ms DESC, id"
                    ),
                    &[&&*self.owner],
                )
                .await
                .map_err(db)?;
            Ok(rows.iter().map(conversation).collect())
        })
    }

    fn turns(&self, id: &str) -> StoreFuture<'_, Vec<StoredTurn>> {
        let id = id.to_owned();
        Box::pin(async move {
            let client = self.client().await?;
            get(&**client, &self.owner, &id, false).await?;
            let rows = client
                .query(
                    "SELECT number, created_ms, archived, body FROM turns \
                     WHERE conversation = $1 ORDER BY number",
                    &[&id],
                )
                .await
                .map_err(db)?;
            rows.iter()
                .map(|r| {
                    let number: i64 = r.get(0);
                    let body: String = r.get(3);
                    let turn: Turn = serde_json::from_str(&body).map_err(|e| {
                        StoreError::Backend(format!("turn {number} of {id} is not readable: {e}"))
                    })?;
                    Ok(StoredTurn {
                        number,
                        created_ms: r.get(1),
                        archived: r.get(2),
                        turn,
                    })
                })
                .collect()
        })
    }

    fn append(&self, id: &str, version: i64, turn: Turn) -> StoreFuture<'_, i64> {
        let id = id.to_owned();
        let turn = turn.settled();
        Box::pin(async move {
            let mut client = self.client().await?;
            add_turn(&mut client, &self.owner, &id, version, &turn, None).await
        })
    }

    fn compact(&self, id: &str, version: i64, through: i64, summary: Turn) -> StoreFuture<'_, i64> {
        let id = id.to_owned();
        let summary = Turn {
            summary: true,
            ..summary.settled()
        };
        Box::pin(async move {
            add_turn(
                &mut *self.client().await?,
                &self.owner,
                &id,
                version,
                &summary,
                Some(through),
            )
            .await
        })
    }

    fn delete(&self, id: &str) -> StoreFuture<'_, bool> {
        let id = id.to_owned();
        Box::pin(async move {
            let n = self
                .client()
                .await?
                .execute(
                    "DELETE FROM conversations WHERE id = $1 AND owner = $2",
                    &[&id, &&*self.owner],
                )
                .await
                .map_err(db)?;
            Ok(n > 0)
        })
    }
}
