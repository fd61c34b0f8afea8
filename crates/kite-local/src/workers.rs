//! The models' worker threads, kept so that a process can wait for them before it exits.

use std::sync::Mutex;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Every model's worker thread.
static WORKERS: Mutex<Vec<JoinHandle<()>>> = Mutex::new(Vec::new());

/// Waits up to `timeout` for every local model's worker thread to end, and says whether
/// they all did.
///
/// A worker stops generating at the next token once its caller drops the answer's stream,
/// and ends, dropping its llama.cpp context and then the model, once every handle to the
/// model is gone. A program that exits while a worker is inside llama.cpp races the
/// library's own teardown and can crash, so call this after dropping the models and before
/// exiting (the `kite` command does, on Ctrl-C too).
pub fn wait_for_workers(timeout: Duration) -> bool {
    let deadline = Instant::now() + timeout;
    let mut workers = WORKERS.lock().unwrap_or_else(|e| e.into_inner());
    while workers.iter().any(|w| !w.is_finished()) {
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    for w in workers.drain(..) {
        let _ = w.join();
    }
    true
}

/// Keeps a new worker's handle (and forgets those that have ended).
pub(crate) fn register(handle: JoinHandle<()>) {
    let mut workers = WORKERS.lock().unwrap_or_else(|e| e.into_inner());
    workers.retain(|w| !w.is_finished());
    workers.push(handle);
}
