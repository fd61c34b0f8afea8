//! The command line's closed choices as clap values, so `--help` lists them and a wrong one
//! gets clap's own error. Each wraps kite's type and takes its values and names from it, so
//! the lists cannot drift apart.

use clap::ValueEnum;
use clap::builder::PossibleValue;
use kite::{OpenAiApi, Provider, TranscriptFormat};

/// A clap value wrapping kite's `$kite`, whose every value is in `$all` and named by `$name`.
macro_rules! choice {
    ($(#[$doc:meta])* $choice:ident($kite:ty), $all:expr, $name:ident) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug)]
        pub(crate) struct $choice(pub(crate) $kite);

        impl ValueEnum for $choice {
            fn value_variants<'a>() -> &'a [Self] {
                const ALL: [$choice; $all.len()] = {
                    let mut out = [$choice($all[0]); $all.len()];
                    let mut i = 0;
                    while i < out.len() {
                        out[i] = $choice($all[i]);
                        i += 1;
                    }
                    out
                };
                &ALL
            }
            fn to_possible_value(&self) -> Option<PossibleValue> {
                Some(PossibleValue::new(self.0.$name()))
            }
        }
    };
}

choice!(
    /// A provider kite knows by name.
    ProviderChoice(Provider),
    Provider::ALL,
    name
);
choice!(
    /// Which of OpenAI's APIs to speak.
    ApiChoice(OpenAiApi),
    OpenAiApi::ALL,
    name
);
choice!(
    /// A transcript format.
    FormatChoice(TranscriptFormat),
    TranscriptFormat::ALL,
    as_str
);

/// What `--provider` names for a conversation: a provider, or `local`, the embedded model
/// (as `--local` and `[defaults] provider = "local"` do).
#[derive(Clone, Copy, Debug)]
pub(crate) enum SessionProvider {
    /// A provider kite knows by name.
    Named(Provider),
    /// The embedded local model.
    Local,
}

impl ValueEnum for SessionProvider {
    fn value_variants<'a>() -> &'a [Self] {
        const ALL: [SessionProvider; Provider::ALL.len() + 1] = {
            let mut out = [SessionProvider::Local; Provider::ALL.len() + 1];
            let mut i = 0;
            while i < Provider::ALL.len() {
                out[i] = SessionProvider::Named(Provider::ALL[i]);
                i += 1;
            }
            out
        };
        &ALL
    }
    fn to_possible_value(&self) -> Option<PossibleValue> {
        Some(PossibleValue::new(match self {
            SessionProvider::Named(p) => p.name(),
            SessionProvider::Local => "local",
        }))
    }
}
