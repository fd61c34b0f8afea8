//! The price table: providers, how a model's name is matched, and the prices that apply at
//! a time, as the `genai-prices` package defines them.

use chrono::{DateTime, NaiveDate, NaiveTime, Utc};
use fancy_regex::Regex;
use kite_core::Usage;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::sync::OnceLock;
use std::time::SystemTime;

/// A price table that could not be read.
#[derive(Debug, thiserror::Error)]
#[error("the price table is not valid: {0}")]
pub struct Error(String);

/// The prices of every provider's models.
#[derive(Debug, Deserialize)]
pub struct PriceTable {
    /// Where the data came from (`genai-prices 0.2.3`).
    pub source: String,
    providers: Vec<Provider>,
}

#[derive(Debug, Deserialize)]
struct Provider {
    id: String,
    api_pattern: String,
    model_match: Option<Clause>,
    #[serde(default)]
    fallback_model_providers: Vec<String>,
    models: Vec<Model>,
}

#[derive(Debug, Deserialize)]
struct Model {
    #[allow(dead_code)]
    id: String,
    #[serde(rename = "match")]
    matches: Clause,
    prices: Prices,
}

/// How a model's (or provider's) name is recognised.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Clause {
    Equals(String),
    StartsWith(String),
    EndsWith(String),
    Contains(String),
    #[serde(deserialize_with = "regex")]
    Regex(Regex),
    #[serde(rename = "or_", alias = "or")]
    Or(Vec<Clause>),
    #[serde(rename = "and_", alias = "and")]
    And(Vec<Clause>),
}

fn regex<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Regex, D::Error> {
    let text = String::deserialize(d)?;
    Regex::new(&text).map_err(serde::de::Error::custom)
}

impl Clause {
    /// Lowercases the texts it compares, once, when the table is read.
    fn lowercase(&mut self) {
        match self {
            Clause::Equals(s)
            | Clause::StartsWith(s)
            | Clause::EndsWith(s)
            | Clause::Contains(s) => {
                *s = s.to_lowercase();
            }
            Clause::Regex(_) => {}
            Clause::Or(all) | Clause::And(all) => all.iter_mut().for_each(Clause::lowercase),
        }
    }

    /// Whether `name` (already lowercase) matches.
    fn is_match(&self, name: &str) -> bool {
        match self {
            Clause::Equals(s) => name == s,
            Clause::StartsWith(s) => name.starts_with(s.as_str()),
            Clause::EndsWith(s) => name.ends_with(s.as_str()),
            Clause::Contains(s) => name.contains(s.as_str()),
            // A pattern that runs out of its backtracking budget matches nothing.
            Clause::Regex(r) => r.is_match(name).unwrap_or(false),
            Clause::Or(all) => all.iter().any(|c| c.is_match(name)),
            Clause::And(all) => all.iter().all(|c| c.is_match(name)),
        }
    }
}

/// One set of prices, or prices that apply from a date or in daily hours (the last that
/// applies wins; the first is the fallback).
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum Prices {
    One(PriceSet),
    Conditional(Vec<Conditional>),
}

#[derive(Debug, Deserialize)]
struct Conditional {
    constraint: Option<Constraint>,
    prices: PriceSet,
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum Constraint {
    From {
        start_date: NaiveDate,
    },
    Hours {
        start_time: NaiveTime,
        end_time: NaiveTime,
    },
}

impl Constraint {
    fn active(&self, at: DateTime<Utc>) -> bool {
        match self {
            Constraint::From { start_date } => at.date_naive() >= *start_date,
            Constraint::Hours {
                start_time,
                end_time,
            } => {
                let t = at.time();
                match end_time < start_time {
                    true => t >= *start_time || t < *end_time,
                    false => *start_time <= t && t < *end_time,
                }
            }
        }
    }
}

/// A model's prices by unit (`input_mtok`, `cache_read_mtok`, ...), in dollars.
#[derive(Debug, Deserialize)]
struct PriceSet(BTreeMap<String, Price>);

/// A price, or a base price with tiers by the request's input tokens.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum Price {
    Flat(f64),
    Tiered { base: f64, tiers: Vec<Tier> },
}

#[derive(Debug, Deserialize)]
struct Tier {
    start: u64,
    price: f64,
}

impl Price {
    /// The price per unit for a request of `input` tokens: a tier applies once `input`
    /// passes its start.
    fn at(&self, input: u64) -> f64 {
        match self {
            Price::Flat(p) => *p,
            Price::Tiered { base, tiers } => tiers
                .iter()
                .rev()
                .find(|t| input > t.start)
                .map_or(*base, |t| t.price),
        }
    }
}

/// One model of a [`PriceTable`], as [`PriceTable::list`] gives it.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Listed {
    /// The provider's `genai-prices` id.
    pub provider: String,
    /// The model's id.
    pub model: String,
    /// Dollars per million tokens in and out, when a price holds now.
    pub per_million: Option<(f64, f64)>,
}

/// What a call cost, in US dollars.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Cost {
    /// Input tokens, cached ones included.
    pub input: f64,
    /// Output tokens, reasoning included.
    pub output: f64,
    /// Everything, per-request fees included.
    pub total: f64,
}

impl PriceSet {
    fn get(&self, key: &str) -> Option<&Price> {
        self.0.get(key)
    }

    fn cost(&self, usage: &Usage) -> Cost {
        let input = usage.input_tokens;
        let per_million = |key: &str, count: u64| {
            self.get(key)
                .map_or(0.0, |p| p.at(input) * count as f64 / 1_000_000.0)
        };
        // Counts priced apart are taken out of the totals they belong to.
        let cached = match self.get("cache_read_mtok") {
            Some(_) => usage.cached_input_tokens.min(input),
            None => 0,
        };
        let written = match self.get("cache_write_mtok") {
            Some(_) => usage.cache_write_tokens.min(input - cached),
            None => 0,
        };
        let reasoning = match self.get("output_reasoning_mtok") {
            Some(_) => usage.reasoning_tokens.min(usage.output_tokens),
            None => 0,
        };
        let input_cost = per_million("input_mtok", input - cached - written)
            + per_million("cache_read_mtok", cached)
            + per_million("cache_write_mtok", written);
        let output_cost = per_million("output_mtok", usage.output_tokens - reasoning)
            + per_million("output_reasoning_mtok", reasoning);
        let requests = self
            .get("requests_kcount")
            .map_or(0.0, |p| p.at(input) / 1000.0);
        Cost {
            input: input_cost,
            output: output_cost,
            total: input_cost + output_cost + requests,
        }
    }
}

impl PriceTable {
    /// The table this build carries (see the crate's docs for where it comes from).
    pub fn snapshot() -> &'static PriceTable {
        static TABLE: OnceLock<PriceTable> = OnceLock::new();
        TABLE.get_or_init(|| {
            // Checked by the tests; should it not read, nothing has a price.
            Self::from_json(include_bytes!("../data/prices.json")).unwrap_or_else(|e| {
                tracing::warn!(error = %e, "the built-in price table");
                PriceTable {
                    source: "none".into(),
                    providers: Vec::new(),
                }
            })
        })
    }

    /// A table from the JSON `to_json.py` writes.
    pub fn from_json(bytes: &[u8]) -> Result<Self, Error> {
        let mut table: PriceTable =
            serde_json::from_slice(bytes).map_err(|e| Error(e.to_string()))?;
        for p in &mut table.providers {
            p.model_match.iter_mut().for_each(Clause::lowercase);
            p.models.iter_mut().for_each(|m| m.matches.lowercase());
        }
        if table.providers.is_empty() {
            return Err(Error("it names no provider".into()));
        }
        Ok(table)
    }

    /// How many models it prices.
    pub fn models(&self) -> usize {
        self.providers.iter().map(|p| p.models.len()).sum()
    }

    /// Every model it prices (of `provider` alone, when given), as (provider id, model id,
    /// dollars per million tokens in and out at `at`, below any tier).
    pub fn list(&self, provider: Option<&str>, at: SystemTime) -> Vec<Listed> {
        let usage = Usage {
            input_tokens: 1000,
            output_tokens: 1000,
            ..Usage::default()
        };
        self.providers
            .iter()
            .filter(|p| provider.is_none_or(|id| p.id == id))
            .flat_map(|p| {
                p.models.iter().map(|m| {
                    let cost = self.cost(&p.id, &m.id, &usage, at);
                    Listed {
                        provider: p.id.clone(),
                        model: m.id.clone(),
                        per_million: cost.map(|c| (c.input * 1000.0, c.output * 1000.0)),
                    }
                })
            })
            .collect()
    }

    /// The provider: by id, else whose API is at `api_url`, else whose models' names look
    /// like `model`.
    fn provider(&self, id: Option<&str>, api_url: Option<&str>, model: &str) -> Option<&Provider> {
        if let Some(id) = id {
            // kite names providers exactly: a provider's looser `provider_match` (any id
            // holding "openai", say) would price one server at another's rates.
            let id = id.trim().to_lowercase();
            return self.providers.iter().find(|p| p.id == id);
        }
        if let Some(url) = api_url {
            return self.providers.iter().find(|p| {
                Regex::new(&format!("^(?:{})", p.api_pattern))
                    .is_ok_and(|r| r.is_match(url).unwrap_or(false))
            });
        }
        self.providers
            .iter()
            .find(|p| p.model_match.as_ref().is_some_and(|m| m.is_match(model)))
    }

    fn model<'a>(
        &'a self,
        provider: &'a Provider,
        model: &str,
        fallback: bool,
    ) -> Option<&'a Model> {
        if let Some(m) = provider.models.iter().find(|m| m.matches.is_match(model)) {
            return Some(m);
        }
        if !fallback {
            return None;
        }
        provider.fallback_model_providers.iter().find_map(|id| {
            let other = self.providers.iter().find(|p| &p.id == id)?;
            self.model(other, model, false)
        })
    }

    /// What `usage` of `model` from `provider` (a `genai-prices` provider id) cost at
    /// `at`; `None` when the table does not know the provider or the model.
    pub fn cost(&self, provider: &str, model: &str, usage: &Usage, at: SystemTime) -> Option<Cost> {
        self.cost_with(Some(provider), None, model, usage, at)
    }

    /// Like [`cost`](Self::cost), the provider found by its API's URL (any
    /// OpenAI-compatible server the table knows), or by the model's name.
    pub fn cost_at_url(
        &self,
        api_url: &str,
        model: &str,
        usage: &Usage,
        at: SystemTime,
    ) -> Option<Cost> {
        self.cost_with(None, Some(api_url), model, usage, at)
    }

    fn cost_with(
        &self,
        provider: Option<&str>,
        api_url: Option<&str>,
        model: &str,
        usage: &Usage,
        at: SystemTime,
    ) -> Option<Cost> {
        let name = model.to_lowercase();
        let provider = self.provider(provider, api_url, &name)?;
        let found = self
            .model(provider, &name, true)
            .or_else(|| self.model(provider, &compact_dates(&name), true))?;
        let at: DateTime<Utc> = at.into();
        let prices = match &found.prices {
            Prices::One(p) => p,
            Prices::Conditional(all) => {
                let first = &all.first()?.prices;
                all.iter()
                    .rev()
                    .find(|c| c.constraint.as_ref().is_none_or(|k| k.active(at)))
                    .map_or(first, |c| &c.prices)
            }
        };
        Some(prices.cost(usage))
    }
}

/// `gpt-5.2-20251211` as `gpt-5.2-2025-12-11`: the form the data uses for dated names
/// (eight digits after a hyphen, ending the word, that make a date).
fn compact_dates(name: &str) -> String {
    let parts: Vec<String> = name
        .split('-')
        .enumerate()
        .map(|(i, part)| {
            let digits = part.bytes().take_while(u8::is_ascii_digit).count();
            let ends_word = part[digits..]
                .chars()
                .next()
                .is_none_or(|c| !c.is_alphanumeric() && c != '_');
            let date = &part[..digits.min(part.len())];
            match (i > 0 && digits == 8 && ends_word, date) {
                (true, d) if NaiveDate::parse_from_str(d, "%Y%m%d").is_ok() => {
                    format!("{}-{}-{}{}", &d[..4], &d[4..6], &d[6..8], &part[8..])
                }
                _ => part.to_owned(),
            }
        })
        .collect();
    parts.join("-")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_snapshot_reads() {
        let table = PriceTable::from_json(include_bytes!("../data/prices.json")).unwrap();
        assert!(table.models() > 1000, "{}", table.models());
        assert!(table.source.starts_with("genai-prices "));
    }

    #[test]
    fn compact_dates_are_spelled_out() {
        assert_eq!(compact_dates("gpt-5.2-20251211"), "gpt-5.2-2025-12-11");
        assert_eq!(compact_dates("model-20251399"), "model-20251399");
    }
}
