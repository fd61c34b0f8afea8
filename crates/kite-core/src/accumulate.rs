//! Folding a stream of [`Event`]s into a [`Response`].

use crate::{
    Error, Event, FinishReason, Message, Metadata, Part, Reasoning, Response, Role, Usage,
};

/// Builds a [`Response`] from stream events, in the order they arrive.
///
/// Consecutive text, reasoning or refusal deltas of the same part extend it; a delta of
/// another kind or another part starts a new one. Tool calls are taken whole from
/// [`Event::ToolCallEnd`]. The last [`Event::Usage`] is the response's usage.
///
/// ```
/// use kite_core::{Event, FinishReason, ResponseBuilder};
///
/// let mut b = ResponseBuilder::new();
/// b.push(Event::text(0, "Hel"));
/// b.push(Event::text(0, "lo"));
/// b.push(Event::Finish { reason: FinishReason::Stop });
/// assert_eq!(b.finish().unwrap().text(), "Hello");
/// ```
#[derive(Debug, Default)]
pub struct ResponseBuilder {
    id: Option<String>,
    model: Option<String>,
    parts: Vec<Part>,
    /// The stream's number of the last part, while it still takes deltas.
    open: Option<u32>,
    usage: Usage,
    finish: Option<FinishReason>,
    metadata: Metadata,
}

impl ResponseBuilder {
    /// An empty builder.
    pub fn new() -> Self {
        Self::default()
    }

    /// The response that `events` make.
    pub fn build(events: impl IntoIterator<Item = Event>) -> Result<Response, Error> {
        let mut b = Self::new();
        events.into_iter().for_each(|e| b.push(e));
        b.finish()
    }

    /// Adds one event.
    pub fn push(&mut self, event: Event) {
        match event {
            Event::Start { id, model } => {
                self.id = id.or(self.id.take());
                self.model = model.or(self.model.take());
            }
            Event::TextDelta { part, text } => self.append(
                part,
                text,
                |p| match p {
                    Part::Text { text } => Some(text),
                    _ => None,
                },
                |text| Part::Text { text },
            ),
            Event::RefusalDelta { part, text } => self.append(
                part,
                text,
                |p| match p {
                    Part::Refusal { text } => Some(text),
                    _ => None,
                },
                |text| Part::Refusal { text },
            ),
            Event::ReasoningDelta { part, text } => self.append(
                part,
                text,
                |p| match p {
                    Part::Reasoning(r) => Some(&mut r.text),
                    _ => None,
                },
                |text| {
                    Part::Reasoning(Reasoning {
                        text,
                        metadata: Metadata::new(),
                    })
                },
            ),
            Event::ReasoningEnd { part, metadata } => {
                match (self.open == Some(part), self.parts.last_mut()) {
                    (true, Some(Part::Reasoning(r))) => r.metadata.extend(metadata),
                    _ => self.parts.push(Part::Reasoning(Reasoning {
                        text: String::new(),
                        metadata,
                    })),
                }
                self.open = None;
            }
            Event::ToolCallEnd { call, .. } => {
                self.parts.push(Part::ToolCall(call));
                self.open = None;
            }
            Event::Usage { usage } => self.usage = usage,
            Event::Finish { reason } => self.finish = Some(reason),
            Event::Metadata { metadata } => self.metadata.extend(metadata),
            Event::ToolCallStart { .. } | Event::ToolCallDelta { .. } | Event::Unknown { .. } => {}
        }
    }

    fn append(
        &mut self,
        part: u32,
        delta: String,
        same: impl Fn(&mut Part) -> Option<&mut String>,
        new: impl Fn(String) -> Part,
    ) {
        if delta.is_empty() {
            return;
        }
        if self.open == Some(part)
            && let Some(text) = self.parts.last_mut().and_then(same)
        {
            text.push_str(&delta);
            return;
        }
        self.parts.push(new(delta));
        self.open = Some(part);
    }

    /// The response, or an error when the stream ended before the provider said it was done.
    pub fn finish(self) -> Result<Response, Error> {
        let Some(finish_reason) = self.finish else {
            return Err(Error::transport(
                crate::TransportErrorKind::ConnectionClosed,
                "the stream ended before the response was complete",
            ));
        };
        let mut message = Message::new(Role::Assistant, self.parts);
        message.metadata = self.metadata;
        Ok(Response {
            id: self.id,
            model: self.model,
            message,
            finish_reason,
            usage: self.usage,
        })
    }
}
