//! The signals that end kite: Ctrl-C (SIGINT), SIGTERM, SIGHUP (the terminal closed) and
//! SIGQUIT, each with the exit status a shell expects (128 plus the signal's number), after
//! the same clean-up as any other way out.

/// A signal that asks kite to stop.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Interrupt {
    Int,
    Term,
    Hup,
    Quit,
}

impl Interrupt {
    /// The exit status: 130 for Ctrl-C, 143 for SIGTERM, 129 for SIGHUP, 131 for SIGQUIT.
    pub(crate) fn status(self) -> u8 {
        match self {
            Interrupt::Int => 130,
            Interrupt::Term => 143,
            Interrupt::Hup => 129,
            Interrupt::Quit => 131,
        }
    }

    pub(crate) fn what(self) -> &'static str {
        match self {
            Interrupt::Int => "interrupted",
            Interrupt::Term => "terminated",
            Interrupt::Hup => "hung up",
            Interrupt::Quit => "quit",
        }
    }
}

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// Whether a turn has claimed Ctrl-C (see [`Claim`]).
static CLAIMED: AtomicBool = AtomicBool::new(false);
/// The number of the latest claim, and of the latest claim that had its Ctrl-C.
static CLAIM: AtomicU64 = AtomicU64::new(0);
static CLAIM_INTERRUPTED: AtomicU64 = AtomicU64::new(0);
/// The signal the latest claim had (0 for none, else `Interrupt as u8 + 1`).
static CLAIM_SIGNAL: std::sync::atomic::AtomicU8 = std::sync::atomic::AtomicU8::new(0);

/// Counts the Ctrl-Cs that claims took; a claim waits for it to move past what it saw.
fn claimed_count() -> &'static tokio::sync::watch::Sender<u64> {
    static COUNT: std::sync::OnceLock<tokio::sync::watch::Sender<u64>> = std::sync::OnceLock::new();
    COUNT.get_or_init(|| tokio::sync::watch::Sender::new(0))
}

/// While held, the first Ctrl-C, SIGTERM or SIGHUP does not end kite at once: it cancels
/// what the holder does (a turn, which is then stored as far as it got), and the holder
/// learns of it through [`Claim::interrupted`] and [`Claim::signal`]. A second one while
/// the same claim is held ends kite as usual.
pub(crate) struct Claim {
    seen: tokio::sync::watch::Receiver<u64>,
}

impl Claim {
    pub(crate) fn new() -> Self {
        let seen = claimed_count().subscribe();
        CLAIM_SIGNAL.store(0, Ordering::SeqCst);
        CLAIM.fetch_add(1, Ordering::SeqCst);
        CLAIMED.store(true, Ordering::SeqCst);
        Claim { seen }
    }

    /// Resolves at the first Ctrl-C since the claim was made, even one that came before
    /// this was first awaited.
    pub(crate) async fn interrupted(&self) {
        let mut seen = self.seen.clone();
        // The sender lives as long as the process, so this only returns on a change.
        let _ = seen.changed().await;
    }

    /// The signal that interrupted the holder, if one did.
    pub(crate) fn signal(&self) -> Option<Interrupt> {
        match CLAIM_SIGNAL.load(Ordering::SeqCst) {
            1 => Some(Interrupt::Int),
            2 => Some(Interrupt::Term),
            3 => Some(Interrupt::Hup),
            _ => None,
        }
    }
}

impl Drop for Claim {
    fn drop(&mut self) {
        CLAIMED.store(false, Ordering::SeqCst);
    }
}

/// Gives `what` to the claim held, if one is held and has had none yet.
fn claim_interrupt(what: Interrupt) -> bool {
    let code = match what {
        Interrupt::Int => 1,
        Interrupt::Term => 2,
        Interrupt::Hup => 3,
        Interrupt::Quit => return false,
    };
    if !CLAIMED.load(Ordering::SeqCst) {
        return false;
    }
    let claim = CLAIM.load(Ordering::SeqCst);
    if CLAIM_INTERRUPTED.swap(claim, Ordering::SeqCst) == claim {
        return false;
    }
    CLAIM_SIGNAL.store(code, Ordering::SeqCst);
    claimed_count().send_modify(|n| *n += 1);
    true
}

/// A write past the file size limit (`ulimit -f`) fails with an error kite reports, rather
/// than raising SIGXFSZ, which would kill kite halfway through storing a turn. A handler
/// that does nothing (unlike ignoring the signal) is not passed on to child processes.
pub(crate) fn survive_file_size_limit() {
    #[cfg(unix)]
    {
        extern "C" fn nothing(_: libc::c_int) {}
        // SAFETY: the handler does nothing, which is async-signal-safe.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = nothing as extern "C" fn(libc::c_int) as usize;
            libc::sigemptyset(&mut action.sa_mask);
            libc::sigaction(libc::SIGXFSZ, &action, std::ptr::null_mut());
        }
    }
}

/// Resolves when the first of these signals arrives. A signal that cannot be watched is
/// left to its default.
pub(crate) async fn interrupted() -> Interrupt {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let watch = |kind: SignalKind, what: Interrupt| async move {
            match signal(kind) {
                Ok(mut s) => loop {
                    s.recv().await;
                    if claim_interrupt(what) {
                        continue;
                    }
                    break what;
                },
                Err(_) => std::future::pending().await,
            }
        };
        tokio::select! {
            i = watch(SignalKind::interrupt(), Interrupt::Int) => i,
            i = watch(SignalKind::terminate(), Interrupt::Term) => i,
            i = watch(SignalKind::hangup(), Interrupt::Hup) => i,
            i = watch(SignalKind::quit(), Interrupt::Quit) => i,
        }
    }
    #[cfg(not(unix))]
    {
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
        Interrupt::Int
    }
}

/// Gives the signals [`interrupted`] watches back their default action (ending kite).
pub(crate) fn restore_defaults() {
    #[cfg(unix)]
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT] {
        // SAFETY: resetting a signal's disposition to its default is always sound.
        unsafe {
            libc::signal(sig, libc::SIG_DFL);
        }
    }
}
