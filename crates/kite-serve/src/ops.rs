//! The gateway's own endpoints: liveness and readiness for load balancers, the metrics
//! Prometheus scrapes, and what the caller's key has used.

use crate::Gateway;
use crate::errors::{Api, Kind, error};
use crate::keys::Caller;
use axum::extract::{Extension, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::json;
use std::sync::Arc;

/// `GET /health`: 200 while the gateway takes requests; 503 once it drains, so that a load
/// balancer sends new ones elsewhere.
pub(crate) async fn health(State(gw): State<Arc<Gateway>>) -> Response {
    use axum::response::IntoResponse;
    match gw.draining.load(std::sync::atomic::Ordering::Relaxed) {
        false => axum::Json(serde_json::json!({"status": "ok"})).into_response(),
        true => (
            StatusCode::SERVICE_UNAVAILABLE,
            axum::Json(serde_json::json!({"status": "draining"})),
        )
            .into_response(),
    }
}

/// What the caller's key (or, with no keys, everyone) has used: from the ledger, all
/// time, when the gateway has a store (the same on every replica, and through restarts,
/// with what this replica has yet to write first written); else since the gateway started.
pub(crate) async fn usage(
    State(gw): State<Arc<Gateway>>,
    Extension(caller): Extension<Caller>,
) -> Response {
    let (Some(ledger), Some(admin)) = (&gw.ledger, &gw.admin) else {
        return axum::Json(json!({"object": "usage", "usage": gw.keys.used(&caller)}))
            .into_response();
    };
    ledger.settle().await;
    let query = kite_store::fleet::UsageQuery {
        key: caller.id().map(str::to_owned),
        ..Default::default()
    };
    let asked = admin.usage(query);
    let line = match tokio::time::timeout(std::time::Duration::from_secs(5), asked).await {
        Ok(Ok(lines)) => lines.into_iter().next().unwrap_or_default(),
        _ => {
            return error(
                Api::Chat,
                StatusCode::SERVICE_UNAVAILABLE,
                "the usage ledger cannot be read just now; try again in a moment",
                Kind::Unavailable,
            );
        }
    };
    let used = json!({
        "requests": line.requests,
        "tokens": line.input_tokens + line.output_tokens,
        "input_tokens": line.input_tokens,
        "output_tokens": line.output_tokens,
        "cache_read_tokens": line.cache_read_tokens,
        "cache_write_tokens": line.cache_write_tokens,
        "reasoning_tokens": line.reasoning_tokens,
        "cost": line.cost,
        "unpriced": line.unpriced,
        "cached": line.cached,
    });
    axum::Json(json!({"object": "usage", "usage": used})).into_response()
}

/// `GET /metrics`: what the gateway has served, as Prometheus scrapes it. Asked with a
/// client key (a gateway with no admin keys), only what is that key's own and what is no
/// key's: one tenant never sees another's key names or counts.
pub(crate) async fn metrics(
    State(gw): State<Arc<Gateway>>,
    caller: Option<axum::extract::Extension<crate::keys::Caller>>,
) -> Response {
    let text = gw.metrics.text();
    let text = match caller {
        Some(axum::extract::Extension(caller @ crate::keys::Caller::Key(_))) => {
            own_lines(&text, &gw.keys.label(&caller))
        }
        _ => text,
    };
    (
        [(
            header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        text,
    )
        .into_response()
}

/// The lines of `text` (OpenMetrics) that name no key (or `-`), or the key `label`.
fn own_lines(text: &str, label: &str) -> String {
    let mine = format!(
        "key=\"{}\"",
        label.replace('\\', "\\\\").replace('"', "\\\"")
    );
    let mut out = String::with_capacity(text.len());
    for line in text.lines() {
        // `key="-"`: refused before any key was known, or asked with none.
        let keyed =
            !line.starts_with('#') && line.contains("key=\"") && !line.contains("key=\"-\"");
        if !keyed || line.contains(&mine) {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

/// `GET /ready`: 200 while the gateway takes requests and its store answers; 503 while it
/// drains, or its store does not answer within 2 s.
pub(crate) async fn ready(State(gw): State<Arc<Gateway>>) -> Response {
    let unready = |why: &str| {
        (
            StatusCode::SERVICE_UNAVAILABLE,
            axum::Json(json!({"status": "unavailable", "why": why})),
        )
            .into_response()
    };
    if gw.draining.load(std::sync::atomic::Ordering::Relaxed) {
        return unready("draining");
    }
    // A store that says a conversation does not exist has answered.
    if !gw.limiter.ready().await {
        return unready("Redis, which holds the rate limits, does not answer");
    }
    if let Some(registry) = &gw.keys.registry {
        let asked = registry.fleet.version();
        match tokio::time::timeout(std::time::Duration::from_secs(2), asked).await {
            Ok(Ok(_)) => {}
            Ok(Err(_)) => return unready("the store fails"),
            Err(_) => return unready("the store does not answer"),
        }
    }
    if let Some(store) = gw.store_for(&Caller::Anyone) {
        let asked = store.get("kite-ready-probe");
        match tokio::time::timeout(std::time::Duration::from_secs(2), asked).await {
            Ok(Ok(_) | Err(kite_store::StoreError::NotFound(_))) => {}
            Ok(Err(_)) => return unready("the store fails"),
            Err(_) => return unready("the store does not answer"),
        }
    }
    axum::Json(json!({"status": "ready"})).into_response()
}

#[cfg(test)]
mod tests {
    use super::own_lines;

    #[test]
    fn a_tenant_sees_its_own_key_and_no_other() {
        let text = "# TYPE kite_requests counter\n\
                    kite_requests_total{route=\"a\",key=\"alice\",status=\"200\"} 3\n\
                    kite_requests_total{route=\"a\",key=\"bob\",status=\"200\"} 5\n\
                    kite_in_flight 1\n# EOF\n";
        let seen = own_lines(text, "alice");
        assert!(seen.contains("alice") && !seen.contains("bob"), "{seen}");
        assert!(
            seen.contains("kite_in_flight 1") && seen.contains("# EOF"),
            "{seen}"
        );
    }
}
