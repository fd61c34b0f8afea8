//! `/v1/admin/...`: key and team management over HTTP, for an operator's tooling, guarded
//! by `[serve] admin_keys` (client keys cannot reach it, and admin keys ask no model).
//! Off, as if absent (404), when no admin key is set.

use super::{Admin, AdminError, NewKey, NewTeam};
use crate::Gateway;
use crate::errors::{Api, Kind, error};
use axum::extract::{Extension, Path, Query};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use kite_store::fleet::{By, UsageQuery};
use serde_json::{Value, json};
use std::sync::Arc;

pub(crate) fn routes() -> Router<Arc<Gateway>> {
    Router::new()
        .route("/v1/admin/keys", get(keys).post(create_key))
        .route("/v1/admin/keys/{id}", get(key).delete(revoke))
        .route("/v1/admin/keys/{id}/rotate", post(rotate))
        .route("/v1/admin/teams", get(teams).post(create_team))
        .route("/v1/admin/teams/{name}", get(team))
        .route("/v1/admin/usage", get(usage))
}

/// The largest body the admin API reads (its bodies are a few fields).
pub(crate) const MAX_BODY: usize = 64 << 10;

/// The admin API, when the caller gives an admin key: asked by `middleware::gate` before a
/// body is read, and given to the handlers.
pub(crate) fn admitted(gw: &Gateway, headers: &HeaderMap) -> Result<Admin, Box<Response>> {
    let (Some(admin), false) = (&gw.admin, gw.admin_keys.is_empty()) else {
        return Err(Box::new(error(
            Api::Chat,
            StatusCode::NOT_FOUND,
            "the admin API is off: set [serve] admin_keys (and a store)",
            Kind::Missing,
        )));
    };
    let ok = is_admin(gw, headers);
    match ok {
        true => Ok(admin.clone()),
        false => Err(Box::new(error(
            Api::Chat,
            StatusCode::UNAUTHORIZED,
            "this needs an admin key ([serve] admin_keys)",
            Kind::Auth,
        ))),
    }
}

/// Whether `headers` give one of the admin keys (compared in constant time).
pub(crate) fn is_admin(gw: &Gateway, headers: &HeaderMap) -> bool {
    use sha2::Digest;
    use subtle::ConstantTimeEq;
    let given = crate::keys::given_key(headers).unwrap_or_default();
    let digest: [u8; 32] = sha2::Sha256::digest(given.trim().as_bytes()).into();
    let mut ok = false;
    for k in &gw.admin_keys {
        ok |= bool::from(k.ct_eq(&digest));
    }
    ok
}

fn failed(e: AdminError) -> Response {
    let (status, kind) = match &e {
        AdminError::Invalid(_) => (StatusCode::BAD_REQUEST, Kind::Invalid),
        AdminError::NotFound(_) => (StatusCode::NOT_FOUND, Kind::Missing),
        AdminError::Exists(_) => (StatusCode::CONFLICT, Kind::Invalid),
        AdminError::Store(_) => (StatusCode::SERVICE_UNAVAILABLE, Kind::Unavailable),
    };
    error(Api::Chat, status, &e.to_string(), kind)
}

fn answer(r: Result<Value, AdminError>) -> Response {
    match r {
        Ok(v) => Json(v).into_response(),
        Err(e) => failed(e),
    }
}

fn list<T: serde::Serialize>(data: Vec<T>) -> Value {
    json!({"object": "list", "data": data})
}

/// A new key's view with the key itself, shown this once.
fn with_key(view: super::KeyView, key: String) -> Value {
    let mut v = json!(view);
    v["key"] = key.into();
    v
}

/// A JSON body, or a 400 that says what is wrong with it.
fn body<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> Result<T, Box<Response>> {
    serde_json::from_slice(bytes).map_err(|e| {
        Box::new(error(
            Api::Chat,
            StatusCode::BAD_REQUEST,
            &format!("the body is not what this takes: {e}"),
            Kind::Invalid,
        ))
    })
}

async fn keys(Extension(admin): Extension<Admin>) -> Response {
    answer(admin.keys().await.map(list))
}

async fn create_key(Extension(admin): Extension<Admin>, bytes: axum::body::Bytes) -> Response {
    let new: NewKey = match body(&bytes) {
        Ok(n) => n,
        Err(r) => return *r,
    };
    match admin.create_key(new).await {
        Ok((view, key)) => (StatusCode::CREATED, Json(with_key(view, key))).into_response(),
        Err(e) => failed(e),
    }
}

async fn key(Extension(admin): Extension<Admin>, Path(id): Path<String>) -> Response {
    answer(admin.key(&id).await.map(|k| json!(k)))
}

async fn revoke(Extension(admin): Extension<Admin>, Path(id): Path<String>) -> Response {
    answer(admin.revoke(&id).await.map(|k| json!(k)))
}

async fn rotate(Extension(admin): Extension<Admin>, Path(id): Path<String>) -> Response {
    answer(admin.rotate(&id).await.map(|(v, k)| with_key(v, k)))
}

async fn teams(Extension(admin): Extension<Admin>) -> Response {
    answer(admin.teams().await.map(list))
}

async fn create_team(Extension(admin): Extension<Admin>, bytes: axum::body::Bytes) -> Response {
    let new: NewTeam = match body(&bytes) {
        Ok(n) => n,
        Err(r) => return *r,
    };
    match admin.create_team(new).await {
        Ok(team) => (StatusCode::CREATED, Json(json!(team))).into_response(),
        Err(e) => failed(e),
    }
}

async fn team(Extension(admin): Extension<Admin>, Path(name): Path<String>) -> Response {
    let shown = async {
        let team = admin.team(&name).await?;
        let keys: Vec<_> = admin
            .keys()
            .await?
            .into_iter()
            .filter(|k| k.team.as_deref() == Some(&name))
            .collect();
        let mut v = json!(team);
        v["keys"] = json!(keys);
        Ok(v)
    };
    answer(shown.await)
}

/// `?key=&team=&since=MS&by=day|model|key|route`.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct UsageParams {
    key: Option<String>,
    team: Option<String>,
    since: Option<i64>,
    by: Option<By>,
}

async fn usage(
    Extension(admin): Extension<Admin>,
    params: Result<Query<UsageParams>, axum::extract::rejection::QueryRejection>,
) -> Response {
    let Ok(Query(p)) = params else {
        return error(
            Api::Chat,
            StatusCode::BAD_REQUEST,
            "usage takes key, team, since (Unix milliseconds) and by (day, model, key, route)",
            Kind::Invalid,
        );
    };
    let query = UsageQuery {
        key: p.key,
        team: p.team,
        since_ms: p.since,
        by: p.by,
    };
    answer(admin.usage(query).await.map(list))
}
