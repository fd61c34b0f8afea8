//! The embedded default: one SQLite file (WAL mode) under the XDG data folder.
//!
//! Each operation runs on tokio's blocking pool with the one connection, so a slow disk
//! never stalls the runtime. A turn is one `BEGIN IMMEDIATE` transaction that checks the
//! conversation's version first: writers in other processes wait for the lock (up to the
//! busy timeout), then find the version moved and are refused rather than interleaved.

use crate::model::now_ms;
use crate::{Conversation, Store, StoreError, StoreFuture, StoredTurn, Turn};
use rusqlite::{Connection, ErrorCode, OptionalExtension, TransactionBehavior, params};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

mod fleet;

/// The schema, one step per version; a store is brought up to date when opened.
const MIGRATIONS: &[&str] = &[
    "
    CREATE TABLE conversations (
        id TEXT PRIMARY KEY,
        title TEXT NOT NULL,
        provider TEXT,
        model TEXT,
        created_ms INTEGER NOT NULL,
        updated_ms INTEGER NOT NULL,
        version INTEGER NOT NULL
    );
    CREATE TABLE turns (
        conversation TEXT NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
        number INTEGER NOT NULL,
        created_ms INTEGER NOT NULL,
        archived INTEGER NOT NULL DEFAULT 0,
        body TEXT NOT NULL,
        PRIMARY KEY (conversation, number)
    );
    CREATE INDEX conversations_by_update ON conversations (updated_ms DESC);
",
    fleet::TABLES,
    fleet::CHAINS,
];

/// How long a writer waits for another process's transaction before giving up.
const BUSY: Duration = Duration::from_secs(10);

/// Conversations in one SQLite file.
#[derive(Clone)]
pub struct SqliteStore {
    path: PathBuf,
    conn: Arc<Mutex<Connection>>,
    /// Whose conversations these are (empty: the user's own).
    owner: Arc<str>,
}

impl std::fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteStore")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

impl SqliteStore {
    /// `$XDG_DATA_HOME/kite/conversations.db` (by default `~/.local/share/kite/...`).
    pub fn default_path() -> Option<PathBuf> {
        let data = std::env::var_os("XDG_DATA_HOME")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/share")))?;
        Some(data.join("kite").join("conversations.db"))
    }

    /// Opens (or creates) the store at `path`, bringing its schema up to date.
    pub async fn open(path: impl AsRef<Path>) -> Result<Self, StoreError> {
        let path = path.as_ref().to_path_buf();
        let p = path.clone();
        let conn = blocking(move || open(&p)).await?;
        Ok(Self {
            path,
            conn: Arc::new(Mutex::new(conn)),
            owner: Arc::from(""),
        })
    }

    /// The same file, holding only `owner`'s conversations (a gateway's client key's, say):
    /// no other owner's are listed, read, added to or deleted through it.
    pub fn owned_by(&self, owner: &str) -> Self {
        Self {
            owner: Arc::from(owner),
            ..self.clone()
        }
    }

    /// The file it keeps conversations in.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Runs `f` with the connection on the blocking pool.
    fn with<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Connection) -> Result<T, StoreError> + Send + 'static,
    ) -> StoreFuture<'_, T> {
        let conn = self.conn.clone();
        let path = self.path.clone();
        Box::pin(blocking(move || {
            let mut conn = conn.lock().unwrap_or_else(|e| e.into_inner());
            f(&mut conn).map_err(|e| at(e, &path))
        }))
    }
}

async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, StoreError> + Send + 'static,
) -> Result<T, StoreError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| StoreError::Backend(format!("the store's task failed: {e}")))?
}

/// Names the file in an error that did not know it.
fn at(e: StoreError, path: &Path) -> StoreError {
    match e {
        StoreError::Corrupt { message, .. } => StoreError::Corrupt {
            path: path.to_path_buf(),
            message,
        },
        other => other,
    }
}

/// A database error as a store error: a file that is no database is `Corrupt`.
fn db(e: rusqlite::Error) -> StoreError {
    match e.sqlite_error_code() {
        Some(ErrorCode::NotADatabase | ErrorCode::DatabaseCorrupt) => StoreError::Corrupt {
            path: PathBuf::new(),
            message: e.to_string(),
        },
        _ => StoreError::Backend(e.to_string()),
    }
}

fn open(path: &Path) -> Result<Connection, StoreError> {
    // Conversations are private: folders made for them are the user's alone, and so is a
    // new file (SQLite gives its journal files the same permissions).
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        private_dirs(dir)
            .map_err(|e| StoreError::Backend(format!("cannot create {}: {e}", dir.display())))?;
    }
    let new = !path.exists();
    let conn = Connection::open(path).map_err(|e| at(db(e), path))?;
    if new {
        private_file(path)
            .map_err(|e| StoreError::Backend(format!("cannot protect {}: {e}", path.display())))?;
    }
    conn.busy_timeout(BUSY).map_err(db)?;
    let setup = || -> Result<(), rusqlite::Error> {
        conn.pragma_update(None, "journal_mode", "WAL")?;
        conn.pragma_update(None, "synchronous", "NORMAL")?;
        conn.pragma_update(None, "foreign_keys", "ON")
    };
    setup().map_err(|e| at(db(e), path))?;
    migrate(&conn, path)?;
    Ok(conn)
}

#[cfg(unix)]
fn private_dirs(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

#[cfg(not(unix))]
fn private_dirs(dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)
}

#[cfg(unix)]
fn private_file(path: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
}

#[cfg(not(unix))]
fn private_file(_: &Path) -> std::io::Result<()> {
    Ok(())
}

fn migrate(conn: &Connection, path: &Path) -> Result<(), StoreError> {
    let version: i64 = conn
        .pragma_query_value(None, "user_version", |r| r.get(0))
        .map_err(|e| at(db(e), path))?;
    let known = MIGRATIONS.len() as i64;
    if version > known {
        return Err(StoreError::TooNew {
            path: path.to_path_buf(),
            found: version,
            known,
        });
    }
    for (i, step) in MIGRATIONS.iter().enumerate().skip(version as usize) {
        let tx = conn.unchecked_transaction().map_err(db)?;
        tx.execute_batch(step).map_err(db)?;
        tx.pragma_update(None, "user_version", i as i64 + 1)
            .map_err(db)?;
        tx.commit().map_err(db)?;
    }
    Ok(())
}

fn conversation(r: &rusqlite::Row<'_>) -> Result<Conversation, rusqlite::Error> {
    Ok(Conversation {
        id: r.get(0)?,
        title: r.get(1)?,
        provider: r.get(2)?,
        model: r.get(3)?,
        created_ms: r.get(4)?,
        updated_ms: r.get(5)?,
        version: r.get(6)?,
    })
}

const COLUMNS: &str = "id, title, provider, model, created_ms, updated_ms, version";

fn get(conn: &Connection, owner: &str, id: &str) -> Result<Conversation, StoreError> {
    conn.query_row(
        &format!("SELECT {COLUMNS} FROM conversations WHERE id = ?1 AND owner = ?2"),
        [id, owner],
        conversation,
    )
    .optional()
    .map_err(db)?
    .ok_or_else(|| StoreError::NotFound(id.to_owned()))
}

/// Adds `turn` to conversation `id` seen at `version`, in one transaction that first checks
/// the version and, when compacting, archives the turns numbered up to `archive_through`.
fn add_turn(
    conn: &mut Connection,
    owner: &str,
    id: &str,
    version: i64,
    turn: &Turn,
    archive_through: Option<i64>,
) -> Result<i64, StoreError> {
    let body = turn.body()?;
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(db)?;
    get(&tx, owner, id)?.check(version)?;
    if let Some(through) = archive_through {
        tx.execute(
            "UPDATE turns SET archived = 1 WHERE conversation = ?1 AND number <= ?2",
            params![id, through],
        )
        .map_err(db)?;
    }
    let now = now_ms();
    let next = version + 1;
    tx.execute(
        "INSERT INTO turns (conversation, number, created_ms, body) VALUES (?1, ?2, ?3, ?4)",
        params![id, next, now, body],
    )
    .map_err(db)?;
    tx.execute(
        "UPDATE conversations SET version = ?2, updated_ms = ?3, \
         provider = COALESCE(?4, provider), model = COALESCE(?5, model) WHERE id = ?1",
        params![id, next, now, turn.provider, turn.model],
    )
    .map_err(db)?;
    tx.commit().map_err(db)?;
    Ok(next)
}

impl Store for SqliteStore {
    fn create(&self, title: &str) -> StoreFuture<'_, Conversation> {
        let c = Conversation::begin(title);
        let owner = self.owner.clone();
        self.with(move |conn| {
            conn.execute(
                &format!(
                    "INSERT INTO conversations ({COLUMNS}, owner) \
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)"
                ),
                params![
                    c.id,
                    c.title,
                    c.provider,
                    c.model,
                    c.created_ms,
                    c.updated_ms,
                    c.version,
                    &*owner
                ],
            )
            .map_err(db)?;
            Ok(c)
        })
    }

    fn get(&self, id: &str) -> StoreFuture<'_, Conversation> {
        let id = id.to_owned();
        let owner = self.owner.clone();
        self.with(move |conn| get(conn, &owner, &id))
    }

    fn list(&self) -> StoreFuture<'_, Vec<Conversation>> {
        let owner = self.owner.clone();
        self.with(move |conn| {
            let mut stmt = conn
                .prepare(&format!(
                    "SELECT {COLUMNS} FROM conversations WHERE owner = ?1 \
                     ORDER BY updated_ms DESC, id"
                ))
                .map_err(db)?;
            let rows = stmt.query_map([&*owner], conversation).map_err(db)?;
            rows.collect::<Result<_, _>>().map_err(db)
        })
    }

    fn turns(&self, id: &str) -> StoreFuture<'_, Vec<StoredTurn>> {
        let id = id.to_owned();
        let owner = self.owner.clone();
        self.with(move |conn| {
            get(conn, &owner, &id)?;
            let mut stmt = conn
                .prepare(
                    "SELECT number, created_ms, archived, body FROM turns \
                     WHERE conversation = ?1 ORDER BY number",
                )
                .map_err(db)?;
            let rows = stmt
                .query_map([&id], |r| {
                    Ok((
                        r.get(0)?,
                        r.get(1)?,
                        r.get::<_, i64>(2)?,
                        r.get::<_, String>(3)?,
                    ))
                })
                .map_err(db)?;
            let mut out = Vec::new();
            for row in rows {
                let (number, created_ms, archived, body) = row.map_err(db)?;
                let turn: Turn = serde_json::from_str(&body).map_err(|e| StoreError::Corrupt {
                    path: PathBuf::new(),
                    message: format!("turn {number} of {id} is not readable: {e}"),
                })?;
                out.push(StoredTurn {
                    number,
                    created_ms,
                    archived: archived != 0,
                    turn,
                });
            }
            Ok(out)
        })
    }

    fn append(&self, id: &str, version: i64, turn: Turn) -> StoreFuture<'_, i64> {
        let id = id.to_owned();
        let turn = turn.settled();
        let owner = self.owner.clone();
        self.with(move |conn| add_turn(conn, &owner, &id, version, &turn, None))
    }

    fn compact(&self, id: &str, version: i64, through: i64, summary: Turn) -> StoreFuture<'_, i64> {
        let id = id.to_owned();
        let summary = Turn {
            summary: true,
            ..summary.settled()
        };
        let owner = self.owner.clone();
        self.with(move |conn| add_turn(conn, &owner, &id, version, &summary, Some(through)))
    }

    fn delete(&self, id: &str) -> StoreFuture<'_, bool> {
        let id = id.to_owned();
        let owner = self.owner.clone();
        self.with(move |conn| {
            let n = conn
                .execute(
                    "DELETE FROM conversations WHERE id = ?1 AND owner = ?2",
                    [&id, &*owner],
                )
                .map_err(db)?;
            Ok(n > 0)
        })
    }
}
