//! The streaming face of the driver.

use crate::{AgentError, Run, ToolRecord};
use futures_core::Stream;
use kite_core::{Event, ToolCall};
use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use tokio_util::sync::CancellationToken;

/// What a streamed run reports, as it happens.
#[derive(Debug)]
#[non_exhaustive]
pub enum AgentEvent<C = ()> {
    /// An event of the model's stream.
    Model(Event),
    /// A tool call is about to run.
    ToolStarted {
        /// The call, with its arguments as hooks left them.
        call: ToolCall,
    },
    /// A tool call finished (or was skipped or refused), in call order.
    ToolFinished {
        /// The call, what the model is told, and whether it ran.
        record: ToolRecord,
    },
    /// The run stopped; the last item of the stream.
    Done(Box<Run<C>>),
}

/// Where the driver puts events for the stream to hand out.
pub(crate) struct Sink<C>(Arc<Mutex<VecDeque<AgentEvent<C>>>>);

impl<C> Sink<C> {
    pub(crate) fn push(&self, event: AgentEvent<C>) {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push_back(event);
    }

    fn pop(&self) -> Option<AgentEvent<C>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).pop_front()
    }
}

type Driver<C> = Pin<Box<dyn Future<Output = Result<Run<C>, AgentError>> + Send>>;

/// A run as a stream of [`AgentEvent`]s. The driver advances only while the stream is
/// polled, so at most one step's events wait in memory. Dropping the stream abandons the run;
/// [`cancel`](Self::cancel) ends it cleanly, with a last [`AgentEvent::Done`].
pub struct AgentStream<C> {
    sink: Sink<C>,
    driver: Option<Driver<C>>,
    cancel: CancellationToken,
    failed: Stash<C>,
}

/// Where the driver leaves its run when it fails, for [`AgentStream::failed_run`].
pub(crate) type Stash<C> = Arc<Mutex<Option<Run<C>>>>;

impl<C: Send + 'static> AgentStream<C> {
    pub(crate) fn new<F, Fut>(drive: F) -> Self
    where
        F: FnOnce(Sink<C>, CancellationToken, Stash<C>) -> Fut,
        Fut: Future<Output = Result<Run<C>, AgentError>> + Send + 'static,
    {
        let queue = Arc::new(Mutex::new(VecDeque::new()));
        let cancel = CancellationToken::new();
        let failed = Stash::default();
        let driver = Box::pin(drive(Sink(queue.clone()), cancel.clone(), failed.clone()));
        Self {
            sink: Sink(queue),
            driver: Some(driver),
            cancel,
            failed,
        }
    }

    /// After the stream ended with an error: the run as far as it got, its history one a
    /// provider accepts except perhaps for tool calls planned but not yet run (what the
    /// failed step would have added is not in it). `None` before an error, or once taken.
    pub fn failed_run(&mut self) -> Option<Run<C>> {
        self.failed.lock().unwrap_or_else(|e| e.into_inner()).take()
    }

    /// Ends the run at the next step; the stream then ends with [`AgentEvent::Done`].
    pub fn cancel(&self) {
        self.cancel.cancel();
    }
}

impl<C: Send + 'static> Stream for AgentStream<C> {
    type Item = Result<AgentEvent<C>, AgentError>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        loop {
            if let Some(event) = this.sink.pop() {
                return Poll::Ready(Some(Ok(event)));
            }
            let Some(driver) = this.driver.as_mut() else {
                return Poll::Ready(None);
            };
            match driver.as_mut().poll(cx) {
                Poll::Ready(result) => {
                    this.driver = None;
                    match result {
                        Ok(run) => this.sink.push(AgentEvent::Done(Box::new(run))),
                        // Events queued before the error still come first.
                        Err(e) => {
                            if let Some(event) = this.sink.pop() {
                                this.driver = Some(Box::pin(async move { Err(e) }));
                                return Poll::Ready(Some(Ok(event)));
                            }
                            return Poll::Ready(Some(Err(e)));
                        }
                    }
                }
                Poll::Pending => {
                    if let Some(event) = this.sink.pop() {
                        return Poll::Ready(Some(Ok(event)));
                    }
                    return Poll::Pending;
                }
            }
        }
    }
}
