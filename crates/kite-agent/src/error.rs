//! Errors that stop a run.

/// A failure that stops the loop. The run itself is left as it was before the failing step,
/// so [`Agent::drive`](crate::Agent::drive) can try again.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    /// The model call failed (after the transport's retries).
    #[error("model call failed: {0}")]
    Model(#[from] kite_core::Error),
    /// A tool failed in a way the model cannot fix.
    #[error("tool `{tool}` failed: {source}")]
    Tool {
        tool: String,
        call_id: String,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}
