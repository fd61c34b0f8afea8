//! What model calls cost, in US dollars, from pydantic's `genai-prices` data.
//!
//! The table is not typed by hand: `data/prices.json` is the price data of a release of the
//! `genai-prices` package (PyPI), turned into JSON by `src/to_json.py`, which reads the
//! package's generated `data.py` without running it (`scripts/prices-snapshot.sh VERSION`
//! regenerates it; the tests compare with that release's calculator). The binary carries
//! that snapshot; [`update`] fetches a newer one and [`load`] prefers it.
//!
//! Prices follow the package's calculator: input tokens include cached ones and cache
//! writes, which are priced at the cache rates where the model has them; output tokens include reasoning ones,
//! priced as output unless the model prices reasoning apart; a tiered price applies whole
//! once the request's input passes the tier's start; dated prices apply from their date,
//! and daily off-peak prices in their hours (UTC). A model the table does not know has no
//! price, never a guessed one.
//!
//! ```
//! use kite_core::Usage;
//! let usage = Usage { input_tokens: 1000, cached_input_tokens: 200, output_tokens: 100, ..Usage::default() };
//! let cost = kite_prices::PriceTable::snapshot()
//!     .cost("openai", "gpt-4o", &usage, std::time::SystemTime::now())
//!     .expect("gpt-4o has a price");
//! assert!((cost.total - 0.00325).abs() < 1e-12);
//! ```

mod rate;
mod table;
mod update;

pub use rate::Rate;
pub use table::{Cost, Error, Listed, PriceTable};
pub use update::{load, update};

use kite_core::Usage;

/// The `genai-prices` provider id for a provider as kite names it (the OpenTelemetry
/// convention's `gen_ai.provider.name`).
pub fn provider_id(provider: &str) -> &str {
    match provider {
        "mistral_ai" => "mistral",
        "x_ai" => "x-ai",
        other => other,
    }
}

/// What a call cost: what the provider reported (OpenRouter does), else the table's price
/// for `provider`'s `model` (`None` when the table does not know it); nothing for a model
/// in this process.
pub fn call_cost(table: &PriceTable, provider: &str, model: &str, usage: &Usage) -> Option<f64> {
    if let Some(reported) = usage.cost {
        return Some(reported);
    }
    match provider {
        kite_core::trace::LOCAL_PROVIDER => return Some(0.0),
        // Any server speaking an OpenAI API: its prices are its own, not OpenAI's.
        "openai_compatible" => return None,
        _ => {}
    }
    table
        .cost(
            provider_id(provider),
            model,
            usage,
            std::time::SystemTime::now(),
        )
        .map(|c| c.total)
}
