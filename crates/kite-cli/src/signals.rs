//! The signals that end kite: Ctrl-C (SIGINT) and SIGTERM, each with the exit status a
//! shell expects (128 plus the signal's number).

/// A signal that asks kite to stop.
#[derive(Clone, Copy, Debug)]
pub enum Interrupt {
    Int,
    Term,
}

impl Interrupt {
    /// The exit status: 130 for Ctrl-C, 143 for SIGTERM.
    pub fn status(self) -> u8 {
        match self {
            Interrupt::Int => 130,
            Interrupt::Term => 143,
        }
    }

    pub fn what(self) -> &'static str {
        match self {
            Interrupt::Int => "interrupted",
            Interrupt::Term => "terminated",
        }
    }
}

/// Resolves when the first of Ctrl-C or SIGTERM arrives. A signal that cannot be watched
/// is left to its default.
pub async fn interrupted() -> Interrupt {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let mut term = signal(SignalKind::terminate()).ok();
        let term = async {
            match term.as_mut() {
                Some(t) => {
                    t.recv().await;
                }
                None => std::future::pending().await,
            }
        };
        let int = async {
            if tokio::signal::ctrl_c().await.is_err() {
                std::future::pending::<()>().await;
            }
        };
        tokio::select! {
            _ = int => Interrupt::Int,
            _ = term => Interrupt::Term,
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
