//! The command line's closed choices as clap values, so `--help` lists them and a wrong one
//! gets clap's own error. Each wraps kite's type and takes its names from it, so the lists
//! cannot drift apart.

use clap::ValueEnum;
use clap::builder::PossibleValue;
use kite::{OpenAiApi, Provider, TranscriptFormat};

/// A provider kite knows by name.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ProviderChoice(pub Provider);

const PROVIDERS: [ProviderChoice; 6] = {
    let p = Provider::ALL;
    [
        ProviderChoice(p[0]),
        ProviderChoice(p[1]),
        ProviderChoice(p[2]),
        ProviderChoice(p[3]),
        ProviderChoice(p[4]),
        ProviderChoice(p[5]),
    ]
};

impl ValueEnum for ProviderChoice {
    fn value_variants<'a>() -> &'a [Self] {
        &PROVIDERS
    }
    fn to_possible_value(&self) -> Option<PossibleValue> {
        Some(PossibleValue::new(self.0.name()))
    }
}

/// Which of OpenAI's APIs to speak.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ApiChoice(pub OpenAiApi);

const APIS: [ApiChoice; 2] = [ApiChoice(OpenAiApi::ALL[0]), ApiChoice(OpenAiApi::ALL[1])];

impl ValueEnum for ApiChoice {
    fn value_variants<'a>() -> &'a [Self] {
        &APIS
    }
    fn to_possible_value(&self) -> Option<PossibleValue> {
        Some(PossibleValue::new(self.0.name()))
    }
}

/// A transcript format.
#[derive(Clone, Copy, Debug)]
pub(crate) struct FormatChoice(pub TranscriptFormat);

const FORMATS: [FormatChoice; 6] = {
    let f = TranscriptFormat::ALL;
    [
        FormatChoice(f[0]),
        FormatChoice(f[1]),
        FormatChoice(f[2]),
        FormatChoice(f[3]),
        FormatChoice(f[4]),
        FormatChoice(f[5]),
    ]
};

impl ValueEnum for FormatChoice {
    fn value_variants<'a>() -> &'a [Self] {
        &FORMATS
    }
    fn to_possible_value(&self) -> Option<PossibleValue> {
        Some(PossibleValue::new(self.0.as_str()))
    }
}
