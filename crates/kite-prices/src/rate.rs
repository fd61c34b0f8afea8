//! A price an operator sets for a model the table does not know (or prices otherwise):
//! dollars per million tokens in and out, with cache reads and writes at their own rates
//! where given, else as input.

use kite_core::Usage;
use serde::Deserialize;

/// Dollars per million tokens of one model.
#[derive(Clone, Copy, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, try_from = "RawRate")]
pub struct Rate {
    /// Input tokens (those read from or written to a cache, where no rate is given).
    pub input_per_mtok: f64,
    /// Output tokens, reasoning included.
    pub output_per_mtok: f64,
    /// Input tokens read from the provider's cache.
    pub cache_read_per_mtok: Option<f64>,
    /// Input tokens written to the provider's cache.
    pub cache_write_per_mtok: Option<f64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRate {
    input_per_mtok: f64,
    output_per_mtok: f64,
    cache_read_per_mtok: Option<f64>,
    cache_write_per_mtok: Option<f64>,
}

impl TryFrom<RawRate> for Rate {
    type Error = String;

    fn try_from(raw: RawRate) -> Result<Self, String> {
        let rates = [
            Some(raw.input_per_mtok),
            Some(raw.output_per_mtok),
            raw.cache_read_per_mtok,
            raw.cache_write_per_mtok,
        ];
        if rates
            .into_iter()
            .flatten()
            .any(|r| !r.is_finite() || !(0.0..=1_000_000.0).contains(&r))
        {
            return Err("a price per million tokens is a number from 0 to 1000000".into());
        }
        Ok(Self {
            input_per_mtok: raw.input_per_mtok,
            output_per_mtok: raw.output_per_mtok,
            cache_read_per_mtok: raw.cache_read_per_mtok,
            cache_write_per_mtok: raw.cache_write_per_mtok,
        })
    }
}

impl Rate {
    /// What `usage` costs at this rate, in dollars.
    pub fn cost(&self, usage: &Usage) -> f64 {
        let read = usage.cached_input_tokens.min(usage.input_tokens);
        let written = usage.cache_write_tokens.min(usage.input_tokens - read);
        let plain = usage.input_tokens - read - written;
        let per = |tokens: u64, rate: f64| tokens as f64 * rate / 1e6;
        per(plain, self.input_per_mtok)
            + per(
                read,
                self.cache_read_per_mtok.unwrap_or(self.input_per_mtok),
            )
            + per(
                written,
                self.cache_write_per_mtok.unwrap_or(self.input_per_mtok),
            )
            + per(usage.output_tokens, self.output_per_mtok)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rate_prices_each_kind_of_token() {
        let rate = Rate {
            input_per_mtok: 2.0,
            output_per_mtok: 8.0,
            cache_read_per_mtok: Some(0.5),
            cache_write_per_mtok: None,
        };
        let usage = Usage {
            input_tokens: 1_000_000,
            cached_input_tokens: 400_000,
            cache_write_tokens: 100_000,
            output_tokens: 500_000,
            ..Usage::default()
        };
        // 500k plain at 2, 400k read at 0.5, 100k written at 2 (as input), 500k out at 8.
        assert!((rate.cost(&usage) - (1.0 + 0.2 + 0.2 + 4.0)).abs() < 1e-9);
    }

    #[test]
    fn a_price_past_reason_is_refused() {
        for bad in [-1.0, f64::NAN, f64::INFINITY, 2e6] {
            let raw = RawRate {
                input_per_mtok: bad,
                output_per_mtok: 1.0,
                cache_read_per_mtok: None,
                cache_write_per_mtok: None,
            };
            assert!(Rate::try_from(raw).is_err(), "{bad}");
        }
    }
}
