//! The interface every provider implements.

use crate::{Error, Event, Request, Response, ResponseBuilder};
use futures_core::Stream;
use std::future::Future;
use std::pin::Pin;

/// A stream of events from one model call. Errors arrive as items; after an error the
/// stream ends.
pub type EventStream = Pin<Box<dyn Stream<Item = Result<Event, Error>> + Send>>;

/// A boxed future, as returned by [`Model::complete`].
pub type ModelFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// A language model: remote provider, local engine or test double.
///
/// Implementors write [`Model::stream`]; [`Model::complete`] buffers that same stream, so the
/// streamed and buffered paths cannot drift apart.
///
/// The request is borrowed: a model reads (encodes) it when called, and the caller keeps it,
/// so a loop need not copy its history into every request.
pub trait Model: Send + Sync {
    /// Streams the answer to `request`.
    fn stream(&self, request: &Request) -> EventStream;

    /// The whole answer to `request`.
    fn complete(&self, request: &Request) -> ModelFuture<'static, Result<Response, Error>> {
        Box::pin(collect(self.stream(request)))
    }

    /// What the model can do.
    fn capabilities(&self) -> Capabilities {
        Capabilities::default()
    }

    /// Who serves the model and where, for traces ([`crate::trace`]).
    fn origin(&self) -> crate::trace::Origin {
        crate::trace::Origin::local("unknown")
    }

    /// How many input tokens `request` takes, counted by the provider, where it counts
    /// them (Anthropic); `None` where it does not.
    fn count_tokens(&self, request: &Request) -> Option<ModelFuture<'static, Result<u64, Error>>> {
        let _ = request;
        None
    }
}

impl<M: Model + ?Sized> Model for std::sync::Arc<M> {
    fn stream(&self, request: &Request) -> EventStream {
        (**self).stream(request)
    }

    fn complete(&self, request: &Request) -> ModelFuture<'static, Result<Response, Error>> {
        (**self).complete(request)
    }

    fn capabilities(&self) -> Capabilities {
        (**self).capabilities()
    }

    fn origin(&self) -> crate::trace::Origin {
        (**self).origin()
    }

    fn count_tokens(&self, request: &Request) -> Option<ModelFuture<'static, Result<u64, Error>>> {
        (**self).count_tokens(request)
    }
}

/// Buffers an event stream into a [`Response`].
pub async fn collect(mut stream: EventStream) -> Result<Response, Error> {
    let mut builder = ResponseBuilder::new();
    while let Some(event) = std::future::poll_fn(|cx| stream.as_mut().poll_next(cx)).await {
        builder.push(event?);
    }
    builder.finish()
}

/// Features a model supports, for callers that adapt to them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Capabilities {
    /// Streams its answer as it is generated.
    pub streaming: bool,
    /// Can call tools.
    pub tools: bool,
    /// Can ask for several tool calls in one answer.
    pub parallel_tool_calls: bool,
    /// Accepts image parts in messages.
    pub images: bool,
    /// Can answer with JSON that follows a given schema.
    pub json_schema: bool,
}

impl Default for Capabilities {
    fn default() -> Self {
        Self {
            streaming: true,
            tools: true,
            parallel_tool_calls: true,
            images: false,
            json_schema: false,
        }
    }
}
