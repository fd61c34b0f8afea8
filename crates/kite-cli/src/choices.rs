//! The command line's closed choices as clap values, so `--help` lists them and a wrong one
//! gets clap's own error. Each wraps kite's type and takes its names from it, so the lists
//! cannot drift apart.

use clap::ValueEnum;
use clap::builder::PossibleValue;
use kite::{OpenAiApi, Provider, TranscriptFormat};

/// A provider kite knows by name.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ProviderChoice(pub Provider);

const PROVIDERS: [ProviderChoice; Provider::ALL.len()] = {
    let mut out = [ProviderChoice(Provider::ALL[0]); Provider::ALL.len()];
    let mut i = 0;
    while i < out.len() {
        out[i] = ProviderChoice(Provider::ALL[i]);
        i += 1;
    }
    out
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

const APIS: [ApiChoice; OpenAiApi::ALL.len()] = {
    let mut out = [ApiChoice(OpenAiApi::ALL[0]); OpenAiApi::ALL.len()];
    let mut i = 0;
    while i < out.len() {
        out[i] = ApiChoice(OpenAiApi::ALL[i]);
        i += 1;
    }
    out
};

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

const FORMATS: [FormatChoice; TranscriptFormat::ALL.len()] = {
    let mut out = [FormatChoice(TranscriptFormat::ALL[0]); TranscriptFormat::ALL.len()];
    let mut i = 0;
    while i < out.len() {
        out[i] = FormatChoice(TranscriptFormat::ALL[i]);
        i += 1;
    }
    out
};

impl ValueEnum for FormatChoice {
    fn value_variants<'a>() -> &'a [Self] {
        &FORMATS
    }
    fn to_possible_value(&self) -> Option<PossibleValue> {
        Some(PossibleValue::new(self.0.as_str()))
    }
}
