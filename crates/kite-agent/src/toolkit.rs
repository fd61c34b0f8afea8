//! A toolkit: tools that come with words for the system prompt (skills, a server's tools
//! and the instructions for using them), handed to an agent in one piece.

use crate::tool::Tool;
use std::sync::Arc;

/// Tools and the instructions that go with them. [`Agent::toolkit`](crate::Agent::toolkit)
/// adds the tools to the agent's set and the instructions to its system prompt.
pub trait Toolkit<C = ()> {
    /// The tools.
    fn tools(&self) -> Vec<Arc<dyn Tool<C>>>;

    /// Text for the system prompt, if any.
    fn instructions(&self) -> Option<String> {
        None
    }
}
