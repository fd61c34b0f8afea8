//! `background: true`: the response is kept as `queued` and answered at once; a task on
//! this replica runs it (`in_progress`, then `completed`, `incomplete`, `failed` or
//! `cancelled`) while any replica reports it. The task is touched in the store every
//! [`TOUCH`]; a cancel asked on any replica is found there on the next touch (at once on
//! this one), and so is a response deleted while it runs. A run left untouched for
//! [`STALE`] lost its replica, and any replica marks it failed ([`watch`]): none stays in
//! progress for ever. A store that was away makes no run look lost: a replica marks runs
//! failed only once it has reached the store for [`STALE`] without a break, by when the
//! replicas running them have touched them again. A run's last word waits for the store
//! (for [`LAST_WORD`] at most, or the server's grace when it stops), and its later words
//! only update: a deleted response is not brought back.

use super::{DEADLINE, load, need, owner, put};
use crate::Gateway;
use crate::errors::{Api, Kind, error, not_allowed, told, unknown_model};
use crate::handlers::{Answered, until_stopped, whole};
use crate::keys::Caller;
use axum::extract::{Extension, Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use kite_store::Fleet;
use kite_store::fleet::{StoredResponse, UNDER_WAY};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// How often a run under way is touched, and cancels are looked for.
const TOUCH: Duration = Duration::from_secs(2);
/// How long a run may go untouched before it is taken for lost: well past the longest gap
/// between touches (a touch's deadline and its interval), with room for replicas' clocks to
/// differ by some seconds.
pub(crate) const STALE: Duration = Duration::from_secs(20);

/// How often runs lost by other replicas are looked for.
const SWEEP: Duration = Duration::from_secs(5);

/// How long a run's last word waits for a store that does not take it.
const LAST_WORD: Duration = Duration::from_secs(600);
/// How long it waits after its first try, doubled after each until [`TOUCH`].
const FIRST_PAUSE: Duration = Duration::from_millis(200);

/// How long a finished response is kept (as OpenAI keeps them).
const KEPT: Duration = Duration::from_secs(30 * 24 * 3600);

/// The background runs under way on this replica: by response id, whose each is, and what
/// stops it.
#[derive(Default)]
pub(crate) struct Runs(
    Mutex<HashMap<String, (String, CancellationToken)>>,
    tokio_util::task::TaskTracker,
    std::sync::atomic::AtomicBool,
);

impl Runs {
    /// Lets the runs under way finish, for at most `grace`; then ends the others, failed
    /// (this server is stopping), and waits (5 s at most) until each has said so.
    pub(crate) async fn finish(&self, grace: Duration) {
        self.1.close();
        if tokio::time::timeout(grace, self.1.wait()).await.is_ok() {
            return;
        }
        self.2.store(true, std::sync::atomic::Ordering::Relaxed);
        for (_, t) in self.0.lock().unwrap_or_else(|e| e.into_inner()).values() {
            t.cancel();
        }
        let _ = tokio::time::timeout(Duration::from_secs(5), self.1.wait()).await;
    }

    fn stopping(&self) -> bool {
        self.2.load(std::sync::atomic::Ordering::Relaxed)
    }

    fn ids(&self) -> Vec<String> {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .keys()
            .cloned()
            .collect()
    }

    pub(super) fn cancel(&self, id: &str) {
        if let Some((_, t)) = self.0.lock().unwrap_or_else(|e| e.into_inner()).get(id) {
            t.cancel();
        }
    }

    /// Stops the runs of the keys `revoked` says are revoked.
    fn stop_revoked(&self, revoked: impl Fn(&str) -> bool) {
        for (owner, t) in self.0.lock().unwrap_or_else(|e| e.into_inner()).values() {
            if revoked(owner) {
                t.cancel();
            }
        }
    }
}

/// Touches this replica's runs, passes on the cancels asked elsewhere, and stops the runs
/// of keys revoked; and, apart, marks failed the runs other replicas lost and forgets
/// responses past [`KEPT`]; until `stop`.
pub(crate) async fn watch(
    runs: Arc<Runs>,
    registry: Arc<crate::registry::Registry>,
    stop: CancellationToken,
) {
    let fleet = registry.fleet.clone();
    let touch = async {
        loop {
            tokio::time::sleep(TOUCH).await;
            runs.stop_revoked(|owner| registry.revoked(owner));
            let ids = runs.ids();
            let now = crate::admin::now_ms();
            if !ids.is_empty()
                && let Ok(Ok(cancelled)) =
                    tokio::time::timeout(DEADLINE, fleet.touch_responses(ids, now)).await
            {
                cancelled.iter().for_each(|id| runs.cancel(id));
            }
        }
    };
    let sweep = async {
        let mut forgot = None::<std::time::Instant>;
        // Since when the store has answered without a break.
        let mut up_since = None::<Instant>;
        loop {
            tokio::time::sleep(SWEEP).await;
            let up = matches!(
                tokio::time::timeout(DEADLINE, fleet.version()).await,
                Ok(Ok(_))
            );
            up_since = up.then(|| up_since.unwrap_or_else(Instant::now));
            if up_since.is_none_or(|t| t.elapsed() < STALE) {
                continue;
            }
            let now = crate::admin::now_ms();
            let before = now - STALE.as_millis() as i64;
            if let Ok(Ok(n)) = tokio::time::timeout(DEADLINE, fleet.fail_stale(before)).await
                && n > 0
            {
                tracing::warn!(target: "kite::serve", n, "background responses whose replica stopped are marked failed");
            }
            if forgot.is_none_or(|t| t.elapsed() > Duration::from_secs(3600)) {
                let before = now - KEPT.as_millis() as i64;
                let _ = tokio::time::timeout(DEADLINE, fleet.forget_responses(before)).await;
                forgot = Some(std::time::Instant::now());
            }
        }
    };
    tokio::select! {
        () = touch => {}
        () = sweep => {}
        () = stop.cancelled() => {}
    }
}

/// `body` (a response object) with `status`, and `error` when failed.
fn with_status(body: &Value, status: &str, error: Option<String>) -> Value {
    let mut v = body.clone();
    v["status"] = status.into();
    v["background"] = true.into();
    if let Some(message) = error {
        v["error"] = json!({"code": "server_error", "message": message});
    }
    v
}

/// A background response to run: who asked what, kept how, and the request's slot (its
/// places among those at once are held, and its tokens counted, until the run ends).
pub(super) struct Run {
    pub caller: Caller,
    pub request: kite_core::Request,
    pub kept: StoredResponse,
    pub slot: Option<Arc<crate::limits::Slot>>,
}

/// Keeps the response queued, answers with it, and runs it in a task of its own.
pub(super) async fn start(
    gw: Arc<Gateway>,
    fleet: Arc<dyn Fleet>,
    mut run: Run,
    public: String,
    encode: impl Fn(&kite_core::Response) -> Value + Send + Sync + 'static,
) -> Response {
    let caller = &run.caller;
    // The checks `open` makes, before the response is queued.
    // What would refuse the run refuses the request.
    if gw.route(&public).is_none() {
        return unknown_model(Api::Chat, &public);
    }
    if let Caller::Key(k) = caller
        && !k.may_use(&public)
    {
        return not_allowed(Api::Chat, &public);
    }
    let mut skeleton = encode(&kite_core::Response::empty(kite_core::FinishReason::Stop));
    skeleton["output"] = json!([]);
    skeleton["usage"] = Value::Null;
    let queued = with_status(&skeleton, "queued", None);
    run.kept.body = queued.to_string();
    if !put(&fleet, run.kept.clone()).await {
        return super::unavailable();
    }
    let cancel = CancellationToken::new();
    gw.background_runs
        .0
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(
            run.kept.id.clone(),
            (run.kept.owner.clone(), cancel.clone()),
        );
    let runs = gw.background_runs.clone();
    runs.1.spawn(go(gw, fleet, run, skeleton, encode, cancel));
    axum::Json(queued).into_response()
}

async fn go(
    gw: Arc<Gateway>,
    fleet: Arc<dyn Fleet>,
    run: Run,
    skeleton: Value,
    encode: impl Fn(&kite_core::Response) -> Value,
    cancel: CancellationToken,
) {
    let Run {
        caller,
        request,
        kept,
        slot,
    } = run;
    let at = |status: &str, body: Value| StoredResponse {
        status: status.to_owned(),
        body: body.to_string(),
        updated_ms: crate::admin::now_ms(),
        ..kept.clone()
    };
    let started_word = at("in_progress", with_status(&skeleton, "in_progress", None));
    let _ = tokio::time::timeout(DEADLINE, fleet.update_response(started_word)).await;
    let (came, started) = (crate::admin::now_ms(), Instant::now());
    let mut served = None;
    let work = async {
        let opened = gw
            .open(Api::Chat, &caller, request, slot)
            .await
            .map_err(|refused| format!("the upstream refused ({})", refused.status()))?;
        served = Some(Answered {
            route: opened.route,
            key: gw.keys.label(&caller),
            caller: caller.clone(),
            provider: opened.provider,
            model: opened.model,
            tally: opened.tally,
            cached: false,
        });
        whole(opened.first, until_stopped(opened.events, gw.stop.clone()))
            .await
            .map_err(|e| told(&e, &gw.secrets.all()))
    };
    let ended = tokio::select! {
        r = work => Some(r),
        () = cancel.cancelled() => None,
    };
    let (status, body) = match ended {
        Some(Ok(r)) => {
            let mut body = encode(&r);
            body["background"] = true.into();
            (
                body["status"].as_str().unwrap_or("completed").to_owned(),
                body,
            )
        }
        Some(Err(message)) => (
            "failed".into(),
            with_status(&skeleton, "failed", Some(message)),
        ),
        None if gw.background_runs.stopping() => {
            let why = "this server stopped before the response finished; ask again".to_owned();
            ("failed".into(), with_status(&skeleton, "failed", Some(why)))
        }
        None => (
            "cancelled".into(),
            with_status(&skeleton, "cancelled", None),
        ),
    };
    if let (Some(served), Some(ledger)) = (served, &gw.ledger) {
        let code = if status == "failed" { 502 } else { 200 };
        ledger.record(crate::ledger::row(
            &served,
            format!("bg_{}", kept.id),
            came,
            code,
            None,
            started.elapsed(),
        ));
    }
    // Still touched while it waits for the store: no replica takes it for lost.
    last_word(&gw.background_runs, &fleet, at(&status, body)).await;
    gw.background_runs
        .0
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .remove(&kept.id);
}

/// Writes a run's last word, again and again until the store takes it, for [`LAST_WORD`]
/// at most; once this server is stopping (its grace over), one more try of 2 s, for its
/// clients may ask another replica.
async fn last_word(runs: &Runs, fleet: &Arc<dyn Fleet>, word: StoredResponse) {
    let began = Instant::now();
    let mut pause = FIRST_PAUSE;
    loop {
        let deadline = match runs.stopping() {
            true => Duration::from_secs(2),
            false => DEADLINE,
        };
        let now = StoredResponse {
            updated_ms: crate::admin::now_ms(),
            ..word.clone()
        };
        // Written, or it ended or was deleted meanwhile: either way, said.
        match tokio::time::timeout(deadline, fleet.update_response(now)).await {
            Ok(Ok(_)) => return,
            failed if pause == FIRST_PAUSE => {
                let why = match failed {
                    Ok(Err(e)) => e.to_string(),
                    _ => format!("no answer within {} s", deadline.as_secs()),
                };
                tracing::warn!(target: "kite::serve", id = %word.id, "a background response's end waits for the store ({why})");
            }
            _ => {}
        }
        if runs.stopping() || began.elapsed() > LAST_WORD {
            tracing::error!(target: "kite::serve", id = %word.id, "a background response's end could not be stored");
            return;
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(TOUCH);
    }
}

/// `POST /v1/responses/{id}/cancel`: stops a background response under way (on whichever
/// replica runs it) and answers with it, cancelled.
pub(super) async fn cancel(
    State(gw): State<Arc<Gateway>>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
) -> Response {
    let found = async {
        let fleet = need(&gw)?;
        let stored = load(&fleet, &id, &owner(&caller)).await?;
        Ok::<_, Box<Response>>((fleet, stored))
    };
    let (fleet, stored) = match found.await {
        Ok(f) => f,
        Err(refused) => return *refused,
    };
    let body: Value = serde_json::from_str(&stored.body).unwrap_or_default();
    if body["background"] != true {
        return error(
            Api::Chat,
            StatusCode::BAD_REQUEST,
            "Only background responses can be cancelled.",
            Kind::Invalid,
        );
    }
    if !UNDER_WAY.contains(&stored.status.as_str()) {
        return axum::Json(body).into_response();
    }
    gw.background_runs.cancel(&id);
    let cancelled = with_status(&body, "cancelled", None);
    let asked = fleet.cancel_response(&id, cancelled.to_string());
    match tokio::time::timeout(DEADLINE, asked).await {
        Ok(Ok(true)) => axum::Json(cancelled).into_response(),
        // It ended meanwhile: as it ended.
        Ok(Ok(false)) => match load(&fleet, &id, &owner(&caller)).await {
            Ok(r) => (
                [(axum::http::header::CONTENT_TYPE, "application/json")],
                r.body,
            )
                .into_response(),
            Err(refused) => *refused,
        },
        _ => super::unavailable(),
    }
}

#[cfg(test)]
mod tests {
    use super::Runs;
    use tokio_util::sync::CancellationToken;

    #[test]
    fn a_revoked_keys_runs_stop_and_no_others() {
        let runs = Runs::default();
        let (a, b) = (CancellationToken::new(), CancellationToken::new());
        {
            let mut map = runs.0.lock().unwrap();
            map.insert("resp_a".into(), ("key_a".into(), a.clone()));
            map.insert("resp_b".into(), ("key_b".into(), b.clone()));
        }
        runs.stop_revoked(|owner| owner == "key_a");
        assert!(a.is_cancelled());
        assert!(!b.is_cancelled());
        runs.cancel("resp_b");
        assert!(b.is_cancelled());
    }
}
