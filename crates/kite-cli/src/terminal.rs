//! The terminal's parts: what kite prints and how (`output`, `markdown`, `text`), the
//! secrets it never prints (`secrets`), the log (`logging`, `verbose`), waiting for a silent model (`waiting`), reading without blocking
//! the runtime (`blocking`) and the signals that end kite (`signals`).

pub(crate) mod blocking;
pub(crate) mod logging;
pub(crate) mod markdown;
pub(crate) mod output;
pub(crate) mod secrets;
pub(crate) mod signals;
pub(crate) mod text;
pub(crate) mod verbose;
pub(crate) mod waiting;
