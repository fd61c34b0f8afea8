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

/// What `--provider` names for a conversation: a provider, `local`, the embedded model
/// (as `--local` and `[defaults] provider = "local"` do), or a provider of the user's own
/// (`[providers.NAME]` with a `base_url`, `config/own.rs`), which kite.toml must hold.
#[derive(Clone, Debug)]
pub(crate) enum SessionProvider {
    /// A provider kite knows by name.
    Named(Provider),
    /// The embedded local model.
    Local,
    /// A provider of the user's own, by its name in kite.toml (lowercase).
    Own(String),
}

impl SessionProvider {
    /// `--provider`'s value, in any case: a name kite knows, `local`, or else one of the
    /// user's own, checked against kite.toml once it is read.
    pub(crate) fn parse(given: &str) -> Result<Self, String> {
        let name = given.trim().to_ascii_lowercase();
        if name == "local" {
            return Ok(Self::Local);
        }
        if let Ok(p) = Provider::parse(&name) {
            return Ok(Self::Named(p));
        }
        crate::config::own::check_name(&name)?;
        Ok(Self::Own(name))
    }
}
