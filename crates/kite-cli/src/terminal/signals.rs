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

use std::sync::Mutex;

/// The claim held, if one is: its number, the signal it had, and where it is told.
struct Held {
    id: u64,
    signal: Option<Interrupt>,
    tell: tokio::sync::watch::Sender<bool>,
}

/// The claim held and the last claim's number, under one lock, so a signal is either given
/// to a live claim or ends kite, never lost in between.
static CLAIMS: Mutex<(u64, Option<Held>)> = Mutex::new((0, None));

fn claims() -> std::sync::MutexGuard<'static, (u64, Option<Held>)> {
    CLAIMS.lock().unwrap_or_else(|e| e.into_inner())
}

/// While held, the first Ctrl-C, SIGTERM or SIGHUP does not end kite at once: it cancels
/// what the holder does (a turn, which is then stored as far as it got), and the holder
/// learns of it through [`Claim::interrupted`] and [`Claim::finish`]. A second one while
/// the same claim is held, or any once it is finished, ends kite as usual.
pub(crate) struct Claim {
    id: u64,
    told: tokio::sync::watch::Receiver<bool>,
}

impl Claim {
    pub(crate) fn new() -> Self {
        let (tell, told) = tokio::sync::watch::channel(false);
        let mut claims = claims();
        claims.0 += 1;
        let id = claims.0;
        claims.1 = Some(Held {
            id,
            signal: None,
            tell,
        });
        Claim { id, told }
    }

    /// Resolves at the first signal since the claim was made, even one that came before
    /// this was first awaited.
    pub(crate) async fn interrupted(&self) {
        let mut told = self.told.clone();
        if told.wait_for(|t| *t).await.is_err() {
            // The claim is finished: nothing more comes.
            std::future::pending::<()>().await;
        }
    }

    /// Gives up the claim; the signal that interrupted the holder, if one did.
    pub(crate) fn finish(self) -> Option<Interrupt> {
        let mut claims = claims();
        match claims.1.take_if(|h| h.id == self.id) {
            Some(held) => held.signal,
            None => None,
        }
    }
}

impl Drop for Claim {
    fn drop(&mut self) {
        claims().1.take_if(|h| h.id == self.id);
    }
}

/// Whether the claim held has had its signal: for work that runs without awaiting (the
/// rendering of a long answer) to stop between pieces.
pub(crate) fn interrupt_pending() -> bool {
    claims().1.as_ref().is_some_and(|h| h.signal.is_some())
}

/// Gives `what` to the claim held, if one is held and has had none yet.
fn claim_interrupt(what: Interrupt) -> bool {
    if what == Interrupt::Quit {
        return false;
    }
    let mut claims = claims();
    match &mut claims.1 {
        Some(held) if held.signal.is_none() => {
            held.signal = Some(what);
            let _ = held.tell.send(true);
            true
        }
        _ => false,
    }
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
