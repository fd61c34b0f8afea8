//! A log of tool actions, for audit or for showing users what was done.

use crate::ToolRecord;

/// Receives a record of each tool call and its result, in call order, as the run makes them.
///
/// Any `Fn(&ToolRecord)` is a sink:
///
/// ```
/// # use kite_agent::ToolRecord;
/// let log = |r: &ToolRecord| eprintln!("{} -> {:?}", r.call.name, r.status);
/// # let _: &dyn kite_agent::AuditSink = &log;
/// ```
pub trait AuditSink: Send + Sync {
    /// Takes the record of one tool call, once it has its result.
    fn record(&self, record: &ToolRecord);
}

impl<F: Fn(&ToolRecord) + Send + Sync> AuditSink for F {
    fn record(&self, record: &ToolRecord) {
        self(record)
    }
}
