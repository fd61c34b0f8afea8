//! Token usage reported by a provider, summable across calls.

use serde::{Deserialize, Serialize};
use std::ops::{Add, AddAssign};

/// Tokens (and, where the provider reports it, cost) spent by one or more model calls.
///
/// `cached_input_tokens` and `cache_write_tokens` are part of `input_tokens`;
/// `reasoning_tokens` is part of `output_tokens`, as the providers report them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Usage {
    /// Tokens of the prompt, cached ones included.
    pub input_tokens: u64,
    /// Tokens the model generated, reasoning included.
    pub output_tokens: u64,
    /// Input and output tokens together.
    pub total_tokens: u64,
    /// Input tokens read from the provider's prompt cache.
    #[serde(default)]
    pub cached_input_tokens: u64,
    /// Input tokens written to the provider's prompt cache (Anthropic's cache creation),
    /// which cost more than other input.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cache_write_tokens: u64,
    /// Output tokens spent on reasoning.
    #[serde(default)]
    pub reasoning_tokens: u64,
    /// Cost in the provider's billing unit (US dollars or credits), when it reports one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<f64>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl Usage {
    /// The counts of `self` beyond `earlier`'s, each at least zero, and no cost: what a
    /// report of an answer's usage adds to an earlier report of it (providers report what
    /// is used so far), so that `earlier + self.beyond(&earlier)` holds the most of each.
    pub fn beyond(&self, earlier: &Usage) -> Usage {
        Usage {
            input_tokens: self.input_tokens.saturating_sub(earlier.input_tokens),
            output_tokens: self.output_tokens.saturating_sub(earlier.output_tokens),
            total_tokens: self.total_tokens.saturating_sub(earlier.total_tokens),
            cached_input_tokens: self
                .cached_input_tokens
                .saturating_sub(earlier.cached_input_tokens),
            cache_write_tokens: self
                .cache_write_tokens
                .saturating_sub(earlier.cache_write_tokens),
            reasoning_tokens: self
                .reasoning_tokens
                .saturating_sub(earlier.reasoning_tokens),
            cost: None,
        }
    }
}

impl AddAssign for Usage {
    fn add_assign(&mut self, rhs: Usage) {
        self.input_tokens += rhs.input_tokens;
        self.output_tokens += rhs.output_tokens;
        self.total_tokens += rhs.total_tokens;
        self.cached_input_tokens += rhs.cached_input_tokens;
        self.cache_write_tokens += rhs.cache_write_tokens;
        self.reasoning_tokens += rhs.reasoning_tokens;
        self.cost = match (self.cost, rhs.cost) {
            (None, None) => None,
            (a, b) => Some(a.unwrap_or(0.0) + b.unwrap_or(0.0)),
        };
    }
}

impl Add for Usage {
    type Output = Usage;
    fn add(mut self, rhs: Usage) -> Usage {
        self += rhs;
        self
    }
}
