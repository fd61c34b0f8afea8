//! The store contract every backend implements, so the same tests run against each.

use crate::{Conversation, StoreError, StoredTurn, Turn};
use std::future::Future;
use std::pin::Pin;

/// A store's answer, on its way.
pub type StoreFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, StoreError>> + Send + 'a>>;

/// Where conversations are kept.
///
/// A turn is appended in one transaction: after a crash the conversation holds the whole
/// turn or none of it. Appending names the version (turn count) the writer last saw; when
/// another writer got there first, the append is refused with [`StoreError::Conflict`] and
/// nothing is written, so turns are never lost or interleaved.
pub trait Store: Send + Sync {
    /// Starts a conversation titled `title` (shortened to a line).
    fn create(&self, title: &str) -> StoreFuture<'_, Conversation>;

    /// The conversation `id`'s description.
    fn get(&self, id: &str) -> StoreFuture<'_, Conversation>;

    /// Every conversation, the most recently updated first.
    fn list(&self) -> StoreFuture<'_, Vec<Conversation>>;

    /// The turns of conversation `id`, archived ones included, in order.
    fn turns(&self, id: &str) -> StoreFuture<'_, Vec<StoredTurn>>;

    /// Appends `turn` (as far as it is consistent, see [`Turn::settled`]) to conversation
    /// `id`, which the writer saw at `version`; returns the new version.
    fn append(&self, id: &str, version: i64, turn: Turn) -> StoreFuture<'_, i64>;

    /// Compacts conversation `id`, which the writer saw at `version`: turns numbered up to
    /// `through` are archived (kept, but no longer sent to the model) and `summary` is
    /// appended, marked as one, in the same transaction; returns the new version.
    fn compact(&self, id: &str, version: i64, through: i64, summary: Turn) -> StoreFuture<'_, i64>;

    /// Deletes conversation `id` and its turns; false when there was none.
    fn delete(&self, id: &str) -> StoreFuture<'_, bool>;
}
