//! Counting tokens for the token policy where the provider reported none: a tokenizer
//! behind [`TokenCounter`] (OpenAI's with the `tiktoken` feature; a local model brings its
//! own), or an estimate.

/// Counts the tokens a text takes in some model's tokenizer.
pub trait TokenCounter: Send + Sync {
    /// The tokens `text` takes.
    fn count(&self, text: &str) -> u64;
}

/// An estimate with no tokenizer: a token per 4 bytes, about right for English prose and
/// code in the common tokenizers.
#[derive(Clone, Copy, Debug, Default)]
pub struct Estimate;

impl TokenCounter for Estimate {
    fn count(&self, text: &str) -> u64 {
        text.len().div_ceil(4) as u64
    }
}

impl<F: Fn(&str) -> u64 + Send + Sync> TokenCounter for F {
    fn count(&self, text: &str) -> u64 {
        self(text)
    }
}

/// OpenAI's tokenizer for a model (`o200k_base` for the GPT-4o, 4.1, 5 and o-series
/// families, `cl100k_base` for GPT-4 and 3.5), and `o200k_base` as the nearest count for
/// models whose tokenizer is not public. It is loaded on the first count, not before.
#[cfg(feature = "tiktoken")]
pub struct Tiktoken {
    model: String,
    bpe: std::sync::OnceLock<&'static tiktoken_rs::CoreBPE>,
}

#[cfg(feature = "tiktoken")]
impl Tiktoken {
    /// The tokenizer of `model`, or `o200k_base` for a model tiktoken does not know.
    pub fn for_model(model: &str) -> Self {
        Self {
            model: model.to_owned(),
            bpe: std::sync::OnceLock::new(),
        }
    }
}

#[cfg(feature = "tiktoken")]
impl std::fmt::Debug for Tiktoken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tiktoken")
            .field("model", &self.model)
            .finish()
    }
}

#[cfg(feature = "tiktoken")]
impl TokenCounter for Tiktoken {
    fn count(&self, text: &str) -> u64 {
        let bpe = self.bpe.get_or_init(|| {
            tiktoken_rs::bpe_for_model(&self.model)
                .unwrap_or_else(|_| tiktoken_rs::o200k_base_singleton())
        });
        bpe.encode_with_special_tokens(text).len() as u64
    }
}
