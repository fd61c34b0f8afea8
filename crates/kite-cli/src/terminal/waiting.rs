//! Waiting for the model: a line on a terminal while it is silent, and a deadline for a model
//! that says nothing at all.

use crate::terminal::output::err;
use kite::{AgentEvent, Error};

/// A spinner on a terminal's stderr while nothing shows (the model is silent, or its
/// answer waits for a Markdown block to end), and after a moment of silence the line
/// `kite: waiting for the model… 12s`; cleared as soon as anything arrives.
pub(crate) struct Waiting {
    on: bool,
    limit: std::time::Duration,
    since: tokio::time::Instant,
    tools_running: usize,
    shown: bool,
    /// The spinner's frame.
    frame: usize,
}

impl Waiting {
    /// After this long without news, the wait is shown.
    const AFTER: std::time::Duration = std::time::Duration::from_secs(2);

    pub(crate) fn new(on: bool, limit: std::time::Duration) -> Self {
        Self {
            on,
            limit,
            since: tokio::time::Instant::now(),
            tools_running: 0,
            shown: false,
            frame: 0,
        }
    }

    pub(crate) fn event(&mut self, e: Option<&AgentEvent>) {
        // An event the API does not define is no news from the model: a stream of them
        // must not keep a silent model alive.
        if let Some(AgentEvent::Model(kite::Event::Unknown { .. })) = e {
            return;
        }
        match e {
            Some(AgentEvent::ToolStarted { .. }) => self.tools_running += 1,
            Some(AgentEvent::ToolFinished { .. }) => {
                self.tools_running = self.tools_running.saturating_sub(1)
            }
            _ => {}
        }
        self.since = tokio::time::Instant::now();
        if self.shown {
            err!("\r\x1b[K");
            self.shown = false;
        }
    }

    /// A tick of the clock; `mid_line` when the answer stopped in the middle of a line,
    /// which the waiting line would overwrite, so it is not shown then.
    pub(crate) fn tick(&mut self, mid_line: bool) -> Result<(), Error> {
        let silent = self.since.elapsed();
        if self.tools_running > 0 {
            return Ok(());
        }
        if silent >= self.limit {
            self.event(None);
            return Err(Error::transport(
                kite::TransportErrorKind::RequestTimeout,
                format!("no answer within {:?}: the model said nothing", self.limit),
            ));
        }
        if !self.on || mid_line {
            return Ok(());
        }
        const FRAMES: [char; 10] = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];
        self.frame = (self.frame + 1) % FRAMES.len();
        let frame = FRAMES[self.frame];
        if silent >= Self::AFTER {
            err!(
                "\r\x1b[K{frame} kite: waiting for the model… {}s",
                silent.as_secs()
            );
        } else {
            err!("\r\x1b[K\x1b[2m{frame}\x1b[0m");
        }
        self.shown = true;
        Ok(())
    }
}
