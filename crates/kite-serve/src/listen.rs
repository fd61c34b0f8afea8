//! Taking connections: HTTP/1.1 through hyper, with what `axum::serve` leaves out and a
//! gateway open to many clients needs: a deadline for a request's headers (a client that
//! sends them a byte at a time holds nothing for long), a cap on open connections (past
//! it, new ones wait in the kernel's queue instead of taking memory), `TCP_NODELAY` (each
//! event goes out when it is written), and a graceful end: on shutdown no connection is
//! taken and those open finish the requests under way.
//!
//! A request's body has its own deadline, kept where it is read (`middleware::gate`); both
//! are the gateway's [`Deadlines`](crate::Deadlines).

use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use std::sync::Arc;
use std::time::Duration;

/// How many connections are served at once; more wait to be taken.
pub const MAX_CONNECTIONS: usize = 4096;

/// Serves `app` on `listener`, giving clients `headers` to send a request's headers, until
/// `shutdown` resolves, then lets the requests under way finish.
pub(crate) async fn serve(
    listener: tokio::net::TcpListener,
    app: axum::Router,
    headers: Duration,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let graceful = GracefulShutdown::new();
    let open = Arc::new(tokio::sync::Semaphore::new(MAX_CONNECTIONS));
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new()).header_read_timeout(headers);
    tokio::pin!(shutdown);
    loop {
        let permit = tokio::select! {
            permit = open.clone().acquire_owned() => match permit {
                Ok(p) => p,
                Err(_) => break,
            },
            () = &mut shutdown => break,
        };
        let (tcp, _) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(c) => c,
                Err(e) => {
                    // Out of file descriptors and the like: wait, then take connections again.
                    tracing::warn!(target: "kite::serve", error = %e, "cannot take a connection");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let _ = tcp.set_nodelay(true);
        let service = TowerToHyperService::new(app.clone());
        let conn = graceful.watch(http.serve_connection(TokioIo::new(tcp), service));
        tokio::spawn(async move {
            let _ = conn.await;
            drop(permit);
        });
    }
    // No more connections; those open end once their requests are answered.
    drop(listener);
    graceful.shutdown().await;
    Ok(())
}
