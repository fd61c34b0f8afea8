//! Conversations that last: a [`Store`] that keeps each conversation's turns,
//! [`SqliteStore`], the embedded default (one file, no server), and [`State`], a
//! conversation as bytes for programs that keep it themselves.
//!
//! A conversation holds turns: the user's message and every assistant and tool message it
//! led to, with the usage of its model calls. The system prompt is never stored; it is
//! given on every call, so it can carry the date or the user's context. A turn is written
//! in one transaction, as far as it is consistent ([`Turn::settled`]: no tool call without
//! its result), and two writers on one conversation never interleave: the second is refused
//! with [`StoreError::Conflict`] and reads again.
//!
//! ```
//! use kite_core::Message;
//! use kite_store::{SqliteStore, Store, Turn};
//!
//! # tokio::runtime::Builder::new_multi_thread().build().unwrap().block_on(async {
//! # let dir = std::env::temp_dir().join(format!("kite-store-doc-{}", std::process::id()));
//! let store = SqliteStore::open(dir.join("conversations.db")).await?;
//! let chat = store.create("Trip to Lisbon").await?;
//! let turn = Turn::new(vec![Message::user("Where to eat?"), Message::assistant("Try Alfama.")]);
//! let version = store.append(&chat.id, chat.version, turn).await?;
//! assert_eq!(version, 1);
//! assert_eq!(store.turns(&chat.id).await?.len(), 1);
//! # let _ = std::fs::remove_dir_all(&dir);
//! # Ok::<(), kite_store::StoreError>(())
//! # }).unwrap();
//! ```

pub mod compact;
mod error;
pub mod fleet;
mod model;
mod postgres;
mod sqlite;
mod state;
mod store;
mod tls;
mod tokens;

pub use error::StoreError;
pub use fleet::Fleet;
pub use model::{Conversation, StoredTurn, Turn, history};
pub use postgres::PostgresStore;
pub use sqlite::SqliteStore;
pub use state::{State, StateError};
pub use store::{Store, StoreFuture};
#[cfg(feature = "tiktoken")]
pub use tokens::Tiktoken;
pub use tokens::{Estimate, TokenCounter};
