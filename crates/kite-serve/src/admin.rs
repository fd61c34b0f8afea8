//! Keys and teams managed without a restart: what `kite keys`, `kite teams` and
//! `kite usage` do, and what `/v1/admin/...` serves (`admin/http.rs`), in one place.
//!
//! A new key is 24 random bytes as hex after a prefix that tells it apart (`kite_sk_`),
//! shown once; only its SHA-256 digest is stored, with a hint (its prefix and last four
//! characters) to recognise it by.

pub(crate) mod http;

use crate::ids::hex;
use kite_store::fleet::{
    Budget, FleetLimits, KeyRecord, Period, TeamRecord, UsageLine, UsageQuery,
};
use kite_store::{Fleet, StoreError};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::sync::Arc;

/// What every key made here begins with.
pub const KEY_PREFIX: &str = "kite_sk_";

/// Key and team management on a store.
#[derive(Clone)]
pub struct Admin {
    fleet: Arc<dyn Fleet>,
}

/// A key to make.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NewKey {
    /// Its name, unique.
    pub name: String,
    /// The team it spends for (one made before).
    #[serde(default)]
    pub team: Option<String>,
    /// Its own limits.
    #[serde(default, flatten)]
    pub limits: FleetLimits,
    /// Its own budget.
    #[serde(default, deserialize_with = "strict_budget")]
    pub budget: Option<Budget>,
    /// The models it may ask for (empty: any).
    #[serde(default)]
    pub models: Vec<String>,
    /// When it stops working (Unix milliseconds).
    #[serde(default)]
    pub expires_ms: Option<i64>,
}

/// A team to make.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NewTeam {
    /// Its name, unique.
    pub name: String,
    /// Limits its keys share.
    #[serde(default, flatten)]
    pub limits: FleetLimits,
    /// A budget its keys share.
    #[serde(default, deserialize_with = "strict_budget")]
    pub budget: Option<Budget>,
}

/// A budget as asked for: a field it does not have is refused, not left out (what is kept
/// stays readable by replicas of later versions, which may add fields).
fn strict_budget<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Budget>, D::Error> {
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Asked {
        usd: f64,
        period: Period,
    }
    let asked: Option<Asked> = Option::deserialize(d)?;
    Ok(asked.map(|a| Budget {
        usd: a.usd,
        period: a.period,
    }))
}

/// A key as it is shown: never its secret, nor its digest.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct KeyView {
    /// Its id: stays through a rotation.
    pub id: String,
    /// Its name.
    pub name: String,
    /// Its start and last four characters.
    pub hint: String,
    /// `active`, `revoked` or `expired`.
    pub state: &'static str,
    /// Its team.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub team: Option<String>,
    /// Its limits.
    pub limits: FleetLimits,
    /// Its budget.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub budget: Option<Budget>,
    /// The models it may ask for (empty: any).
    pub models: Vec<String>,
    /// When it stops working (Unix milliseconds).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expires_ms: Option<i64>,
    /// When it was made.
    pub created_ms: i64,
    /// When it was revoked.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub revoked_ms: Option<i64>,
}

/// What can go wrong managing keys and teams.
#[derive(Debug, thiserror::Error)]
pub enum AdminError {
    /// The request is not one that can be done.
    #[error("{0}")]
    Invalid(String),
    /// No key or team of that name or id.
    #[error("no {0}")]
    NotFound(String),
    /// The name is taken.
    #[error("there is already {0}")]
    Exists(String),
    /// The store failed.
    #[error("the store: {0}")]
    Store(StoreError),
}

/// Random hex, or the failure to draw it.
fn random_hex(n: usize) -> Result<String, AdminError> {
    crate::ids::random_hex(n).map_err(|e| AdminError::Invalid(format!("no randomness: {e}")))
}

impl From<StoreError> for AdminError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::Exists(what) => AdminError::Exists(what),
            other => AdminError::Store(other),
        }
    }
}

pub(crate) fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

fn view(k: KeyRecord) -> KeyView {
    let state = match (k.revoked_ms, k.expires_ms) {
        (Some(_), _) => "revoked",
        (None, Some(t)) if t <= now_ms() => "expired",
        _ => "active",
    };
    KeyView {
        id: k.id,
        name: k.name,
        hint: k.hint,
        state,
        team: k.team,
        limits: k.limits,
        budget: k.budget,
        models: k.models,
        expires_ms: k.expires_ms,
        created_ms: k.created_ms,
        revoked_ms: k.revoked_ms,
    }
}

/// A new secret, its digest (hex) and its hint.
fn secret() -> Result<(String, String, String), AdminError> {
    let key = format!("{KEY_PREFIX}{}", random_hex(24)?);
    let digest = hex(&Sha256::digest(key.as_bytes()));
    let hint = format!("{KEY_PREFIX}...{}", &key[key.len() - 4..]);
    Ok((key, digest, hint))
}

fn check_name(what: &str, name: &str) -> Result<(), AdminError> {
    if name.starts_with("key_") {
        return Err(AdminError::Invalid(format!(
            "a {what}'s name cannot begin with key_, as keys' ids do"
        )));
    }
    let fine = !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.@".contains(c));
    match fine {
        true => Ok(()),
        false => {
            let shown: String = name.chars().take(64).collect();
            let more = if name.chars().count() > 64 { "..." } else { "" };
            Err(AdminError::Invalid(format!(
                "a {what}'s name is 1 to 64 letters, digits, '-', '_', '.' or '@', not \
                 {shown:?}{more}"
            )))
        }
    }
}

fn check_limits(l: &FleetLimits, budget: &Option<Budget>) -> Result<(), AdminError> {
    if l.rpm == Some(0) || l.tpm == Some(0) || l.max_parallel == Some(0) {
        return Err(AdminError::Invalid(
            "a limit of 0 would refuse everything: leave it out for no limit".into(),
        ));
    }
    if let Some(b) = budget
        && !(b.usd.is_finite() && (0.0..=1e12).contains(&b.usd))
    {
        return Err(AdminError::Invalid(format!(
            "a budget is a number of dollars from 0 to 1e12, not {}",
            b.usd
        )));
    }
    Ok(())
}

impl Admin {
    /// Manages the keys and teams in `fleet`.
    pub fn new(fleet: Arc<dyn Fleet>) -> Self {
        Self { fleet }
    }

    /// Makes a key: what it is, and the key itself (shown this once).
    pub async fn create_key(&self, new: NewKey) -> Result<(KeyView, String), AdminError> {
        check_name("key", &new.name)?;
        check_limits(&new.limits, &new.budget)?;
        if let Some(team) = &new.team {
            self.team(team).await?;
        }
        let models: Vec<String> = new.models.iter().map(|m| m.trim().to_owned()).collect();
        if models.iter().any(String::is_empty) {
            return Err(AdminError::Invalid("a model's name cannot be empty".into()));
        }
        if models.len() > 1_000 || models.iter().any(|m| m.len() > 256) {
            return Err(AdminError::Invalid(
                "a key names at most 1,000 models, each of at most 256 characters".into(),
            ));
        }
        if new.expires_ms.is_some_and(|t| t <= now_ms()) {
            return Err(AdminError::Invalid(
                "that key would have expired already: give a time to come".into(),
            ));
        }
        // The end of the year 9999: a time any clock and date format can say.
        if new.expires_ms.is_some_and(|t| t > 253_402_300_799_999) {
            return Err(AdminError::Invalid(
                "an expiry is a time before the year 10000 (in ms since 1970): leave it out \
                 for a key that never expires"
                    .into(),
            ));
        }
        // -0 is 0.
        let budget = new.budget.map(|b| Budget {
            usd: b.usd.abs(),
            ..b
        });
        let (key, digest, hint) = secret()?;
        let record = KeyRecord {
            id: format!("key_{}", random_hex(8)?),
            name: new.name,
            digest,
            hint,
            team: new.team,
            limits: new.limits,
            budget,
            models,
            expires_ms: new.expires_ms,
            created_ms: now_ms(),
            revoked_ms: None,
        };
        self.fleet.save_key(record.clone()).await?;
        Ok((view(record), key))
    }

    /// Every key, revoked ones too, oldest first.
    pub async fn keys(&self) -> Result<Vec<KeyView>, AdminError> {
        Ok(self.fleet.keys().await?.into_iter().map(view).collect())
    }

    async fn record(&self, name_or_id: &str) -> Result<KeyRecord, AdminError> {
        let keys = self.fleet.keys().await?;
        // An id first: a name can never look like one.
        let by_id = keys.iter().position(|k| k.id == name_or_id);
        let at = by_id.or_else(|| keys.iter().position(|k| k.name == name_or_id));
        at.map(|i| keys[i].clone())
            .ok_or_else(|| AdminError::NotFound(format!("key {name_or_id:?}")))
    }

    /// The key of this name or id.
    pub async fn key(&self, name_or_id: &str) -> Result<KeyView, AdminError> {
        Ok(view(self.record(name_or_id).await?))
    }

    /// Revokes the key of this name or id: every replica refuses it within a second or so.
    pub async fn revoke(&self, name_or_id: &str) -> Result<KeyView, AdminError> {
        let mut k = self.record(name_or_id).await?;
        if k.revoked_ms.is_none() {
            k.revoked_ms = Some(now_ms());
            self.fleet.save_key(k.clone()).await?;
        }
        Ok(view(k))
    }

    /// Gives the key of this name or id a new secret (shown this once); the old one stops
    /// working. Its id, limits, budget and what it spent stay.
    pub async fn rotate(&self, name_or_id: &str) -> Result<(KeyView, String), AdminError> {
        let mut k = self.record(name_or_id).await?;
        if k.revoked_ms.is_some() {
            return Err(AdminError::Invalid(format!(
                "key {:?} is revoked: make a new one",
                k.name
            )));
        }
        let (key, digest, hint) = secret()?;
        (k.digest, k.hint) = (digest, hint);
        self.fleet.save_key(k.clone()).await?;
        Ok((view(k), key))
    }

    /// Makes a team.
    pub async fn create_team(&self, new: NewTeam) -> Result<TeamRecord, AdminError> {
        check_name("team", &new.name)?;
        check_limits(&new.limits, &new.budget)?;
        let team = TeamRecord {
            name: new.name,
            limits: new.limits,
            budget: new.budget,
            created_ms: now_ms(),
        };
        self.fleet.save_team(team.clone(), true).await?;
        Ok(team)
    }

    /// Every team, oldest first.
    pub async fn teams(&self) -> Result<Vec<TeamRecord>, AdminError> {
        Ok(self.fleet.teams().await?)
    }

    /// The team `name`.
    pub async fn team(&self, name: &str) -> Result<TeamRecord, AdminError> {
        self.fleet
            .teams()
            .await?
            .into_iter()
            .find(|t| t.name == name)
            .ok_or_else(|| AdminError::NotFound(format!("team {name:?}")))
    }

    /// The ledger's sums for `query`, whose key may be named by its name or id.
    /// A key of kite.toml is named by its ledger id (`cfg_...`); an unknown key or team is
    /// said to be unknown.
    pub async fn usage(&self, mut query: UsageQuery) -> Result<Vec<UsageLine>, AdminError> {
        if let Some(k) = &query.key {
            match self.record(k).await {
                Ok(found) => query.key = Some(found.id),
                Err(_) if k.starts_with("cfg_") => {}
                Err(e) => return Err(e),
            }
        }
        if let Some(team) = &query.team {
            self.team(team).await?;
        }
        Ok(self.fleet.usage(query).await?)
    }

    /// What the key or team has spent in its budget's current period.
    pub async fn spent(&self, subject: &str, budget: &Budget) -> Result<f64, AdminError> {
        let period = budget.period.at(now_ms());
        Ok(self
            .fleet
            .spend(vec![period])
            .await?
            .into_iter()
            .find(|s| s.subject == subject)
            .map_or(0.0, |s| s.cost))
    }
}

/// `Period` from its name: `day`, `month` or `total`.
pub fn period(name: &str) -> Result<Period, String> {
    match name {
        "day" => Ok(Period::Day),
        "month" => Ok(Period::Month),
        "total" => Ok(Period::Total),
        other => Err(format!("a period is day, month or total, not {other:?}")),
    }
}
