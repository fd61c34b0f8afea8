//! Taking connections: HTTP/1.1, and HTTP/2 without TLS for clients that speak it from the
//! start (`h2c` with prior knowledge: proxies, service meshes, `curl --http2-prior-knowledge`),
//! through hyper, with what `axum::serve` leaves out and a gateway open to many clients
//! needs:
//!
//! - a deadline for a new connection's first byte (a client that connects and says
//!   nothing holds nothing for long), then one for the HTTP/2 preface or the first bytes
//!   that are not it, then hyper's for a request's headers, which also bounds a kept-alive
//!   connection's silence between requests (over HTTP/2, one with nothing under way for as
//!   long is closed; `listen/connection.rs`);
//! - a cap on open connections, and on those from one address; past either, the
//!   connection idle the longest (no request under way, nothing sent that waits to be read,
//!   whether it said nothing, a byte or half its headers for longer than a real client
//!   takes) is dropped to make room, or, when none is idle, the one sending a request's
//!   body the slowest (`listen/table.rs`; not an HTTP/2 one), so that connections that say
//!   little cannot keep out those that ask; new connections are never refused, but wait
//!   for room past the cap on all connections;
//! - in all no more requests than the files allow: each open connection holds one, each
//!   request under way one more (its upstream's); past twice the cap on connections a
//!   request is refused with a 503 in its API's shape. Over HTTP/1.1 the cap on
//!   connections keeps to that; an HTTP/2 connection carries up to [`MAX_STREAMS`]. Over
//!   HTTP/2 an answer whole in hand (an error, a whole completion) no longer counts once it
//!   is made, since a client may hold back its window and never take it;
//! - `TCP_NODELAY` (each event goes out when it is written);
//! - a graceful end: once asked to stop, connections are still taken, but every new
//!   request is refused with a 503 (the gateway's `gate`) and its connection closed (an
//!   HTTP/2 one is sent GOAWAY at once); when no request is under way (nor one begun within
//!   the first-byte deadline), the listener and the idle connections are closed and this
//!   returns.
//!
//! A request's body has its own deadline, kept where it is read (`middleware::gate`); all
//! are the gateway's [`Deadlines`](crate::Deadlines).

mod bodies;
mod connection;
mod table;

use crate::Deadlines;
use axum::body::Body;
use bodies::{Answering, Received};
use hyper_util::rt::{TokioExecutor, TokioTimer};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};
use table::{Busy, Conn, Forget, Table};
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;

/// How many connections are served at once by default: as many as the files this process
/// may open allow, since each streamed answer holds two (its client's connection and one
/// to the upstream), less a reserve for the store, logs and MCP servers; at least 128 and
/// at most 65,536. `kite serve` raises its limit of open files to the system's first
/// ([`allow_all_files`]).
pub fn max_connections() -> usize {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit(2) on a struct of ours.
    let files = match unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } {
        0 => limit.rlim_cur,
        _ => 1024,
    };
    (files.saturating_sub(FILES_KEPT) / 2).clamp(128, 65_536) as usize
}

/// Raises this process's limit of open files to the most the system allows it (the hard
/// limit), as a server that holds thousands of connections needs; returns the limit.
pub fn allow_all_files() -> u64 {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit(2) and setrlimit(2) on structs of ours.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) != 0 {
            return 1024;
        }
        if limit.rlim_cur < limit.rlim_max {
            let raised = libc::rlimit {
                rlim_cur: limit.rlim_max,
                rlim_max: limit.rlim_max,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) == 0 {
                limit.rlim_cur = limit.rlim_max;
            }
        }
    }
    limit.rlim_cur
}

/// Files kept back from connections.
const FILES_KEPT: u64 = 256;

/// The most requests an HTTP/2 connection carries at once (its
/// `SETTINGS_MAX_CONCURRENT_STREAMS`); a client with more opens another connection.
pub const MAX_STREAMS: u32 = 256;
/// The largest request head an HTTP/2 client may send, decoded: 64 KiB, four times h2's
/// default, for the long headers some SDKs send, and at most 16 MiB for a connection's
/// 256 streams.
const MAX_HEAD: u32 = 64 * 1024;

/// How many connections from one address before one of that address's own is dropped for
/// each new one (when none of them may be, the new one is still taken, within the cap on
/// all connections).
pub const MAX_PER_ADDRESS: usize = 1024;
/// How often the accept loop, full, looks again for a connection to drop.
const LOOK_AGAIN_MS: u64 = 50;
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
    socket.listen(max_connections() as u32)
}

/// Serves `app` on `listener` within `deadlines` until `shutdown` resolves, then drains:
/// see the module doc.
pub(crate) async fn serve(
    listener: tokio::net::TcpListener,
    app: axum::Router,
    deadlines: Deadlines,
    connections: usize,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let table = Arc::new(Table::new());
    let open = Arc::new(tokio::sync::Semaphore::new(connections.max(1)));
    let tasks = tokio_util::task::TaskTracker::new();
    let draining = Arc::new(AtomicBool::new(false));
    let mut http = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
    http.http1()
        .timer(TokioTimer::new())
        .header_read_timeout(deadlines.headers);
    http.http2()
        .timer(TokioTimer::new())
        .max_concurrent_streams(MAX_STREAMS)
        .max_header_list_size(MAX_HEAD)
        // A peer gone silent under a stream is found out by its missing answers to pings.
        .keep_alive_interval(Duration::from_secs(30))
        .keep_alive_timeout(Duration::from_secs(20));
    // Each connection holds a file, and each request under way another.
    let files = connections.max(1).saturating_mul(2);
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
                http.http1().keep_alive(false);
                // HTTP/2 clients are told at once (GOAWAY) to take new requests elsewhere;
                // those under way finish.
                table.close_h2();
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
        // Room for it: past the address's cap, one of that address's connections goes
        // (when none can, the new one is still taken, within the cap on all connections).
        table.make_room(addr, false);
        let permit = match open.clone().try_acquire_owned() {
            Ok(p) => p,
            Err(_) => {
                // Full: one connection goes (`table.rs`), now or as soon as one may.
                let waited = loop {
                    table.make_room(addr, true);
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
        let (id, conn) = table.add(addr, std::os::fd::AsRawFd::as_raw_fd(&tcp));
        let socket = connection::Socket::new(tcp, conn.clone());
        let service = Counted {
            app: app.clone(),
            table: table.clone(),
            conn: conn.clone(),
            files,
        };
        let http = http.clone();
        let forget = Forget(table.clone(), id);
        let draining = draining.clone();
        tasks.spawn(async move {
            let _permit = permit;
            connection::serve(socket, conn, forget, http, service, deadlines, &draining).await;
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
/// until its answer's body is done; a request past what `files` allow is refused.
#[derive(Clone)]
struct Counted {
    app: axum::Router,
    table: Arc<Table>,
    conn: Arc<Conn>,
    files: usize,
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
        use http_body::Body as _;
        let mut request = request;
        if !self.table.room_for_a_request(self.files) {
            return Box::pin(std::future::ready(Ok(too_many(&request))));
        }
        let h2 = request.version() == hyper::Version::HTTP_2;
        if h2 {
            // HTTP/2 names the host in `:authority`, which stands for `Host` (RFC 9113,
            // 8.3.1): the gateway reads `Host` (the loopback check, the web chat's cookie)
            // as from an HTTP/1.1 client.
            let authority = request.uri().authority().map(|a| a.as_str().parse());
            if let Some(Ok(host)) = authority {
                request.headers_mut().insert(hyper::header::HOST, host);
            }
        }
        let busy = Busy::start(&self.table, &self.conn, !request.body().is_end_stream());
        let (table, conn) = (self.table.clone(), self.conn.clone());
        let request = request.map(|body| Body::new(Received::new(body, &conn)));
        let answer = self.app.clone().oneshot(request);
        Box::pin(async move {
            let response = answer.await.unwrap_or_else(|never| match never {});
            busy.answered();
            // An answer whole in hand holds nothing upstream: over HTTP/2, whose client may
            // hold back its window and never take it, it is not waited for.
            if h2 && response.body().size_hint().exact().is_some() {
                return Ok(response);
            }
            // The connection stays busy until the body is sent (or dropped); over HTTP/2,
            // whether the client takes its pieces is followed (`connection.rs` closes a
            // connection whose client takes none for too long).
            let waiting = h2.then(|| {
                let waiting = Arc::new(AtomicU64::new(table.now()));
                conn.follow(&waiting);
                waiting
            });
            Ok(response.map(|body| Body::new(Answering::new(body, busy, table, waiting))))
        })
    }
}

/// The answer to a request past what the files allow, in its API's shape.
fn too_many<B>(request: &hyper::Request<B>) -> axum::response::Response {
    use crate::errors::{Api, Kind, error};
    let mut refused = error(
        Api::of(request.uri().path(), request.headers()),
        axum::http::StatusCode::SERVICE_UNAVAILABLE,
        "This server is answering as many requests as it can hold; try again in a moment.",
        Kind::Unavailable,
    );
    refused.headers_mut().insert(
        axum::http::header::RETRY_AFTER,
        axum::http::HeaderValue::from_static("1"),
    );
    refused
}
