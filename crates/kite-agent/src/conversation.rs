//! A conversation that keeps its history between turns.

use crate::{Agent, AgentError, Run};
use kite_core::Message;

/// A conversation with an agent: each [`send`](Self::send) runs the loop on the history so
/// far and keeps what it added. The system prompt is the agent's, or one given per call; it
/// is never stored in the history.
///
/// ```no_run
/// # async fn demo(agent: kite_agent::Agent) -> Result<(), kite_agent::AgentError> {
/// let mut chat = kite_agent::Conversation::new(agent, ());
/// chat.note("The user opened the billing page.");
/// let reply = chat.send("Why was I charged twice?").await?;
/// println!("{}", reply.text());
/// # Ok(()) }
/// ```
pub struct Conversation<C = ()> {
    agent: Agent<C>,
    history: Vec<Message>,
    /// The context each run starts from; updated with what the run left.
    pub context: C,
}

impl<C: Clone + Send + Sync + 'static> Conversation<C> {
    /// An empty conversation.
    pub fn new(agent: Agent<C>, context: C) -> Self {
        Self::with_history(agent, context, Vec::new())
    }

    /// A conversation continuing a stored history.
    pub fn with_history(agent: Agent<C>, context: C, history: Vec<Message>) -> Self {
        Self {
            agent,
            history,
            context,
        }
    }

    /// The history: user messages, answers, tool calls and results.
    pub fn history(&self) -> &[Message] {
        &self.history
    }

    /// Adds something that happened ("the user opened the billing page") to the history
    /// without calling the model; the model sees it on the next turn.
    pub fn note(&mut self, text: impl Into<String>) {
        self.history.push(Message::user(text));
    }

    /// Adds any message to the history without calling the model.
    pub fn push(&mut self, message: Message) {
        self.history.push(message);
    }

    /// Sends a user message and runs the loop to its end.
    pub async fn send(&mut self, text: impl Into<String>) -> Result<Run<C>, AgentError> {
        let agent = self.agent.clone();
        self.send_with(&agent, text).await
    }

    /// Sends a user message with system instructions for this turn only.
    pub async fn send_with_system(
        &mut self,
        system: impl Into<String>,
        text: impl Into<String>,
    ) -> Result<Run<C>, AgentError> {
        let agent = self.agent.clone().system(system);
        self.send_with(&agent, text).await
    }

    async fn send_with(
        &mut self,
        agent: &Agent<C>,
        text: impl Into<String>,
    ) -> Result<Run<C>, AgentError> {
        let mut history = self.history.clone();
        history.push(Message::user(text));
        let run = agent.run(self.context.clone(), history).await?;
        self.keep(&run);
        Ok(run)
    }

    /// Continues a run that stopped for approval (after [`Run::approve`] or
    /// [`Run::reject`]), keeping what it adds.
    pub async fn resume(&mut self, mut run: Run<C>) -> Result<Run<C>, AgentError> {
        self.agent.drive(&mut run).await?;
        self.keep(&run);
        Ok(run)
    }

    fn keep(&mut self, run: &Run<C>) {
        self.history = run.messages().to_vec();
        self.context = run.context.clone();
    }
}
