//! What can go wrong with a store.

use std::path::PathBuf;

/// A store failure. Nothing stored before it is lost.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// Another writer added a turn first: the conversation is at `found` turns, not
    /// `expected`. Load it again and retry.
    #[error("conversation {id} changed meanwhile (it has {found} turns, not {expected})")]
    Conflict {
        /// The conversation.
        id: String,
        /// The version the writer named.
        expected: i64,
        /// The version found.
        found: i64,
    },
    /// Something of this name is there already (a key, a team).
    #[error("there is already {0}")]
    Exists(String),
    /// No conversation has this id.
    #[error("no conversation {0}")]
    NotFound(String),
    /// The database file is not one kite can read.
    #[error(
        "the conversation store {} cannot be read ({message}); move it aside (to {}.broken, \
         say) and kite starts a new one",
        .path.display(),
        .path.display()
    )]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// What the database said.
        message: String,
    },
    /// The database was written by a newer kite.
    #[error(
        "the conversation store {} has schema {found}; this kite knows up to {known}",
        .path.display()
    )]
    TooNew {
        /// The file.
        path: PathBuf,
        /// Its schema version.
        found: i64,
        /// The newest this kite knows.
        known: i64,
    },
    /// The database could not do what was asked (a full or read-only disk, a lock held too
    /// long).
    #[error("conversation store: {0}")]
    Backend(String),
}
