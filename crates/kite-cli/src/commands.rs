//! One module per command of `kite`: each holds its arguments (clap) and runs it.

pub(crate) mod ask;
pub(crate) mod cassette;
pub(crate) mod chat;
pub(crate) mod completions;
pub(crate) mod conversations;
pub(crate) mod keys;
pub(crate) mod man;
pub(crate) mod mcp;
pub(crate) mod model;
pub(crate) mod models;
pub(crate) mod prices;
pub(crate) mod responses;
pub(crate) mod serve;
pub(crate) mod skills;
pub(crate) mod transcribe;
pub(crate) mod trust;
pub(crate) mod usage;
