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

/// The name of the key whose request was refused at admission.
#[derive(Clone)]
pub(crate) struct Refused(pub(crate) String);
