//! Blocking reads (a terminal, a pipe) on threads of their own rather than the runtime's
//! blocking pool: kite's exit waits for that pool, and a read that never ends (the line
//! editor when SIGTERM comes) must not hold it up.

use kite::Error;

/// Runs `f` on a thread of its own; resolves with its result.
pub(crate) fn off_runtime<T: Send + 'static>(
    what: &'static str,
    f: impl FnOnce() -> T + Send + 'static,
) -> impl std::future::Future<Output = Result<T, Error>> + Unpin {
    let (tx, rx) = tokio::sync::oneshot::channel();
    let started = std::thread::Builder::new()
        .name(format!("kite-{what}"))
        .spawn(move || {
            let _ = tx.send(f());
        });
    let failed = started.err().map(|e| format!("cannot start {what}: {e}"));
    Box::pin(async move {
        match failed {
            Some(why) => Err(Error::Config(why)),
            None => rx
                .await
                .map_err(|_| Error::Config(format!("{what} stopped unexpectedly"))),
        }
    })
}
