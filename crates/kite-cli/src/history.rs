//! Stored conversations for the command line: which store (`KITE_STORE_URL`, else `[store]
//! url` in kite.toml, else `conversations.db` in kite's XDG data folder), and the
//! conversation a `kite ask` continues (`-c`, `--conversation ID`) or begins.

use crate::config::StoreConfig;
use kite::store::{Conversation, PostgresStore, SqliteStore, Store, StoreError, Turn};
use kite::{Error, Message, Part, Usage};
use std::path::PathBuf;

/// A store error as kite's, which the CLI reports.
fn error(e: StoreError) -> Error {
    Error::other(e)
}

/// The store the configuration names.
pub(crate) async fn open(config: &StoreConfig) -> Result<Box<dyn Store>, Error> {
    let url = std::env::var("KITE_STORE_URL")
        .ok()
        .filter(|u| !u.trim().is_empty())
        .or_else(|| config.url.clone());
    match url {
        Some(u) if u.starts_with("postgres://") || u.starts_with("postgresql://") => {
            // A password in the URL is as secret as a provider's key.
            kite::mcp::url_secrets(&u)
                .into_iter()
                .for_each(|v| crate::logging::secret(&v));
            Ok(Box::new(PostgresStore::connect(&u).await.map_err(error)?))
        }
        Some(u) if u.contains("://") && !u.starts_with("sqlite://") => Err(Error::Config(format!(
            "the store URL {:?} is neither a postgres:// URL nor a SQLite file's path",
            u.split("://").next().unwrap_or_default()
        ))),
        Some(u) => {
            let path = PathBuf::from(u.strip_prefix("sqlite://").unwrap_or(&u));
            Ok(Box::new(SqliteStore::open(path).await.map_err(error)?))
        }
        None => {
            let path = SqliteStore::default_path().ok_or_else(|| {
                Error::Config(
                    "no home folder to keep conversations in; set KITE_STORE_URL, or use \
                     --no-store"
                        .into(),
                )
            })?;
            Ok(Box::new(SqliteStore::open(path).await.map_err(error)?))
        }
    }
}

/// A conversation `kite ask` adds a turn to: an earlier one, or one made when the turn is
/// saved.
pub(crate) struct Thread {
    store: Box<dyn Store>,
    conversation: Option<Conversation>,
    /// The messages of its turns so far (archived ones left out).
    pub history: Vec<Message>,
}

impl Thread {
    /// The conversation to continue: the last one (`last`), the one named `id`, or a new one.
    pub(crate) async fn begin(
        store: Box<dyn Store>,
        last: bool,
        id: Option<&str>,
    ) -> Result<Self, Error> {
        let conversation = match (last, id) {
            (_, Some(id)) => Some(store.get(id).await.map_err(error)?),
            (true, None) => Some(
                store
                    .list()
                    .await
                    .map_err(error)?
                    .into_iter()
                    .next()
                    .ok_or_else(|| {
                        Error::Config("there is no stored conversation to continue".into())
                    })?,
            ),
            (false, None) => None,
        };
        let history = match &conversation {
            Some(c) => kite::store::history(&store.turns(&c.id).await.map_err(error)?),
            None => Vec::new(),
        };
        Ok(Self {
            store,
            conversation,
            history,
        })
    }

    /// Saves a turn: the user's `question` and the messages it led to. A conversation another
    /// process added to meanwhile takes the turn after its own.
    pub(crate) async fn save(
        &mut self,
        question: Message,
        answers: &[Message],
        usage: Usage,
        model: &str,
    ) -> Result<String, Error> {
        let conversation = match self.conversation.take() {
            Some(c) => c,
            None => {
                // Titled by the question alone, not the files attached to it.
                let title = match question.parts.first() {
                    Some(Part::Text { text }) => text.clone(),
                    _ => question.text(),
                };
                self.store.create(&title).await.map_err(error)?
            }
        };
        let mut messages = vec![question];
        messages.extend_from_slice(answers);
        let mut turn = Turn::new(messages);
        turn.usage = usage;
        turn.model = Some(model.to_owned());
        let id = conversation.id.clone();
        let mut version = conversation.version;
        for _ in 0..3 {
            match self.store.append(&id, version, turn.clone()).await {
                Ok(_) => return Ok(id),
                Err(StoreError::Conflict { found, .. }) => version = found,
                Err(e) => return Err(error(e)),
            }
        }
        Err(error(StoreError::Conflict {
            id,
            expected: version,
            found: version,
        }))
    }
}
