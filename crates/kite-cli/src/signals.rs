//! The signals that end kite: Ctrl-C (SIGINT), SIGTERM, SIGHUP (the terminal closed) and
//! SIGQUIT, each with the exit status a shell expects (128 plus the signal's number), after
//! the same clean-up as any other way out.

/// A signal that asks kite to stop.
#[derive(Clone, Copy, Debug)]
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

/// Whether a chat turn has claimed Ctrl-C (see [`Claim`]).
static CLAIMED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Where a claimed Ctrl-C is told.
fn claimed_notice() -> &'static tokio::sync::Notify {
    static NOTICE: std::sync::OnceLock<tokio::sync::Notify> = std::sync::OnceLock::new();
    NOTICE.get_or_init(tokio::sync::Notify::new)
}

/// While held, Ctrl-C (SIGINT) does not end kite: it cancels what the holder does (a chat's
/// turn), which learns of it through [`Claim::interrupted`].
pub(crate) struct Claim(());

impl Claim {
    pub(crate) fn new() -> Self {
        CLAIMED.store(true, std::sync::atomic::Ordering::SeqCst);
        Claim(())
    }

    /// Resolves at the next Ctrl-C.
    pub(crate) async fn interrupted(&self) {
        claimed_notice().notified().await
    }
}

impl Drop for Claim {
    fn drop(&mut self) {
        CLAIMED.store(false, std::sync::atomic::Ordering::SeqCst);
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
                    let claimed = CLAIMED.load(std::sync::atomic::Ordering::SeqCst);
                    if matches!(what, Interrupt::Int) && claimed {
                        claimed_notice().notify_waiters();
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
