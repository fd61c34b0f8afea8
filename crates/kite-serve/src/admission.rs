//! Who may ask, and whether now: the caller's key, then its budget and its team's, then
//! its limits and its team's, each refusal in the client's API's shape.

use crate::errors::{self, Api, Kind, error, unauthorized};
use crate::keys::Caller;
use crate::{Gateway, limits, seconds};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::Response;

impl Gateway {
    /// The caller, admitted: a refusal in the client's API's shape when its key is
    /// wrong (401) or, for a request that asks a model (`counted`), over its budget or its
    /// team's (429 `insufficient_quota`) or over its limits or its team's (429 with
    /// `Retry-After`; 503 while the limits cannot be checked and the policy is to refuse).
    /// Reading what there is (models, usage, conversations) needs the key but spends
    /// nothing, so a client over its limits can still see why. The slot holds the
    /// request's place among those at once until dropped. A refused key's name goes with
    /// its refusal ([`Refused`]), for the metrics and the log.
    pub(crate) async fn admit(
        &self,
        api: Api,
        headers: &HeaderMap,
        counted: bool,
    ) -> Result<(Caller, Option<limits::Slot>), Box<Response>> {
        let Some(caller) = self.keys.caller(headers) else {
            let given = ["authorization", "x-api-key"]
                .iter()
                .any(|h| headers.contains_key(*h));
            return Err(Box::new(unauthorized(api, self.keys.is_empty(), given)));
        };
        if !counted {
            return Ok((caller, None));
        }
        let refused = |mut r: Response| {
            r.extensions_mut().insert(Refused(self.keys.label(&caller)));
            Box::new(r)
        };
        let mut subjects = Vec::new();
        if let Caller::Key(k) = &caller {
            let registry = self.keys.registry.as_ref();
            if let Some(over) = registry.and_then(|r| r.over_budget(k)) {
                self.metrics.refused("budget");
                return Err(refused(errors::over_budget(api, &over)));
            }
            let team = k.team.as_deref().and_then(|t| registry?.team_limits(t));
            subjects = k.subjects(team);
        }
        match self.limiter.admit(&subjects, &self.metrics).await {
            Ok(slot) => {
                self.keys.admitted(&caller);
                Ok((caller, Some(slot)))
            }
            Err(limits::Refusal::Wait(wait, kind, team)) => {
                self.metrics.refused(kind);
                let what = match kind {
                    "tokens" => "Token rate limit",
                    "parallel" => "Limit of requests at once",
                    _ => "Rate limit",
                };
                let whose = match team {
                    true => "this key's team",
                    false => "this key",
                };
                let mut r = error(
                    api,
                    StatusCode::TOO_MANY_REQUESTS,
                    &format!(
                        "{what} reached for {whose}; try again in {} s.",
                        seconds(wait)
                    ),
                    Kind::RateLimit,
                );
                if let Ok(v) = header::HeaderValue::from_str(&seconds(wait).to_string()) {
                    r.headers_mut().insert(header::RETRY_AFTER, v);
                }
                Err(refused(r))
            }
            Err(limits::Refusal::Unavailable) => {
                let mut r = error(
                    api,
                    StatusCode::SERVICE_UNAVAILABLE,
                    "This gateway cannot check its rate limits just now; try again in a moment.",
                    Kind::Unavailable,
                );
                r.headers_mut()
                    .insert(header::RETRY_AFTER, header::HeaderValue::from_static("1"));
                Err(refused(r))
            }
        }
    }
}

/// The output tokens a request that names no `max_tokens` is held to cost at most, for a
/// key with a budget.
const RESERVED_OUTPUT: u32 = 16_384;

/// The input tokens a provider's template and instructions are held to add to a request.
const TEMPLATE: u64 = 1_000;

impl Gateway {
    /// For a key with a budget (its own or its team's), holds what `request` may cost at
    /// most on `route` against it until the answer ends: refused (403) when the model has
    /// no price kite knows, and (429 `insufficient_quota`) when the budget has no room left
    /// for it beside the requests under way. Its input is taken as a token every two
    /// characters (its tools' schemas too), and [`TEMPLATE`] more; its output as its
    /// `max_tokens` (else [`RESERVED_OUTPUT`]).
    pub(crate) fn reserve(
        &self,
        api: Api,
        caller: &Caller,
        route: &crate::Route,
        request: &kite_core::Request,
    ) -> Result<Option<crate::registry::Reservation>, Box<Response>> {
        let (Caller::Key(key), Some(registry)) = (caller, self.keys.registry.as_ref()) else {
            return Ok(None);
        };
        if !registry.has_budget(key) {
            return Ok(None);
        }
        let provider = route.model.origin().provider;
        let output = u64::from(request.max_tokens.unwrap_or(RESERVED_OUTPUT));
        let schemas: usize = request
            .tools
            .iter()
            .map(|t| t.parameters.to_string().len())
            .sum();
        let input = ((crate::meter::asked(request) + schemas) / 2) as u64 + TEMPLATE;
        let worst = kite_core::Usage {
            input_tokens: input,
            output_tokens: output,
            total_tokens: input + output,
            ..kite_core::Usage::default()
        };
        let Some(dollars) = self
            .pricer
            .as_ref()
            .and_then(|price| price(&provider, &request.model, &worst))
        else {
            self.metrics.refused("unpriced");
            return Err(Box::new(error(
                api,
                StatusCode::FORBIDDEN,
                &format!(
                    "This key has a budget, and the model `{}` has no price kite knows, so \
                     what it spends could not be counted. An operator can give it one in \
                     kite.toml ([prices.\"{provider}/{}\"]).",
                    crate::text::shown(&request.model),
                    crate::text::shown(&request.model)
                ),
                Kind::Forbidden,
            )));
        };
        registry.reserve(key, dollars).map(Some).map_err(|over| {
            self.metrics.refused("budget");
            Box::new(errors::over_budget(api, &over))
        })
    }
}

/// The name of the key whose request was refused at admission.
#[derive(Clone)]
pub(crate) struct Refused(pub(crate) String);
