//! The spend ledger's writer: each answered request's row goes on a queue when its answer
//! ends, off the request's path, and one task writes what has gathered in one batch every
//! [`FLUSH`] (and at once when `/v1/usage` asks). What a crash loses is what was not yet
//! written: the rows of the last [`FLUSH`] and of a write under way, the rows of answers
//! still under way, and, while the store does not take them, the rows waiting for it (up
//! to [`HELD`]; past that the oldest are dropped, counted and logged). A batch whose
//! write's answer was lost is written again, and the store counts each request once. When
//! the gateway stops, what waits is written before it ends, tried again while the store
//! does not take it until what is left of the server's grace is over (and for
//! [`LAST_WRITE`] at least); a row that comes after is counted as dropped.

use crate::text::shown;
use kite_store::Fleet;
use kite_store::fleet::LedgerRow;
use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

/// How often gathered rows are written.
pub const FLUSH: Duration = Duration::from_millis(250);
/// How many rows one write takes at most.
const BATCH: usize = 2_000;
/// How many rows may wait for a store that does not take them.
const HELD: usize = 200_000;
/// How long one write may take.
const DEADLINE: Duration = Duration::from_secs(10);
/// How long the last write, at the end, may take at least.
pub(crate) const LAST_WRITE: Duration = Duration::from_secs(5);

/// Where answered requests' rows go.
#[derive(Clone)]
pub(crate) struct Ledger {
    rows: mpsc::UnboundedSender<LedgerRow>,
    counts: crate::metrics::LedgerCounts,
    /// Asks for what waits to be written now, and says when it is.
    settle: mpsc::UnboundedSender<tokio::sync::oneshot::Sender<()>>,
    /// When the last write must end by, once the gateway stops.
    end: Arc<std::sync::OnceLock<Instant>>,
    /// Told of each row's spending, until the totals show it.
    registry: Arc<crate::registry::Registry>,
}

impl Ledger {
    /// A ledger writing to `fleet`, and its writer task, which ends once `stop` is
    /// cancelled and the rows waiting are written. `written` is told of every write.
    pub(crate) fn start(
        fleet: Arc<dyn Fleet>,
        stop: tokio_util::sync::CancellationToken,
        written: Arc<crate::registry::Registry>,
        metrics: crate::metrics::LedgerCounts,
    ) -> (Self, tokio::task::JoinHandle<()>) {
        let (rows, queue) = mpsc::unbounded_channel();
        let (settle, asked) = mpsc::unbounded_channel();
        let counts = metrics.clone();
        let end = Arc::new(std::sync::OnceLock::new());
        let writer = Writer {
            fleet,
            written: written.clone(),
            metrics,
            end: end.clone(),
        };
        let task = tokio::spawn(writer.write(queue, asked, stop));
        let ledger = Self {
            rows,
            counts,
            settle,
            end,
            registry: written,
        };
        (ledger, task)
    }

    /// Queues `row`.
    pub(crate) fn record(&self, row: LedgerRow) {
        self.registry.pending.add(&row);
        if let Err(mpsc::error::SendError(row)) = self.rows.send(row) {
            self.registry.pending.forget([row.request_id.as_str()]);
            self.counts.ledger_dropped(1);
            tracing::warn!(target: "kite::serve", "an answer ended after the ledger's last write: its row is dropped");
        }
    }

    /// Says that the last write, once the gateway stops, must end by `by` (and, whatever
    /// `by` says, may take [`LAST_WRITE`]).
    pub(crate) fn end_by(&self, by: Instant) {
        let _ = self.end.set(by);
    }

    /// Waits (2 s at most) until the rows queued so far are written: what this replica
    /// answered is then in the ledger for anyone to read.
    pub(crate) async fn settle(&self) {
        let (done, written) = tokio::sync::oneshot::channel();
        if self.settle.send(done).is_ok() {
            let _ = tokio::time::timeout(Duration::from_secs(2), written).await;
        }
    }
}

/// The writer task's own.
struct Writer {
    fleet: Arc<dyn Fleet>,
    /// Told of every write.
    written: Arc<crate::registry::Registry>,
    metrics: crate::metrics::LedgerCounts,
    end: Arc<std::sync::OnceLock<Instant>>,
}

impl Writer {
    async fn write(
        self,
        mut queue: mpsc::UnboundedReceiver<LedgerRow>,
        mut asked: mpsc::UnboundedReceiver<tokio::sync::oneshot::Sender<()>>,
        stop: tokio_util::sync::CancellationToken,
    ) {
        let mut waiting: VecDeque<LedgerRow> = VecDeque::new();
        let mut failing = false;
        let mut settled = Vec::new();
        loop {
            let stopping = tokio::select! {
                () = tokio::time::sleep(FLUSH) => false,
                Some(done) = asked.recv() => {
                    settled.push(done);
                    false
                }
                () = stop.cancelled() => true,
            };
            while let Ok(row) = queue.try_recv() {
                waiting.push_back(row);
            }
            self.bound(&mut waiting);
            let wrote = !waiting.is_empty();
            match stopping {
                false => self.flush(&mut waiting, DEADLINE, &mut failing).await,
                true => self.last(&mut waiting, &mut queue, &mut failing).await,
            }
            if wrote {
                self.written.spent.notify_one();
            }
            // Those who asked are told once their rows are written, or that they cannot be.
            for done in settled.drain(..) {
                let _ = done.send(());
            }
            if stopping {
                if !waiting.is_empty() {
                    self.metrics.ledger_dropped(waiting.len() as u64);
                    tracing::error!(
                        target: "kite::serve",
                        lost = waiting.len(),
                        "the ledger's last rows could not be written before the end"
                    );
                }
                return;
            }
        }
    }

    /// Drops the oldest rows past [`HELD`].
    fn bound(&self, waiting: &mut VecDeque<LedgerRow>) {
        if waiting.len() > HELD {
            let dropped = waiting.len() - HELD;
            let gone: Vec<LedgerRow> = waiting.drain(..dropped).collect();
            let ids = gone.iter().map(|r| r.request_id.as_str());
            self.written.pending.forget(ids);
            self.metrics.ledger_dropped(dropped as u64);
            tracing::error!(
                target: "kite::serve",
                dropped,
                "the store has not taken the ledger's rows for too long: the oldest are dropped"
            );
        }
    }

    /// The last writes: tried again until they are taken or the end set by
    /// [`Ledger::end_by`] (at least [`LAST_WRITE`] from now), with the rows that come
    /// meanwhile.
    async fn last(
        &self,
        waiting: &mut VecDeque<LedgerRow>,
        queue: &mut mpsc::UnboundedReceiver<LedgerRow>,
        failing: &mut bool,
    ) {
        let floor = Instant::now() + LAST_WRITE;
        let end = self.end.get().copied().map_or(floor, |by| by.max(floor));
        loop {
            while let Ok(row) = queue.try_recv() {
                waiting.push_back(row);
            }
            self.bound(waiting);
            let left = end.saturating_duration_since(Instant::now());
            self.flush(waiting, left.min(DEADLINE), failing).await;
            if (waiting.is_empty() && queue.is_empty())
                || Instant::now() + Duration::from_millis(500) >= end
            {
                queue.close();
                while let Ok(row) = queue.try_recv() {
                    waiting.push_back(row);
                }
                return;
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    }

    /// Writes what waits, in batches, until done or a write fails.
    async fn flush(
        &self,
        waiting: &mut VecDeque<LedgerRow>,
        deadline: Duration,
        failing: &mut bool,
    ) {
        while !waiting.is_empty() {
            let n = waiting.len().min(BATCH);
            let batch: Vec<LedgerRow> = waiting.iter().take(n).cloned().collect();
            match tokio::time::timeout(deadline, self.fleet.record(batch)).await {
                Ok(Ok(())) => {
                    let done: Vec<LedgerRow> = waiting.drain(..n).collect();
                    let ids = done.iter().map(|r| r.request_id.as_str());
                    self.written.pending.written(ids);
                    self.metrics.ledger_written(n as u64);
                    if std::mem::take(failing) {
                        tracing::info!(target: "kite::serve", "the ledger is written again");
                    }
                }
                failed => {
                    if !std::mem::replace(failing, true) {
                        let why = match failed {
                            Ok(Err(e)) => e.to_string(),
                            _ => format!("no answer within {} s", deadline.as_secs()),
                        };
                        tracing::warn!(
                            target: "kite::serve",
                            waiting = waiting.len(),
                            "the ledger cannot be written ({why}); its rows wait and are tried again"
                        );
                    }
                    return;
                }
            }
        }
    }
}

/// The ledger row of an answer: who asked, what answered, what it used, how it went.
pub(crate) fn row(
    a: &crate::handlers::Answered,
    request_id: String,
    time_ms: i64,
    status: u16,
    first_byte: Option<Duration>,
    duration: Duration,
) -> LedgerRow {
    let tally = a.tally.lock().unwrap_or_else(|e| e.into_inner()).clone();
    let u = &tally.usage;
    let n = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
    let (key, team) = match &a.caller {
        crate::keys::Caller::Key(k) => (Some(k.id.clone()), k.team.clone()),
        crate::keys::Caller::Anyone => (None, None),
    };
    LedgerRow {
        time_ms,
        request_id,
        key,
        team,
        route: shown(&a.route),
        provider: shown(&a.provider),
        model: shown(&a.model),
        input_tokens: n(u.input_tokens),
        output_tokens: n(u.output_tokens),
        cache_read_tokens: n(u.cached_input_tokens),
        cache_write_tokens: n(u.cache_write_tokens),
        reasoning_tokens: n(u.reasoning_tokens),
        cost: (!tally.unpriced).then_some(tally.cost),
        status: i32::from(status),
        ttfb_ms: first_byte.map(|d| d.as_millis() as i64),
        duration_ms: duration.as_millis() as i64,
        cached: a.cached,
    }
}

/// The ledger row of a whole answer whose client left before it was written (499, as
/// nginx says), written when dropped armed: what the answer used so far (its estimate, see
/// `meter.rs`) is counted.
pub(crate) struct LeftEarly(
    Option<(
        Arc<crate::Gateway>,
        crate::handlers::Answered,
        i64,
        std::time::Instant,
    )>,
);

impl LeftEarly {
    pub(crate) fn arm(gw: &Arc<crate::Gateway>, answered: &crate::handlers::Answered) -> Self {
        let armed = gw.ledger.is_some().then(|| {
            let came = crate::admin::now_ms();
            (
                gw.clone(),
                answered.clone(),
                came,
                std::time::Instant::now(),
            )
        });
        Self(armed)
    }

    pub(crate) fn disarm(mut self) {
        self.0 = None;
    }
}

impl Drop for LeftEarly {
    fn drop(&mut self) {
        let Some((gw, answered, came, started)) = self.0.take() else {
            return;
        };
        if let Some(ledger) = &gw.ledger {
            let id = gw.next_id("req_");
            ledger.record(row(&answered, id, came, 499, None, started.elapsed()));
        }
    }
}
