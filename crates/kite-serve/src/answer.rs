//! An answer opened for a client: on the route its model names, or on that route's
//! fallbacks in turn while each fails before its first event; its usage counted against
//! the caller as it comes; the gateway's secrets hidden in it; and a 503 when the server
//! stops before it began.

use crate::errors::{
    Api, Kind, error, not_allowed, unknown_model, upstream_error, worth_another_route,
};
use crate::keys::{self, Caller};
use crate::{Gateway, Route, agentic};
use axum::http::{StatusCode, header};
use axum::response::Response;
use futures_util::StreamExt;
use kite_core::{Error, Event, EventStream};
use std::sync::{Arc, Mutex};

/// An answer begun: its first event, the rest, the route that gives it, and what it uses
/// as it goes.
pub(crate) struct Opened {
    pub first: Option<Result<Event, Error>>,
    pub events: EventStream,
    pub route: String,
    pub provider: String,
    pub model: String,
    pub tally: Arc<Mutex<Tally>>,
}

/// What one answer has used so far, for its ledger row.
#[derive(Clone, Debug, Default)]
pub(crate) struct Tally {
    pub usage: kite_core::Usage,
    /// What it cost, as far as prices are known.
    pub cost: f64,
    /// Some of it has no known price.
    pub unpriced: bool,
}

impl Gateway {
    /// Starts answering `request` on the route its model names, or on that route's
    /// fallbacks in turn while each fails before its first event: the first event and the
    /// rest, or the refusal to send (unknown model, the last failure).
    pub(crate) async fn open(
        self: &Arc<Self>,
        api: Api,
        caller: &Caller,
        mut request: kite_core::Request,
        slot: Option<Arc<crate::limits::Slot>>,
    ) -> Result<Opened, Box<Response>> {
        let public = request.model.clone();
        let Some((route, upstream)) = self.route(&public) else {
            return Err(Box::new(unknown_model(api, &public)));
        };
        if let Caller::Key(k) = caller
            && !k.may_use(&public)
        {
            return Err(Box::new(not_allowed(api, &public)));
        }
        let tally = Arc::new(Mutex::new(Tally::default()));
        let chain = std::iter::once((route, upstream)).chain(
            route
                .fallbacks
                .iter()
                .filter_map(|name| self.routes.iter().find(|r| &r.name == name))
                .map(|r| (r, r.upstream.clone())),
        );
        let mut failure = None;
        for (route, upstream) in chain {
            request.model = upstream;
            // A key with a budget holds this route's worst case against it until the end.
            let reservation = self.reserve(api, caller, route, &request)?;
            let events = match request.tools.is_empty() && route.has_tools() {
                true => agentic::answer(self, route, request.clone()),
                false => route.model.stream(&request),
            };
            let events = self.metered(
                caller.clone(),
                route,
                &request,
                events,
                &tally,
                slot.clone(),
                reservation,
            );
            let mut events = redacted(events, &self.secrets.all());
            // The grace ran out while the upstream had not yet answered: 503, to ask again.
            let first = tokio::select! {
                first = events.next() => first,
                () = self.stop.cancelled() => {
                    let mut r = error(
                        api,
                        StatusCode::SERVICE_UNAVAILABLE,
                        "This server stopped before the answer began; ask again.",
                        Kind::Unavailable,
                    );
                    r.headers_mut()
                        .insert(header::RETRY_AFTER, header::HeaderValue::from_static("5"));
                    return Err(Box::new(r));
                }
            };
            match first {
                Some(Err(e)) if worth_another_route(&e) => {
                    tracing::warn!(target: "kite::serve", route = %route.name, error = %e, "route failed");
                    failure = Some(e);
                }
                // A fallback that cannot take what the client asked (another API's field)
                // is no answer: what the route before it met is.
                Some(Err(Error::InvalidRequest(_))) if failure.is_some() => {}
                // The request itself is at fault: no other route will do better.
                Some(Err(e)) => return Err(Box::new(upstream_error(api, &e, &self.secrets.all()))),
                first => {
                    return Ok(Opened {
                        first,
                        events,
                        route: route.name.clone(),
                        provider: route.model.origin().provider,
                        model: request.model.clone(),
                        tally,
                    });
                }
            }
        }
        let e = failure.unwrap_or(Error::Cancelled);
        Err(Box::new(upstream_error(api, &e, &self.secrets.all())))
    }

    /// `events`, with what they report used counted against `caller` (`meter.rs`).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn metered(
        self: &Arc<Self>,
        caller: Caller,
        route: &Route,
        request: &kite_core::Request,
        events: EventStream,
        tally: &Arc<Mutex<Tally>>,
        slot: Option<Arc<crate::limits::Slot>>,
        reservation: Option<crate::registry::Reservation>,
    ) -> EventStream {
        let mut meter =
            crate::meter::Meter::new(self, caller, route, request, tally, slot, reservation);
        Box::pin(events.inspect(move |e| meter.event(e)))
    }

    /// Counts all of `usage` (one whole run's) against `caller`.
    pub(crate) fn charge(&self, caller: &Caller, usage: &kite_core::Usage) {
        self.keys.spent(caller, keys::Spent::of(usage, usage.cost));
    }
}

/// `events` with `secrets` hidden in every delta and call (see
/// [`kite_core::redact::EventRedactor`]).
fn redacted(events: EventStream, secrets: &[String]) -> EventStream {
    use std::collections::VecDeque;
    if secrets.is_empty() {
        return events;
    }
    let redactor = kite_core::redact::EventRedactor::new(secrets);
    let state = (events, redactor, VecDeque::new(), false);
    Box::pin(futures_util::stream::unfold(
        state,
        |(mut events, mut redactor, mut queue, mut done)| async move {
            loop {
                if let Some(next) = queue.pop_front() {
                    return Some((next, (events, redactor, queue, done)));
                }
                if done {
                    return None;
                }
                match events.next().await {
                    Some(Ok(e)) => queue.extend(redactor.push(e).into_iter().map(Ok)),
                    Some(Err(e)) => {
                        queue.extend(redactor.finish().into_iter().map(Ok));
                        queue.push_back(Err(e));
                    }
                    None => {
                        queue.extend(redactor.finish().into_iter().map(Ok));
                        done = true;
                    }
                }
            }
        },
    ))
}

/// What the cache has for a request.
pub(crate) enum Lookup {
    /// There is no cache, or the client asked for an answer afresh.
    Off,
    /// Its answer, replayed.
    Hit(Box<Opened>),
    /// Nothing yet: the answer is to be kept under this key.
    Miss([u8; 32]),
}

/// Looks `request` up in the cache, after the checks [`Gateway::open`] makes (a model
/// served, and one the key may use).
pub(crate) async fn lookup(
    gw: &Gateway,
    api: Api,
    caller: &Caller,
    request: &kite_core::Request,
    fresh: bool,
) -> Result<Lookup, Box<Response>> {
    let Some(cache) = gw.cache.as_ref().filter(|_| !fresh) else {
        return Ok(Lookup::Off);
    };
    let Some((route, upstream)) = gw.route(&request.model) else {
        return Err(Box::new(unknown_model(api, &request.model)));
    };
    if let Caller::Key(k) = caller
        && !k.may_use(&request.model)
    {
        return Err(Box::new(not_allowed(api, &request.model)));
    }
    let key = cache.key(request, caller.id().unwrap_or("-"));
    let Some(events) = cache.get(&key).await else {
        gw.metrics.cache("miss");
        return Ok(Lookup::Miss(key));
    };
    gw.metrics.cache("hit");
    // What the answer used, for the ledger; it costs the caller nothing.
    let usage = events
        .iter()
        .rev()
        .find_map(|e| match e {
            Event::Usage { usage } => Some(*usage),
            _ => None,
        })
        .unwrap_or_default();
    let tally = Tally {
        usage,
        cost: 0.0,
        unpriced: false,
    };
    Ok(Lookup::Hit(Box::new(Opened {
        first: None,
        events: Box::pin(futures_util::stream::iter(events.into_iter().map(Ok))),
        route: route.name.clone(),
        provider: route.model.origin().provider,
        model: upstream,
        tally: Arc::new(Mutex::new(tally)),
    })))
}

/// `events`, kept in the cache under `key` once they end well (and when not too large).
pub(crate) fn kept_in_cache(gw: &Gateway, key: [u8; 32], events: EventStream) -> EventStream {
    let Some(cache) = gw.cache.clone() else {
        return events;
    };
    let max = cache.max_entry_bytes();
    let state = (events, Some(Vec::new()), 0usize);
    Box::pin(futures_util::stream::unfold(
        state,
        move |(mut events, mut kept, mut size)| {
            let cache = cache.clone();
            async move {
                match events.next().await {
                    Some(Ok(e)) => {
                        if let Some(k) = &mut kept {
                            size += serde_json::to_vec(&e).map_or(usize::MAX, |b| b.len());
                            match size > max {
                                true => kept = None,
                                false => k.push(e.clone()),
                            }
                        }
                        Some((Ok(e), (events, kept, size)))
                    }
                    Some(Err(e)) => Some((Err(e), (events, None, size))),
                    None => {
                        if let Some(k) = kept.take() {
                            tokio::spawn(async move { cache.put(key, &k).await });
                        }
                        None
                    }
                }
            }
        },
    ))
}
