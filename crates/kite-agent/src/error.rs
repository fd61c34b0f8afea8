//! Errors that stop a run.

/// A failure that stops the loop. The run itself is left as it was before the failing step,
/// so [`Agent::drive`](crate::Agent::drive) can try again.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AgentError {
    /// The model call failed (after the transport's retries).
    #[error("model call failed: {0}")]
    Model(#[from] kite_core::Error),
    /// A tool failed in a way the model cannot fix.
    #[error("tool `{tool}` failed: {source}")]
    Tool {
        /// The tool's name.
        tool: String,
        /// The call's id.
        call_id: String,
        /// What went wrong.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// A step was reported to a run that does not fit where it stands.
    #[error(transparent)]
    Step(#[from] crate::steps::StepError),
}
