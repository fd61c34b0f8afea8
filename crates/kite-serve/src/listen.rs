//! Taking connections: HTTP/1.1 through hyper, with what `axum::serve` leaves out and a
//! gateway open to many clients needs:
//!
//! - a deadline for a new connection's first byte (a client that connects and says
//!   nothing holds nothing for long), then hyper's for a request's headers, which also
//!   bounds a kept-alive connection's silence between requests;
//! - a cap on open connections, and on those from one address; past either, the
//!   connection idle the longest (no request under way, nothing sent that waits to be read,
//!   whether it said nothing, a byte or half its headers for longer than a real client
//!   takes) is dropped to make room, so that
//!   connections that say little cannot keep out those that ask; new connections are never
//!   refused, but wait for room past the cap on all connections;
//! - `TCP_NODELAY` (each event goes out when it is written);
//! - a graceful end: once asked to stop, connections are still taken, but every new
//!   request is refused with a 503 (the gateway's `gate`) and its connection closed; when
//!   no request is under way (nor one begun within the first-byte deadline), the listener
//!   and the idle connections are closed and this returns.
//!
//! A request's body has its own deadline, kept where it is read (`middleware::gate`); all
//! are the gateway's [`Deadlines`](crate::Deadlines).

use crate::Deadlines;
use axum::body::Body;
use http_body_util::BodyExt;
use hyper_util::rt::{TokioIo, TokioTimer};
use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;

/// How many connections are served at once.
pub const MAX_CONNECTIONS: usize = 4096;
/// How many of them from one address before that address's idlest connection is dropped
/// for each new one (when it has none idle, the new one is still taken, within
/// [`MAX_CONNECTIONS`]).
pub const MAX_PER_ADDRESS: usize = 1024;
/// How long a connection must have been idle (and sent nothing that waits to be read) to
/// be dropped to make room: a new one sends its request at once, within a round trip.
const MIN_IDLE_MS: u64 = 300;
/// How often the accept loop, full, looks again for a connection to drop.
const LOOK_AGAIN_MS: u64 = 50;
/// How long a connection may take to send a request's head and still not be dropped to
/// make room: a real client sends it at once.
const MAX_READING_MS: u64 = 250;

/// One open connection, as the accept loop sees it.
struct Conn {
    addr: IpAddr,
    /// Requests under way (until their answer's body has been sent).
    busy: AtomicUsize,
    /// When it last became idle, in milliseconds since the table's start (`u64::MAX`
    /// until its task first runs).
    idle_since: AtomicU64,
    /// When its first request began to come (its first byte), until that request is read;
    /// 0 otherwise.
    reading_since: AtomicU64,
    /// Closes it: gracefully (requests under way finish), or, when `evicted`, at once.
    close: CancellationToken,
    /// Dropped to make room; counted against its address until its task ends.
    evicted: AtomicBool,
    /// Its socket (a descriptor of its own, closed only when the connection is forgotten),
    /// to ask the kernel whether what it sent waits to be read.
    fd: std::os::fd::OwnedFd,
}

impl Conn {
    /// Whether bytes it sent wait to be read: it is talking, not idle, even if its task
    /// has not got to them yet.
    fn sent_unread(&self) -> bool {
        use std::os::fd::AsRawFd;
        let mut pending: libc::c_int = 0;
        // SAFETY: FIONREAD writes one int; the descriptor is this connection's own and open
        // for as long as `self` lives.
        unsafe {
            libc::ioctl(self.fd.as_raw_fd(), libc::FIONREAD, &mut pending) == 0 && pending > 0
        }
    }
}

/// The open connections.
struct Table {
    started: Instant,
    inner: Mutex<Inner>,
    next: AtomicU64,
}

#[derive(Default)]
struct Inner {
    conns: HashMap<u64, Arc<Conn>>,
    per_addr: HashMap<IpAddr, usize>,
}

impl Table {
    fn new() -> Self {
        Self {
            started: Instant::now(),
            inner: Mutex::default(),
            next: AtomicU64::new(0),
        }
    }

    fn now(&self) -> u64 {
        self.started.elapsed().as_millis() as u64
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn add(&self, addr: IpAddr, fd: std::os::fd::OwnedFd) -> (u64, Arc<Conn>) {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let conn = Arc::new(Conn {
            addr,
            busy: AtomicUsize::new(0),
            // Not idle until its task is there to hear it: one taken in a burst waits for
            // its turn to be read, and is not dropped meanwhile.
            idle_since: AtomicU64::new(u64::MAX),
            reading_since: AtomicU64::new(0),
            close: CancellationToken::new(),
            evicted: AtomicBool::new(false),
            fd,
        });
        let mut inner = self.lock();
        inner.conns.insert(id, conn.clone());
        *inner.per_addr.entry(addr).or_default() += 1;
        (id, conn)
    }

    fn remove(&self, id: u64) {
        let mut inner = self.lock();
        Self::forget(&mut inner, id);
    }

    fn forget(inner: &mut Inner, id: u64) {
        if let Some(conn) = inner.conns.remove(&id)
            && let Some(n) = inner.per_addr.get_mut(&conn.addr)
        {
            *n -= 1;
            if *n == 0 {
                inner.per_addr.remove(&conn.addr);
            }
        }
    }

    fn from(&self, addr: IpAddr) -> usize {
        self.lock().per_addr.get(&addr).copied().unwrap_or(0)
    }

    /// Drops the connection idle the longest (from `addr`, or from anywhere): one with no
    /// request under way, idle for [`MIN_IDLE_MS`] at least, and not sending a request's
    /// head for less than [`MAX_READING_MS`]. False when there is none, nor one on its way
    /// out.
    fn close_idlest(&self, addr: Option<IpAddr>) -> bool {
        let now = self.now();
        let inner = self.lock();
        let mut leaving = false;
        let mut spared: Vec<*const Conn> = Vec::new();
        // The kernel is asked only about the one chosen (a few times at most, when the
        // idlest turns out to have sent something meanwhile).
        for _ in 0..8 {
            let idlest = inner
                .conns
                .values()
                .filter(|c| addr.is_none_or(|a| c.addr == a))
                .filter(|c| c.busy.load(Ordering::Acquire) == 0)
                .filter(|c| {
                    let evicted = c.evicted.load(Ordering::Relaxed);
                    leaving |= evicted;
                    !evicted
                })
                // Not one that has just come, nor one sending its request as it should.
                .filter(|c| now.saturating_sub(c.idle_since.load(Ordering::Relaxed)) >= MIN_IDLE_MS)
                .filter(|c| {
                    let reading = c.reading_since.load(Ordering::Relaxed);
                    reading == 0 || now.saturating_sub(reading) >= MAX_READING_MS
                })
                .filter(|c| !spared.contains(&Arc::as_ptr(c)))
                .min_by_key(|c| c.idle_since.load(Ordering::Relaxed));
            let Some(conn) = idlest else {
                return leaving;
            };
            if conn.sent_unread() {
                spared.push(Arc::as_ptr(conn));
                continue;
            }
            conn.evicted.store(true, Ordering::Relaxed);
            conn.close.cancel();
            return true;
        }
        leaving
    }

    /// Whether any connection has a request under way, or, while `coming` is true, one on
    /// its way in (sent and unread, or being read): a client sending its request as the
    /// drain would end gets its 503.
    fn any_busy(&self, coming: bool) -> bool {
        self.lock().conns.values().any(|c| {
            c.busy.load(Ordering::Acquire) > 0
                || (coming
                    && (c.reading_since.load(Ordering::Relaxed) > 0
                        || c.idle_since.load(Ordering::Relaxed) == u64::MAX
                        || c.sent_unread()))
        })
    }

    /// Closes every connection (gracefully: requests under way finish first).
    fn close_all(&self) {
        for conn in self.lock().conns.values() {
            conn.close.cancel();
        }
    }
}

/// Forgets a connection when its task ends.
struct Forget(Arc<Table>, u64);

impl Drop for Forget {
    fn drop(&mut self) {
        self.0.remove(self.1);
    }
}

/// Marks a connection busy from a request's start until its answer's body is dropped.
struct Busy(Arc<Table>, Arc<Conn>);

impl Busy {
    fn start(table: &Arc<Table>, conn: &Arc<Conn>) -> Self {
        conn.busy.fetch_add(1, Ordering::AcqRel);
        conn.reading_since.store(0, Ordering::Relaxed);
        Self(table.clone(), conn.clone())
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        self.1.idle_since.store(self.0.now(), Ordering::Relaxed);
        self.1.busy.fetch_sub(1, Ordering::AcqRel);
    }
}

/// A listener on `addr` whose queue of connections not yet taken holds as many as the
/// gateway serves at once (the system's own cap, `somaxconn`, may hold fewer): under a
/// flood, a client's connection waits there rather than being dropped and tried again a
/// second later.
pub async fn bind(addr: std::net::SocketAddr) -> std::io::Result<tokio::net::TcpListener> {
    let socket = match addr {
        std::net::SocketAddr::V4(_) => tokio::net::TcpSocket::new_v4()?,
        std::net::SocketAddr::V6(_) => tokio::net::TcpSocket::new_v6()?,
    };
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(MAX_CONNECTIONS as u32)
}

/// Serves `app` on `listener` within `deadlines` until `shutdown` resolves, then drains:
/// see the module doc.
pub(crate) async fn serve(
    listener: tokio::net::TcpListener,
    app: axum::Router,
    deadlines: Deadlines,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let table = Arc::new(Table::new());
    let open = Arc::new(tokio::sync::Semaphore::new(MAX_CONNECTIONS));
    let tasks = tokio_util::task::TaskTracker::new();
    let draining = Arc::new(AtomicBool::new(false));
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(deadlines.headers);
    let stopped = CancellationToken::new();
    let on_stop = stopped.clone();
    tokio::spawn(async move {
        shutdown.await;
        on_stop.cancel();
    });
    // While draining, how often it looks whether anything is still under way.
    let mut tick = tokio::time::interval(Duration::from_millis(50));
    let mut drained_at: Option<Instant> = None;
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            () = stopped.cancelled(), if !draining.load(Ordering::Relaxed) => {
                // From now on every request is refused (`gate`) and new connections serve
                // one; once no request is under way, the end.
                draining.store(true, Ordering::Relaxed);
                drained_at = Some(Instant::now());
                http.keep_alive(false);
                continue;
            }
            _ = tick.tick(), if draining.load(Ordering::Relaxed) => {
                // Requests on their way in are waited for, for a first byte's deadline at
                // most: clients that keep coming cannot hold the end off for ever.
                let coming = drained_at.is_some_and(|at| at.elapsed() < deadlines.first_byte);
                if table.any_busy(coming) {
                    continue;
                }
                break;
            }
        };
        let (tcp, peer) = match accepted {
            Ok(c) => c,
            Err(e) => {
                // Out of file descriptors and the like: wait, then take connections again.
                tracing::warn!(target: "kite::serve", error = %e, "cannot take a connection");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let addr = peer.ip();
        // Room for it: past the address's cap, that address's idlest connection goes (when
        // none can, the new one is still taken, within the cap on all connections).
        if table.from(addr) >= MAX_PER_ADDRESS {
            table.close_idlest(Some(addr));
        }
        let permit = match open.clone().try_acquire_owned() {
            Ok(p) => p,
            Err(_) => {
                // Full: the idlest connection goes, now or as soon as one may.
                let waited = loop {
                    table.close_idlest(None);
                    tokio::select! {
                        p = open.clone().acquire_owned() => break p.ok(),
                        () = stopped.cancelled(), if !draining.load(Ordering::Relaxed) => {
                            break None;
                        }
                        () = tokio::time::sleep(Duration::from_millis(LOOK_AGAIN_MS)) => {}
                    }
                };
                match waited {
                    Some(p) => p,
                    // Asked to stop while every connection was busy: this one waits no
                    // longer, and the drain begins.
                    None if !draining.load(Ordering::Relaxed) => continue,
                    None => break,
                }
            }
        };
        let _ = tcp.set_nodelay(true);
        let Ok(fd) = std::os::fd::AsFd::as_fd(&tcp).try_clone_to_owned() else {
            continue;
        };
        let (id, conn) = table.add(addr, fd);
        let service = Counted {
            app: app.clone(),
            table: table.clone(),
            conn: conn.clone(),
        };
        let http = http.clone();
        let table = table.clone();
        let first_byte = deadlines.first_byte;
        tasks.spawn(async move {
            let forget = Forget(table, id);
            let _permit = permit;
            conn.idle_since.store(forget.0.now(), Ordering::Relaxed);
            let mut one = [0u8; 1];
            let spoke = tokio::select! {
                // What came is heard first, even when it comes as the connection is closed.
                biased;
                read = tokio::time::timeout(first_byte, tcp.peek(&mut one)) => {
                    matches!(read, Ok(Ok(n)) if n > 0)
                }
                // Closed to make room before it said anything.
                () = conn.close.cancelled() => false,
            };
            if !spoke {
                return;
            }
            conn.reading_since
                .store(forget.0.now().max(1), Ordering::Relaxed);
            let served = http.serve_connection(TokioIo::new(tcp), service);
            tokio::pin!(served);
            tokio::select! {
                _ = served.as_mut() => return,
                () = conn.close.cancelled() => {}
            }
            // Dropped to make room, with no request under way: at once, however little
            // of one it sent.
            if conn.evicted.load(Ordering::Relaxed) && conn.busy.load(Ordering::Acquire) == 0 {
                return;
            }
            served.as_mut().graceful_shutdown();
            let _ = served.await;
        });
    }
    // No more connections; those open end once their requests are answered.
    drop(listener);
    table.close_all();
    tasks.close();
    tasks.wait().await;
    Ok(())
}

/// `app` as hyper's service for one connection, which is busy from each request's start
/// until its answer's body is done.
#[derive(Clone)]
struct Counted {
    app: axum::Router,
    table: Arc<Table>,
    conn: Arc<Conn>,
}

type Answer = std::pin::Pin<
    Box<
        dyn std::future::Future<Output = Result<axum::response::Response, std::convert::Infallible>>
            + Send,
    >,
>;

impl hyper::service::Service<hyper::Request<hyper::body::Incoming>> for Counted {
    type Response = axum::response::Response;
    type Error = std::convert::Infallible;
    type Future = Answer;

    fn call(&self, request: hyper::Request<hyper::body::Incoming>) -> Answer {
        let busy = Busy::start(&self.table, &self.conn);
        let answer = self.app.clone().oneshot(request.map(Body::new));
        Box::pin(async move {
            let response = answer.await.unwrap_or_else(|never| match never {});
            // The connection stays busy until the body is sent (or dropped).
            Ok(response.map(|body| {
                Body::new(body.map_frame(move |frame| {
                    let _ = &busy;
                    frame
                }))
            }))
        })
    }
}
