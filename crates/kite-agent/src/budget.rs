//! What a run may spend, and what its calls cost.
//!
//! A [`Budget`] is checked before each model call after the first: the call is expected to
//! use about what the last one did (its input is at least as long), and when that would
//! take the run past a limit, the run stops with [`StopReason::BudgetExceeded`] and its
//! history as it is. A [`Pricer`] puts a price on each call that the provider did not
//! price itself; an unknown price counts as nothing, so pair a cost limit with a token
//! limit where prices may be missing.

use crate::steps::StopReason;
use kite_core::Usage;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// Prices a model call: `(provider, model, usage)` to US dollars, `None` when unknown.
pub type Pricer = Arc<dyn Fn(&str, &str, &Usage) -> Option<f64> + Send + Sync>;

/// Limits on what one run may spend.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Budget {
    /// Input and output tokens over all the run's model calls.
    pub max_tokens: Option<u64>,
    /// US dollars over all the run's model calls (priced by the provider or a [`Pricer`]).
    pub max_cost: Option<f64>,
}

impl Budget {
    /// The reason to stop before the next call, when one more call like the `last` would
    /// take `spent` past a limit.
    pub(crate) fn check(&self, spent: &Usage, last: &Usage) -> Option<StopReason> {
        let tokens = |u: &Usage| u.input_tokens + u.output_tokens;
        let over_tokens = self
            .max_tokens
            .is_some_and(|max| tokens(spent) + tokens(last) > max);
        let cost = |u: &Usage| u.cost.unwrap_or(0.0);
        let over_cost = self
            .max_cost
            .is_some_and(|max| cost(spent) + cost(last) > max);
        (over_tokens || over_cost).then(|| StopReason::BudgetExceeded {
            tokens: tokens(spent),
            cost: spent.cost,
        })
    }
}
