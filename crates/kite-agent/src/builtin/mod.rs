//! Safe built-in tools: the current time, arithmetic, and reading or listing files under
//! one folder. None of them writes anything or reaches the network.

mod calculate;
mod files;
mod now;

pub use calculate::{calculate, evaluate};
pub use files::{list_files, read_file};
pub use now::now;

use crate::Tool;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Every built-in tool, with file access confined to `root`, less `hidden` (a program's
/// own configuration, store, logins and keys: see [`read_file`]).
pub fn all<C: Send + Sync + 'static>(
    root: &Path,
    hidden: &[PathBuf],
) -> std::io::Result<Vec<Arc<dyn Tool<C>>>> {
    Ok(vec![
        Arc::new(now()),
        Arc::new(calculate()),
        Arc::new(read_file(root, hidden)?),
        Arc::new(list_files(root, hidden)?),
    ])
}

/// The names of the built-in tools.
pub const NAMES: [&str; 4] = ["now", "calculate", "read_file", "list_files"];
