//! `kite keys` and `kite teams`: the gateway's client keys and teams (`kite usage`, what
//! the ledger says they spent, is in `usage.rs`), managed in the store every replica of `kite serve`
//! reads (`KITE_STORE_URL` or `[store] url`), with no restart. The same operations as
//! `/v1/admin/...` (kite-serve's `Admin`). A new key is printed once, alone on stdout.

use crate::terminal::output::{errln, outln};
use clap::{Args, Subcommand};
use kite::serve::{Admin, AdminError, KeyView, NewKey, NewTeam};
use kite::store::fleet::{Budget, FleetLimits};
use std::path::Path;
use std::process::ExitCode;

#[derive(Subcommand)]
pub(crate) enum KeysCommand {
    /// Make a key for `kite serve`'s clients; it is printed once, and only its digest kept.
    Create {
        /// Its name (letters, digits, - _ . @).
        name: String,
        #[command(flatten)]
        limits: LimitArgs,
        /// The team it spends for (made with `kite teams create`).
        #[arg(long)]
        team: Option<String>,
        /// The models (route names) it may ask for, comma-separated (default: any).
        #[arg(long, value_delimiter = ',')]
        models: Vec<String>,
        /// When it stops working: a date (2026-12-31), a time (RFC 3339), or a span from
        /// now (30d, 12h).
        #[arg(long, value_name = "WHEN")]
        expires: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// List every key (revoked ones too).
    List {
        #[arg(long)]
        json: bool,
    },
    /// Show one key (by name or id), and what it has spent of its budget.
    Show {
        key: String,
        #[arg(long)]
        json: bool,
    },
    /// Revoke a key: every replica refuses it within a second or so.
    Revoke { key: String },
    /// Give a key a new secret (printed once); the old one stops working.
    Rotate {
        key: String,
        #[arg(long)]
        json: bool,
    },
}

#[derive(Subcommand)]
pub(crate) enum TeamsCommand {
    /// Make a team: keys that share limits and a budget.
    Create {
        name: String,
        #[command(flatten)]
        limits: LimitArgs,
    },
    /// List every team.
    List {
        #[arg(long)]
        json: bool,
    },
    /// Show a team, its keys, and what it has spent of its budget.
    Show {
        name: String,
        #[arg(long)]
        json: bool,
    },
}

/// Limits and a budget.
#[derive(Args)]
pub(crate) struct LimitArgs {
    /// Requests per minute.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    rpm: Option<u32>,
    /// Tokens (in and out) per minute.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    tpm: Option<u64>,
    /// Requests under way at once.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    max_parallel: Option<u32>,
    /// The largest request body, in MiB (the gateway's `max_body_mb` otherwise).
    #[arg(long, value_name = "MIB", value_parser = clap::value_parser!(u64).range(1..=16))]
    max_body_mb: Option<u64>,
    /// What its stored responses may hold together, in MiB.
    #[arg(long, value_name = "MIB", value_parser = clap::value_parser!(u64).range(1..=1_048_576))]
    max_stored_mb: Option<u64>,
    /// US dollars that may be spent per --period.
    #[arg(long, value_name = "USD")]
    budget: Option<f64>,
    /// Over what the budget is spent: day, month or total.
    #[arg(long, value_parser = kite::serve::period, default_value = "month", requires = "budget")]
    period: kite::store::fleet::Period,
}

impl LimitArgs {
    fn limits(&self) -> FleetLimits {
        FleetLimits {
            rpm: self.rpm,
            tpm: self.tpm,
            max_parallel: self.max_parallel,
            max_body: self.max_body_mb.map(|mb| mb << 20),
            max_stored: self.max_stored_mb.map(|mb| mb << 20),
        }
    }

    fn budget(&self) -> Option<Budget> {
        self.budget.map(|usd| Budget {
            usd,
            period: self.period,
        })
    }
}

pub(crate) fn fail(e: impl std::fmt::Display) -> ExitCode {
    errln!("kite: {e}");
    ExitCode::FAILURE
}

pub(crate) async fn admin(config: Option<&Path>) -> Result<Admin, ExitCode> {
    let loaded = crate::config::load(config).map_err(fail)?;
    let backend = crate::session::history::open_backend(&loaded.config.store)
        .await
        .map_err(fail)?;
    Ok(Admin::new(backend.fleet()))
}

pub(crate) fn failed(e: AdminError) -> ExitCode {
    fail(e)
}

/// A time given as a date, an RFC 3339 time, or a span from now (`ahead`: later; else
/// earlier), as Unix milliseconds.
pub(crate) fn when(given: &str, ahead: bool) -> Result<i64, String> {
    let now = chrono::Utc::now();
    if let Ok(t) = chrono::DateTime::parse_from_rfc3339(given) {
        return Ok(t.timestamp_millis());
    }
    if let Ok(d) = chrono::NaiveDate::parse_from_str(given, "%Y-%m-%d") {
        let midnight = d.and_hms_opt(0, 0, 0).unwrap_or_default().and_utc();
        return Ok(midnight.timestamp_millis());
    }
    let span = given
        .strip_suffix('d')
        .and_then(|n| n.parse::<i64>().ok())
        .map(chrono::Duration::days)
        .or_else(|| {
            let h = given.strip_suffix('h')?.parse::<i64>().ok()?;
            Some(chrono::Duration::hours(h))
        })
        .filter(|s| *s > chrono::Duration::zero() && *s < chrono::Duration::days(36_500))
        .ok_or_else(|| {
            format!("{given:?} is not a date (2026-12-31), a time (RFC 3339) nor a span (30d, 12h)")
        })?;
    Ok(match ahead {
        true => now + span,
        false => now - span,
    }
    .timestamp_millis())
}

fn date(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms).map_or_else(
        || ms.to_string(),
        |t| t.format("%Y-%m-%d %H:%M UTC").to_string(),
    )
}

fn limits_line(l: &FleetLimits, budget: &Option<Budget>) -> String {
    let mut parts = Vec::new();
    if let Some(n) = l.rpm {
        parts.push(format!("{n} requests/min"));
    }
    if let Some(n) = l.tpm {
        parts.push(format!("{n} tokens/min"));
    }
    if let Some(n) = l.max_parallel {
        parts.push(format!("{n} at once"));
    }
    if let Some(b) = budget {
        parts.push(format!(
            "{} {}",
            crate::terminal::text::dollars(b.usd),
            period_words(b.period)
        ));
    }
    match parts.is_empty() {
        true => "no limits".into(),
        false => parts.join(", "),
    }
}

fn period_words(p: kite::store::fleet::Period) -> &'static str {
    match p {
        kite::store::fleet::Period::Day => "a day",
        kite::store::fleet::Period::Month => "a month",
        kite::store::fleet::Period::Total => "in all",
    }
}

/// What was spent of `budget`, on one line.
fn spent_line(spent: f64, budget: &Budget) -> String {
    let when = match budget.period {
        kite::store::fleet::Period::Day => " today",
        kite::store::fleet::Period::Month => " this month",
        kite::store::fleet::Period::Total => "",
    };
    format!(
        "spent {} of {}{when}",
        crate::terminal::text::dollars(spent),
        crate::terminal::text::dollars(budget.usd)
    )
}

fn key_line(k: &KeyView) -> String {
    let team = k
        .team
        .as_deref()
        .map(|t| format!(" team {t}"))
        .unwrap_or_default();
    format!(
        "{}  {:<20} {:<8} {}{team}  ({})",
        k.id,
        k.name,
        k.state,
        k.hint,
        limits_line(&k.limits, &k.budget)
    )
}

/// A new key: its description on stderr, the key alone on stdout. A key that could not be
/// shown (stdout closed or full) is revoked, as nobody could use it.
async fn print_new(admin: &Admin, view: &KeyView, key: &str, json: bool) -> Result<(), ExitCode> {
    if json {
        let mut v = serde_json::json!(view);
        v["key"] = key.into();
        outln!("{v}");
    } else {
        errln!(
            "kite: key {:?} ({}); it is shown this once, keep it now:",
            view.name,
            view.id
        );
        outln!("{key}");
    }
    if crate::terminal::output::stdout_closed() {
        let what = match admin.revoke(&view.id).await {
            Ok(_) => "is revoked; make another".to_owned(),
            Err(e) => format!("could not be revoked ({e}): revoke it with `kite keys revoke`"),
        };
        return Err(fail(format!(
            "the key could not be written out, so key {:?} {what}",
            view.name
        )));
    }
    Ok(())
}

pub(crate) async fn keys(cmd: KeysCommand, config: Option<&Path>) -> Result<(), ExitCode> {
    let admin = admin(config).await?;
    match cmd {
        KeysCommand::Create {
            name,
            limits,
            team,
            models,
            expires,
            json,
        } => {
            let expires_ms = expires.map(|e| when(&e, true)).transpose().map_err(fail)?;
            let new = NewKey {
                name,
                team,
                limits: limits.limits(),
                budget: limits.budget(),
                models,
                expires_ms,
            };
            let (view, key) = admin.create_key(new).await.map_err(failed)?;
            print_new(&admin, &view, &key, json).await?;
        }
        KeysCommand::List { json } => {
            let all = admin.keys().await.map_err(failed)?;
            if all.is_empty() && !json {
                errln!("kite: no keys yet; make one with `kite keys create NAME`");
            }
            for k in &all {
                match json {
                    true => outln!("{}", serde_json::json!(k)),
                    false => outln!("{}", key_line(k)),
                }
            }
        }
        KeysCommand::Show { key, json } => {
            let k = admin.key(&key).await.map_err(failed)?;
            let spent = match &k.budget {
                Some(b) => Some(
                    admin
                        .spent(&format!("key:{}", k.id), b)
                        .await
                        .map_err(failed)?,
                ),
                None => None,
            };
            if json {
                let mut v = serde_json::json!(k);
                v["spent"] = spent.into();
                outln!("{v}");
                return Ok(());
            }
            outln!("{}", key_line(&k));
            outln!("made {}", date(k.created_ms));
            if let Some(t) = k.expires_ms {
                outln!("expires {}", date(t));
            }
            if let Some(t) = k.revoked_ms {
                outln!("revoked {}", date(t));
            }
            if !k.models.is_empty() {
                outln!("models {}", k.models.join(", "));
            }
            if let (Some(spent), Some(b)) = (spent, k.budget) {
                outln!("{}", spent_line(spent, &b));
            }
        }
        KeysCommand::Revoke { key } => {
            let k = admin.revoke(&key).await.map_err(failed)?;
            errln!("kite: key {:?} ({}) is revoked", k.name, k.id);
        }
        KeysCommand::Rotate { key, json } => {
            let (view, key) = admin.rotate(&key).await.map_err(failed)?;
            print_new(&admin, &view, &key, json).await?;
        }
    }
    Ok(())
}

pub(crate) async fn teams(cmd: TeamsCommand, config: Option<&Path>) -> Result<(), ExitCode> {
    let admin = admin(config).await?;
    match cmd {
        TeamsCommand::Create { name, limits } => {
            let new = NewTeam {
                name,
                limits: limits.limits(),
                budget: limits.budget(),
            };
            let team = admin.create_team(new).await.map_err(failed)?;
            errln!(
                "kite: team {:?} ({})",
                team.name,
                limits_line(&team.limits, &team.budget)
            );
        }
        TeamsCommand::List { json } => {
            for t in admin.teams().await.map_err(failed)? {
                match json {
                    true => outln!("{}", serde_json::json!(t)),
                    false => outln!("{:<20} {}", t.name, limits_line(&t.limits, &t.budget)),
                }
            }
        }
        TeamsCommand::Show { name, json } => {
            let team = admin.team(&name).await.map_err(failed)?;
            let keys: Vec<KeyView> = admin
                .keys()
                .await
                .map_err(failed)?
                .into_iter()
                .filter(|k| k.team.as_deref() == Some(&name))
                .collect();
            let spent = match &team.budget {
                Some(b) => Some(
                    admin
                        .spent(&format!("team:{name}"), b)
                        .await
                        .map_err(failed)?,
                ),
                None => None,
            };
            if json {
                let mut v = serde_json::json!(team);
                v["keys"] = serde_json::json!(keys);
                v["spent"] = spent.into();
                outln!("{v}");
                return Ok(());
            }
            outln!(
                "{:<20} {}",
                team.name,
                limits_line(&team.limits, &team.budget)
            );
            if let (Some(spent), Some(b)) = (spent, team.budget) {
                outln!("{}", spent_line(spent, &b));
            }
            for k in &keys {
                outln!("  {}", key_line(k));
            }
        }
    }
    Ok(())
}
