//! The open connections, as the accept loop sees them, and which one goes to make room.
//!
//! A connection may be dropped to make room in two states only, and never while its
//! answer is under way:
//! - idle: no request under way, nothing sent that waits to be read, and not sending a
//!   request's head for longer than a real client takes; the one idle the longest goes;
//! - sending a request's body more slowly than any real client (a key holder can open
//!   thousands and trickle a byte a second into each): the slowest goes, when no
//!   connection is idle. Not an HTTP/2 connection, whose other streams may be answering:
//!   its slow body is bounded by the body's deadline alone.
//!
//! It also counts the requests under way in all, which an HTTP/2 connection, carrying
//! many at once, may take past what the files allow (`Table::room_for_a_request`).

use super::MAX_PER_ADDRESS;
use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicU8, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;
use tokio_util::sync::CancellationToken;

/// How long a connection must have been idle (and sent nothing that waits to be read) to
/// be dropped to make room: a new one sends its request at once, within a round trip.
const MIN_IDLE_MS: u64 = 300;
/// How long a connection may take to send a request's head and still not be dropped to
/// make room: a real client sends it at once.
const MAX_READING_MS: u64 = 250;
/// How long a request's body may have been coming before its connection may be dropped
/// to make room, when nothing is idle.
const MIN_RECEIVING_MS: u64 = 1000;

/// Why a connection was dropped (`Conn::evicted`).
pub(super) const KEPT: u8 = 0;
pub(super) const IDLE: u8 = 1;
pub(super) const SLOW: u8 = 2;
/// An HTTP/2 connection one of whose answers its client has not taken for too long.
pub(super) const STALLED: u8 = 3;

/// One open connection.
pub(super) struct Conn {
    addr: IpAddr,
    /// Requests under way (until their answer's body has been sent).
    pub(super) busy: AtomicUsize,
    /// When it last became idle, in milliseconds since the table's start (`u64::MAX`
    /// until its task first runs).
    pub(super) idle_since: AtomicU64,
    /// When its first request began to come (its first byte), until that request's head
    /// is read; 0 otherwise. (This and the two below follow one request at a time: an
    /// HTTP/2 connection's streams overwrite them, which is why such a connection is never
    /// judged by its body's rate.)
    pub(super) reading_since: AtomicU64,
    /// When a request's body began to come, until it has all come or the answer begins;
    /// 0 otherwise.
    pub(super) receiving_since: AtomicU64,
    /// How much of that body has come.
    pub(super) received: AtomicU64,
    /// Closes it: gracefully (requests under way finish), or, once `evicted`, at once.
    pub(super) close: CancellationToken,
    /// Dropped to make room ([`IDLE`] or [`SLOW`]); counted against its address until its
    /// task ends.
    pub(super) evicted: AtomicU8,
    /// It speaks HTTP/2 (known from its first bytes).
    pub(super) h2: std::sync::atomic::AtomicBool,
    /// Over HTTP/2, since when each answer under way has waited for its client to take a
    /// piece ([`Answering`]): a client can hold back a stream's window for ever.
    pub(super) answers: Mutex<Vec<std::sync::Weak<AtomicU64>>>,
    /// Its socket's descriptor while the socket is open (`Socket` clears it, under the
    /// write lock, before it closes), to ask the kernel whether what it sent waits to be
    /// read. Borrowed rather than duplicated: a duplicate would cost every connection a
    /// second file, and a gateway holding thousands runs out of them a third sooner.
    fd: std::sync::RwLock<Option<std::os::fd::RawFd>>,
}

impl Conn {
    /// Whether bytes it sent wait to be read: it is talking, not idle, even if its task
    /// has not got to them yet.
    fn sent_unread(&self) -> bool {
        let fd = self.fd.read().unwrap_or_else(|e| e.into_inner());
        let Some(fd) = *fd else {
            return false;
        };
        let mut pending: libc::c_int = 0;
        // SAFETY: FIONREAD writes one int; the descriptor is this connection's and stays
        // open while the read lock is held (`Socket` takes the write lock to close it).
        unsafe { libc::ioctl(fd, libc::FIONREAD, &mut pending) == 0 && pending > 0 }
    }

    /// Follows an answer under way ([`Answering`]).
    pub(super) fn follow(&self, waiting: &Arc<AtomicU64>) {
        let mut answers = self.answers.lock().unwrap_or_else(|e| e.into_inner());
        answers.retain(|a| a.strong_count() > 0);
        answers.push(Arc::downgrade(waiting));
    }

    /// Whether an answer under way has waited for its client since before `before`.
    pub(super) fn stalled(&self, before: u64) -> bool {
        let mut answers = self.answers.lock().unwrap_or_else(|e| e.into_inner());
        answers.retain(|a| a.strong_count() > 0);
        answers
            .iter()
            .filter_map(std::sync::Weak::upgrade)
            .any(|a| a.load(Ordering::Relaxed) < before)
    }

    /// Its socket is closing: the descriptor is no longer its own.
    pub(super) fn closing(&self) {
        *self.fd.write().unwrap_or_else(|e| e.into_inner()) = None;
    }

    /// Whether, dropped to make room, it goes at once (else it ends gracefully): an idle
    /// one that has not begun a request since, or one still sending its body.
    pub(super) fn goes_now(&self) -> bool {
        match self.evicted.load(Ordering::Relaxed) {
            IDLE => self.busy.load(Ordering::Acquire) == 0,
            SLOW => self.receiving_since.load(Ordering::Relaxed) != 0,
            STALLED => true,
            _ => false,
        }
    }

    /// The body's rate so far, in bytes a second, once it has been coming long enough to
    /// be judged.
    fn rate(&self, now: u64) -> Option<u64> {
        let since = self.receiving_since.load(Ordering::Relaxed);
        let took = now.saturating_sub(since);
        (since != 0 && took >= MIN_RECEIVING_MS)
            .then(|| self.received.load(Ordering::Relaxed) * 1000 / took.max(1))
    }
}

/// The open connections.
pub(super) struct Table {
    started: Instant,
    inner: Mutex<Inner>,
    next: AtomicU64,
    /// Connections open, and requests under way on all of them.
    open: AtomicUsize,
    requests: AtomicUsize,
}

#[derive(Default)]
struct Inner {
    conns: HashMap<u64, Arc<Conn>>,
    per_addr: HashMap<IpAddr, usize>,
}

impl Table {
    pub(super) fn new() -> Self {
        Self {
            started: Instant::now(),
            inner: Mutex::default(),
            next: AtomicU64::new(0),
            open: AtomicUsize::new(0),
            requests: AtomicUsize::new(0),
        }
    }

    /// Whether one more request fits in `files`: each open connection holds one, and each
    /// request under way one more (its upstream's). Over HTTP/1.1 a connection carries one
    /// request at a time, so the cap on connections keeps this true; an HTTP/2 connection
    /// carries many.
    pub(super) fn room_for_a_request(&self, files: usize) -> bool {
        self.open.load(Ordering::Relaxed) + self.requests.load(Ordering::Relaxed) < files
    }

    pub(super) fn now(&self) -> u64 {
        self.started.elapsed().as_millis() as u64
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(super) fn add(&self, addr: IpAddr, fd: std::os::fd::RawFd) -> (u64, Arc<Conn>) {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let conn = Arc::new(Conn {
            addr,
            busy: AtomicUsize::new(0),
            // Not idle until its task is there to hear it: one taken in a burst waits for
            // its turn to be read, and is not dropped meanwhile.
            idle_since: AtomicU64::new(u64::MAX),
            reading_since: AtomicU64::new(0),
            receiving_since: AtomicU64::new(0),
            received: AtomicU64::new(0),
            close: CancellationToken::new(),
            evicted: AtomicU8::new(KEPT),
            h2: std::sync::atomic::AtomicBool::new(false),
            answers: Mutex::default(),
            fd: std::sync::RwLock::new(Some(fd)),
        });
        self.open.fetch_add(1, Ordering::Relaxed);
        let mut inner = self.lock();
        inner.conns.insert(id, conn.clone());
        *inner.per_addr.entry(addr).or_default() += 1;
        (id, conn)
    }

    pub(super) fn remove(&self, id: u64) {
        let mut inner = self.lock();
        let conn = inner.conns.remove(&id);
        if conn.is_some() {
            self.open.fetch_sub(1, Ordering::Relaxed);
        }
        if let Some(conn) = conn
            && let Some(n) = inner.per_addr.get_mut(&conn.addr)
        {
            *n -= 1;
            if *n == 0 {
                inner.per_addr.remove(&conn.addr);
            }
        }
    }

    /// Makes room for a connection from `addr`: past that address's cap, one of its own
    /// goes; else, when `full`, one from anywhere. False when none can go (nor is one on
    /// its way out).
    pub(super) fn make_room(&self, addr: IpAddr, full: bool) -> bool {
        let from = self.lock().per_addr.get(&addr).copied().unwrap_or(0);
        let only = (from >= MAX_PER_ADDRESS).then_some(addr);
        if only.is_none() && !full {
            return true;
        }
        self.leaving(only) || self.close_idlest(only) || self.close_slowest(only)
    }

    /// Whether a connection (from `addr`, or from anywhere) dropped to make room is still
    /// on its way out, and will be at once: the room it leaves is the room asked for, so
    /// one new connection never drops two.
    fn leaving(&self, addr: Option<IpAddr>) -> bool {
        self.lock().conns.values().any(|c| {
            addr.is_none_or(|a| c.addr == a)
                && c.evicted.load(Ordering::Relaxed) != KEPT
                && c.goes_now()
        })
    }

    /// Drops the connection idle the longest (from `addr`, or from anywhere), as the
    /// module doc says. False when there is none.
    fn close_idlest(&self, addr: Option<IpAddr>) -> bool {
        let now = self.now();
        let inner = self.lock();
        let mut spared: Vec<*const Conn> = Vec::new();
        // The kernel is asked only about the one chosen (a few times at most, when the
        // idlest turns out to have sent something meanwhile).
        for _ in 0..8 {
            let idlest = inner
                .conns
                .values()
                .filter(|c| addr.is_none_or(|a| c.addr == a))
                .filter(|c| c.busy.load(Ordering::Acquire) == 0)
                .filter(|c| c.evicted.load(Ordering::Relaxed) == KEPT)
                // Not one that has just come, nor one sending its request as it should.
                .filter(|c| now.saturating_sub(c.idle_since.load(Ordering::Relaxed)) >= MIN_IDLE_MS)
                .filter(|c| {
                    let reading = c.reading_since.load(Ordering::Relaxed);
                    reading == 0 || now.saturating_sub(reading) >= MAX_READING_MS
                })
                .filter(|c| !spared.contains(&Arc::as_ptr(c)))
                .min_by_key(|c| c.idle_since.load(Ordering::Relaxed));
            let Some(conn) = idlest else {
                return false;
            };
            if conn.sent_unread() {
                spared.push(Arc::as_ptr(conn));
                continue;
            }
            conn.evicted.store(IDLE, Ordering::Relaxed);
            conn.close.cancel();
            return true;
        }
        false
    }

    /// Drops the connection sending a request's body the slowest (from `addr`, or from
    /// anywhere). False when none is.
    fn close_slowest(&self, addr: Option<IpAddr>) -> bool {
        let now = self.now();
        let inner = self.lock();
        let slowest = inner
            .conns
            .values()
            .filter(|c| addr.is_none_or(|a| c.addr == a))
            .filter(|c| c.evicted.load(Ordering::Relaxed) == KEPT)
            .filter(|c| !c.h2.load(Ordering::Relaxed))
            .filter_map(|c| Some((c.rate(now)?, c)))
            .min_by_key(|(rate, _)| *rate);
        let Some((_, conn)) = slowest else {
            return false;
        };
        conn.evicted.store(SLOW, Ordering::Relaxed);
        conn.close.cancel();
        true
    }

    /// Whether any connection has a request under way, or, while `coming` is true, one on
    /// its way in (sent and unread, or being read): a client sending its request as the
    /// drain would end gets its 503.
    pub(super) fn any_busy(&self, coming: bool) -> bool {
        self.lock().conns.values().any(|c| {
            c.busy.load(Ordering::Acquire) > 0
                || (coming
                    && (c.reading_since.load(Ordering::Relaxed) > 0
                        || c.idle_since.load(Ordering::Relaxed) == u64::MAX
                        || c.sent_unread()))
        })
    }

    /// Closes every HTTP/2 connection (gracefully: requests under way finish first).
    pub(super) fn close_h2(&self) {
        for conn in self.lock().conns.values() {
            if conn.h2.load(Ordering::Relaxed) {
                conn.close.cancel();
            }
        }
    }

    /// Closes every connection (gracefully: requests under way finish first).
    pub(super) fn close_all(&self) {
        for conn in self.lock().conns.values() {
            conn.close.cancel();
        }
    }
}

/// Forgets a connection when its task ends.
pub(super) struct Forget(pub(super) Arc<Table>, pub(super) u64);

impl Drop for Forget {
    fn drop(&mut self) {
        self.0.remove(self.1);
    }
}

/// Marks a connection busy from a request's start until its answer's body is dropped,
/// and receiving from then until the request's body has all come or the answer begins.
pub(super) struct Busy(Arc<Table>, Arc<Conn>);

impl Busy {
    pub(super) fn start(table: &Arc<Table>, conn: &Arc<Conn>, has_body: bool) -> Self {
        conn.busy.fetch_add(1, Ordering::AcqRel);
        table.requests.fetch_add(1, Ordering::Relaxed);
        conn.reading_since.store(0, Ordering::Relaxed);
        conn.received.store(0, Ordering::Relaxed);
        let since = if has_body { table.now().max(1) } else { 0 };
        conn.receiving_since.store(since, Ordering::Relaxed);
        Self(table.clone(), conn.clone())
    }

    /// The answer has begun: the request is no longer coming in.
    pub(super) fn answered(&self) {
        self.1.receiving_since.store(0, Ordering::Relaxed);
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        self.answered();
        self.1.idle_since.store(self.0.now(), Ordering::Relaxed);
        self.1.busy.fetch_sub(1, Ordering::AcqRel);
        self.0.requests.fetch_sub(1, Ordering::Relaxed);
    }
}
