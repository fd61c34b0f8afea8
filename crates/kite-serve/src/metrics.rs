//! `GET /metrics`: what the gateway has served, in the OpenMetrics text format Prometheus
//! scrapes (written by `prometheus-client`): requests by route, key and status; the time to
//! an answer's first byte and to its end; tokens and cost by route; refusals at a key's
//! limits (and while they cannot be checked); upstream failures by kind (midway through an
//! answer too); the ledger's rows; cache lookups; requests in flight. A key of kite.toml is
//! labelled by its place among the keys given (`key-1`), never by itself nor by its digest;
//! a key of the store by its name. Asked with a client key, as every `/v1` path is.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;
use std::sync::atomic::AtomicU64;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct Served {
    /// The route (model name) that answered, or `-`.
    pub route: String,
    /// The key's label, or `-`.
    pub key: String,
    pub status: u16,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Route {
    route: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Tokens {
    route: String,
    kind: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Kind {
    kind: String,
}

type Seconds = Family<Route, Histogram, fn() -> Histogram>;

fn seconds() -> Histogram {
    // 1 ms to about 65 s.
    Histogram::new(exponential_buckets(0.001, 2.0, 17))
}

/// The gateway's metrics, and the registry that writes them.
pub(crate) struct Metrics {
    registry: Registry,
    requests: Family<Served, Counter>,
    first_byte: Seconds,
    duration: Seconds,
    tokens: Family<Tokens, Counter>,
    cost: Family<Route, Counter<f64, AtomicU64>>,
    refused: Family<Kind, Counter>,
    upstream_errors: Family<Kind, Counter>,
    ledger: Family<Kind, Counter>,
    cache: Family<Kind, Counter>,
    unchecked: Family<Kind, Counter>,
    pub(crate) in_flight: Gauge,
}

/// The ledger's rows written and dropped, counted from its writer.
#[derive(Clone)]
pub(crate) struct LedgerCounts(Family<Kind, Counter>);

impl LedgerCounts {
    pub(crate) fn ledger_written(&self, n: u64) {
        self.count("written", n);
    }

    pub(crate) fn ledger_dropped(&self, n: u64) {
        self.count("dropped", n);
    }

    fn count(&self, kind: &str, n: u64) {
        let kind = kind.to_owned();
        self.0.get_or_create(&Kind { kind }).inc_by(n);
    }
}

impl Default for Metrics {
    fn default() -> Self {
        let mut registry = Registry::with_prefix("kite");
        let requests = Family::<Served, Counter>::default();
        registry.register("requests", "Requests answered", requests.clone());
        let first_byte = Seconds::new_with_constructor(seconds);
        registry.register(
            "time_to_first_byte_seconds",
            "Time from a request to its answer's first byte",
            first_byte.clone(),
        );
        let duration = Seconds::new_with_constructor(seconds);
        registry.register(
            "request_duration_seconds",
            "Time from a request to its answer's end",
            duration.clone(),
        );
        let tokens = Family::<Tokens, Counter>::default();
        registry.register("tokens", "Tokens used, by kind", tokens.clone());
        let cost = Family::<Route, Counter<f64, AtomicU64>>::default();
        registry.register(
            "cost_usd",
            "What the answers cost, in US dollars",
            cost.clone(),
        );
        let refused = Family::<Kind, Counter>::default();
        registry.register(
            "limit_refusals",
            "Requests refused at a key's limits",
            refused.clone(),
        );
        let upstream_errors = Family::<Kind, Counter>::default();
        registry.register(
            "upstream_errors",
            "Upstream failures, by kind",
            upstream_errors.clone(),
        );
        let ledger = Family::<Kind, Counter>::default();
        registry.register(
            "ledger_rows",
            "Spend ledger rows written to the store, or dropped when it would not take them",
            ledger.clone(),
        );
        let cache = Family::<Kind, Counter>::default();
        registry.register(
            "cache_lookups",
            "Response cache lookups, by result (hit, miss)",
            cache.clone(),
        );
        let unchecked = Family::<Kind, Counter>::default();
        registry.register(
            "limits_unavailable",
            "Requests met while Redis could not check the limits, by policy (deny, allow)",
            unchecked.clone(),
        );
        let in_flight = Gauge::default();
        registry.register(
            "requests_in_flight",
            "Requests being answered",
            in_flight.clone(),
        );
        Self {
            registry,
            requests,
            first_byte,
            duration,
            tokens,
            cost,
            refused,
            upstream_errors,
            ledger,
            cache,
            unchecked,
            in_flight,
        }
    }
}

impl Metrics {
    /// A request answered (its head sent) after `first_byte` seconds.
    pub(crate) fn answered(&self, served: Served, first_byte: f64) {
        let route = Route {
            route: served.route.clone(),
        };
        self.first_byte.get_or_create(&route).observe(first_byte);
        self.requests.get_or_create(&served).inc();
    }

    /// A request's answer ended (or its client left) after `seconds`.
    pub(crate) fn ended(&self, route: &str, seconds: f64) {
        let route = Route {
            route: route.to_owned(),
        };
        self.duration.get_or_create(&route).observe(seconds);
    }

    /// What one answer of `route` used.
    pub(crate) fn used(&self, route: &str, usage: &kite_core::Usage, cost: Option<f64>) {
        for (kind, n) in [
            ("input", usage.input_tokens),
            ("output", usage.output_tokens),
            ("cache_read", usage.cached_input_tokens),
            ("cache_write", usage.cache_write_tokens),
            ("reasoning", usage.reasoning_tokens),
        ] {
            let labels = Tokens {
                route: route.to_owned(),
                kind,
            };
            self.tokens.get_or_create(&labels).inc_by(n);
        }
        if let Some(cost) = cost.filter(|c| c.is_finite() && *c > 0.0) {
            let labels = Route {
                route: route.to_owned(),
            };
            self.cost.get_or_create(&labels).inc_by(cost);
        }
    }

    /// A request refused at a key's limit of `kind` (`requests`, `tokens`).
    pub(crate) fn refused(&self, kind: &str) {
        let kind = kind.to_owned();
        self.refused.get_or_create(&Kind { kind }).inc();
    }

    /// An upstream failure of `kind` (as traces name it: the status, or what failed).
    pub(crate) fn upstream_error(&self, kind: String) {
        self.upstream_errors.get_or_create(&Kind { kind }).inc();
    }

    /// The ledger's counts, for its writer.
    pub(crate) fn ledger(&self) -> LedgerCounts {
        LedgerCounts(self.ledger.clone())
    }

    /// A request met while Redis could not check the limits, under `policy`.
    pub(crate) fn unchecked(&self, policy: &str) {
        let kind = policy.to_owned();
        self.unchecked.get_or_create(&Kind { kind }).inc();
    }

    /// A response cache lookup: `hit` or `miss`.
    pub(crate) fn cache(&self, result: &str) {
        let kind = result.to_owned();
        self.cache.get_or_create(&Kind { kind }).inc();
    }

    /// Everything, as the OpenMetrics text format writes it.
    pub(crate) fn text(&self) -> String {
        let mut out = String::new();
        // Writing to a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        out
    }
}
