//! Stored conversations for the command line: which store (`KITE_STORE_URL`, else `[store]
//! url` in kite.toml, else `conversations.db` in kite's XDG data folder), and the
//! conversation a `kite ask` continues (`-c`, `--conversation ID`) or begins.

use crate::config::StoreConfig;
use kite::store::{Conversation, PostgresStore, SqliteStore, Store, StoreError, Turn};
use kite::{Error, Message, Part};
use std::path::PathBuf;

/// A store error as kite's, which the CLI reports.
fn error(e: StoreError) -> Error {
    Error::other(e)
}

/// The store the configuration names, as both backends are: conversations, and what a
/// fleet of gateways shares.
pub(crate) enum Backend {
    Sqlite(SqliteStore),
    Postgres(PostgresStore),
}

impl Backend {
    /// Its conversations (the user's own).
    pub(crate) fn store(&self) -> Box<dyn Store> {
        match self {
            Backend::Sqlite(s) => Box::new(s.clone()),
            Backend::Postgres(s) => Box::new(s.clone()),
        }
    }

    /// What a fleet of gateways shares.
    pub(crate) fn fleet(&self) -> std::sync::Arc<dyn kite::store::Fleet> {
        match self {
            Backend::Sqlite(s) => std::sync::Arc::new(s.clone()),
            Backend::Postgres(s) => std::sync::Arc::new(s.clone()),
        }
    }

    /// The conversations of `owner` (a gateway's client key) alone.
    pub(crate) fn owned_by(&self, owner: &str) -> std::sync::Arc<dyn Store> {
        match self {
            Backend::Sqlite(s) => std::sync::Arc::new(s.owned_by(owner)),
            Backend::Postgres(s) => std::sync::Arc::new(s.owned_by(owner)),
        }
    }

    /// Whether other machines may share it.
    pub(crate) fn is_shared(&self) -> bool {
        matches!(self, Backend::Postgres(_))
    }
}

/// The store the configuration names.
pub(crate) async fn open(config: &StoreConfig) -> Result<Box<dyn Store>, Error> {
    Ok(open_backend(config).await?.store())
}

/// The store the configuration names, as its backend.
pub(crate) async fn open_backend(config: &StoreConfig) -> Result<Backend, Error> {
    let url = std::env::var("KITE_STORE_URL")
        .ok()
        .filter(|u| !u.trim().is_empty())
        .or_else(|| config.url.clone());
    match url {
        Some(u) if libpq_keywords(&u) => {
            // A libpq key=value string: its password is as secret as a URL's.
            u.split_whitespace()
                .filter_map(|w| w.strip_prefix("password="))
                .for_each(|v| crate::terminal::secrets::secret(v.trim_matches('\'')));
            Ok(Backend::Postgres(
                PostgresStore::connect(&u).await.map_err(error)?,
            ))
        }
        Some(u) if u.starts_with("postgres://") || u.starts_with("postgresql://") => {
            // A password in the URL is as secret as a provider's key.
            kite::mcp::url_secrets(&u)
                .into_iter()
                .for_each(|v| crate::terminal::secrets::secret(&v));
            Ok(Backend::Postgres(
                PostgresStore::connect(&u).await.map_err(error)?,
            ))
        }
        Some(u) if u.contains("://") && !u.starts_with("sqlite://") => Err(Error::Config(format!(
            "the store URL {:?} is neither a postgres:// URL nor a SQLite file's path",
            u.split("://").next().unwrap_or_default()
        ))),
        Some(u) => {
            let path = PathBuf::from(u.strip_prefix("sqlite://").unwrap_or(&u));
            Ok(Backend::Sqlite(
                SqliteStore::open(path).await.map_err(error)?,
            ))
        }
        None => {
            let path = SqliteStore::default_path().ok_or_else(|| {
                Error::Config(
                    "no home folder to keep conversations in; set KITE_STORE_URL, or use \
                     --no-store"
                        .into(),
                )
            })?;
            Ok(Backend::Sqlite(
                SqliteStore::open(path).await.map_err(error)?,
            ))
        }
    }
}

/// The conversation a session's turns join: stored (an earlier one, or one made when its
/// first turn is saved), or, with `--no-store`, kept in memory only.
pub(crate) struct Thread {
    store: Option<Box<dyn Store>>,
    /// The store's spend ledger, and the command its rows name as their route.
    ledger: Option<(std::sync::Arc<dyn kite::store::Fleet>, &'static str)>,
    conversation: Option<Conversation>,
    /// The messages of its turns so far (archived ones left out, the summary first).
    pub history: Vec<Message>,
}

impl Thread {
    /// A conversation kept in memory only.
    pub(crate) fn memory() -> Self {
        Self {
            store: None,
            ledger: None,
            conversation: None,
            history: Vec::new(),
        }
    }

    /// The conversation to continue in `backend`: the last one (`last`), the one named
    /// `id`, or a new one. What its turns cost goes to the ledger as `command`'s.
    pub(crate) async fn begin(
        backend: Backend,
        command: &'static str,
        last: bool,
        id: Option<&str>,
    ) -> Result<Self, Error> {
        let mut thread = Self {
            store: Some(backend.store()),
            ledger: Some((backend.fleet(), command)),
            ..Self::memory()
        };
        match (last, id) {
            (_, Some(id)) => thread.load(id).await?,
            (true, None) => {
                let last = thread
                    .stored()?
                    .list()
                    .await
                    .map_err(error)?
                    .into_iter()
                    .next();
                let last = last.ok_or_else(|| {
                    Error::Config("there is no stored conversation to continue".into())
                })?;
                thread.load(&last.id).await?;
            }
            (false, None) => {}
        }
        Ok(thread)
    }

    /// The store, if the conversation is stored.
    pub(crate) fn store(&self) -> Option<&dyn Store> {
        self.store.as_deref()
    }

    /// The store, or an error saying there is none.
    fn stored(&self) -> Result<&dyn Store, Error> {
        self.store()
            .ok_or_else(|| Error::Config("this conversation is not stored (--no-store)".into()))
    }

    /// The stored conversation, once there is one.
    pub(crate) fn conversation(&self) -> Option<&Conversation> {
        self.conversation.as_ref()
    }

    /// Leaves the conversation: the next turn starts a new one.
    pub(crate) fn reset(&mut self) {
        self.conversation = None;
        self.history.clear();
    }

    /// Switches to the stored conversation `id`, read again from the store.
    pub(crate) async fn load(&mut self, id: &str) -> Result<(), Error> {
        let store = self.stored()?;
        let id = &resolve(store, id).await?;
        let conversation = store.get(id).await.map_err(error)?;
        let history = kite::store::history(&store.turns(id).await.map_err(error)?);
        self.history = history;
        self.conversation = Some(conversation);
        Ok(())
    }

    /// Writes what `turn`'s model calls used to the store's spend ledger, as the gateway
    /// writes its requests, so `kite usage` totals both (its route is the command's name).
    /// A turn that called no model, or a conversation kept in memory, writes nothing.
    pub(crate) async fn spent(&self, turn: &Turn, took: std::time::Duration) {
        let (Some((ledger, command)), Some(provider), Some(model)) =
            (&self.ledger, &turn.provider, &turn.model)
        else {
            return;
        };
        let u = &turn.usage;
        if u.input_tokens + u.output_tokens == 0 && u.cost.is_none_or(|c| c == 0.0) {
            return;
        }
        let Ok(id) = kite::serve::new_token() else {
            return;
        };
        let now = chrono::Utc::now().timestamp_millis();
        let duration_ms = i64::try_from(took.as_millis()).unwrap_or(i64::MAX);
        let count = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
        let row = kite::store::fleet::LedgerRow {
            time_ms: now - duration_ms,
            request_id: format!("cli-{id}"),
            route: (*command).to_owned(),
            provider: provider.clone(),
            model: model.clone(),
            input_tokens: count(u.input_tokens),
            output_tokens: count(u.output_tokens),
            cache_read_tokens: count(u.cached_input_tokens),
            cache_write_tokens: count(u.cache_write_tokens),
            reasoning_tokens: count(u.reasoning_tokens),
            cost: u.cost,
            status: if turn.cut_short { 499 } else { 200 },
            duration_ms,
            ..Default::default()
        };
        if let Err(e) = ledger.record(vec![row]).await {
            crate::terminal::output::errln!(
                "kite: what this turn used could not be written to the ledger (kite usage): {e}"
            );
        }
    }

    /// Saves a turn: the user's `question` and the messages it led to, as far as they are
    /// consistent (a tool call cut off before its result is left out). A conversation
    /// another process added to meanwhile takes the turn after its own, and is read again.
    pub(crate) async fn save(
        &mut self,
        question: Message,
        answers: &[Message],
        turn: Turn,
    ) -> Result<(), Error> {
        // A key kite knows is never stored, whoever said it: the user, a tool or the model.
        let messages = std::iter::once(question)
            .chain(answers.iter().cloned())
            .map(redacted)
            .collect();
        let turn = Turn { messages, ..turn }.settled();
        let Some(store) = &self.store else {
            self.history.extend(turn.messages);
            return Ok(());
        };
        let mut conversation = match self.conversation.take() {
            Some(c) => c,
            None => {
                // Titled by the question alone, not the files attached to it.
                let title = match turn.messages.first().and_then(|m| m.parts.first()) {
                    Some(Part::Text { text }) => text.clone(),
                    _ => turn.messages.first().map(Message::text).unwrap_or_default(),
                };
                store.create(&title).await.map_err(error)?
            }
        };
        let id = conversation.id.clone();
        let mut result = Err(StoreError::NotFound(id.clone()));
        let mut raced = false;
        for _ in 0..3 {
            result = store.append(&id, conversation.version, turn.clone()).await;
            match &result {
                Err(StoreError::Conflict { found, .. }) => {
                    conversation.version = *found;
                    raced = true;
                }
                _ => break,
            }
        }
        let saved = result.map_err(error);
        if let Ok(version) = saved {
            conversation.version = version;
        }
        // The conversation stays current, so the next turn can still be saved.
        self.conversation = Some(conversation);
        saved?;
        // Another writer's turns (or a compaction) came first: read it all again. The turn is
        // stored either way; if reading fails, the next turn goes without the others' turns.
        if raced && let Err(e) = self.load(&id).await {
            crate::terminal::output::errln!(
                "kite: the turn is stored, but the conversation could not be read again: {e}"
            );
            self.history.extend(turn.messages);
        } else if !raced {
            self.history.extend(turn.messages);
        }
        Ok(())
    }
}

/// `message` with every secret kite knows of (`terminal::secrets`) replaced in what was said.
fn redacted(mut message: Message) -> Message {
    kite::redact::redact_message(&mut message, &crate::terminal::secrets::secrets());
    message
}

/// Whether `url` is a libpq key=value string (`host=db user=kite dbname=kite`) rather than
/// a file's path.
fn libpq_keywords(url: &str) -> bool {
    const KEYS: [&str; 6] = ["host", "hostaddr", "port", "user", "dbname", "password"];
    !url.contains("://")
        && url
            .split_whitespace()
            .any(|w| w.split_once('=').is_some_and(|(k, _)| KEYS.contains(&k)))
}

/// The whole id of the stored conversation that `given` names: the id itself, or, as git
/// takes a commit, the start of exactly one id.
pub(crate) async fn resolve(store: &dyn Store, given: &str) -> Result<String, Error> {
    let given = given.trim();
    if given.is_empty() {
        return Err(Error::Config("give a conversation's id".into()));
    }
    if store.get(given).await.is_ok() {
        return Ok(given.to_owned());
    }
    let all = store.list().await.map_err(error)?;
    let matching: Vec<&str> = all
        .iter()
        .map(|c| c.id.as_str())
        .filter(|id| id.starts_with(given))
        .collect();
    match matching.as_slice() {
        [one] => Ok((*one).to_owned()),
        [] => Err(Error::Config(format!(
            "no stored conversation {given} (`kite conversations list` shows them)"
        ))),
        many => Err(Error::Config(format!(
            "{given} is the start of {} conversations' ids ({}); give more of it",
            many.len(),
            many.iter().take(5).copied().collect::<Vec<_>>().join(", ")
        ))),
    }
}
