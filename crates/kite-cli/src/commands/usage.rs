//! `kite usage`: what was used, from the spend ledger in the store: the requests of `kite
//! serve`'s clients (every replica writes there), and the turns of `kite ask` and `kite chat`
//! (their route is the command's name); requests, tokens and cost, by day, model, key or
//! route.

use crate::commands::keys::{admin, fail, failed, when};
use crate::terminal::output::{errln, outln};
use clap::Args;
use kite::store::fleet::{By, UsageLine, UsageQuery};
use std::path::Path;
use std::process::ExitCode;

/// `kite usage`.
#[derive(Args)]
pub(crate) struct UsageArgs {
    /// One key's (by name or id).
    #[arg(long)]
    key: Option<String>,
    /// One team's.
    #[arg(long)]
    team: Option<String>,
    /// From then on: a date (2026-11-01), a time (RFC 3339), or a span back from now (7d).
    #[arg(long, value_name = "WHEN")]
    since: Option<String>,
    /// Grouped by day, model, key or route.
    #[arg(long, value_parser = ["day", "model", "key", "route"])]
    by: Option<String>,
    /// One JSON object per line.
    #[arg(long)]
    json: bool,
}

pub(crate) async fn usage(args: UsageArgs, config: Option<&Path>) -> Result<(), ExitCode> {
    let admin = admin(config).await?;
    let since_ms = args
        .since
        .map(|s| when(&s, false))
        .transpose()
        .map_err(fail)?;
    let by = match args.by.as_deref() {
        Some("day") => Some(By::Day),
        Some("model") => Some(By::Model),
        Some("key") => Some(By::Key),
        Some("route") => Some(By::Route),
        _ => None,
    };
    let query = UsageQuery {
        key: args.key,
        team: args.team,
        since_ms,
        by,
    };
    let mut lines = admin.usage(query).await.map_err(failed)?;
    // Not grouped, there is always one total, nothing used being a total of nothing.
    if by.is_none() && lines.is_empty() {
        lines.push(UsageLine::default());
    }
    // Keys by their names, as everywhere else.
    if by == Some(By::Key) {
        let names: std::collections::HashMap<String, String> = admin
            .keys()
            .await
            .map_err(failed)?
            .into_iter()
            .map(|k| (k.id, k.name))
            .collect();
        for l in &mut lines {
            if let Some(name) = l.group.as_ref().and_then(|id| names.get(id)) {
                l.group = Some(name.clone());
            }
        }
    }
    if args.json {
        // One object a line, as every other `--json` listing.
        for l in &lines {
            outln!("{}", serde_json::json!(l));
        }
        return Ok(());
    }
    if lines.is_empty() || lines.iter().all(|l| l.requests == 0) {
        errln!("kite: the ledger has no requests for that");
    }
    for l in &lines {
        outln!("{}", usage_line(l, by.is_some()));
    }
    Ok(())
}

/// `text` with its control characters as escapes.
fn one_line(text: &str) -> String {
    text.chars()
        .map(|c| match c.is_control() {
            true => c.escape_unicode().to_string(),
            false => c.to_string(),
        })
        .collect()
}

fn usage_line(l: &UsageLine, grouped: bool) -> String {
    let group = match (grouped, &l.group) {
        (false, _) => String::new(),
        // A name a client chose, kept before the ledger cut such names to one line.
        (true, Some(g)) => format!("{:<24} ", one_line(g)),
        (true, None) => format!("{:<24} ", "(no key)"),
    };
    let mut line = format!(
        "{group}{} requests, {} in / {} out tokens, {}",
        l.requests,
        l.input_tokens,
        l.output_tokens,
        crate::terminal::text::dollars(l.cost)
    );
    if l.unpriced > 0 {
        line.push_str(&format!(" ({} unpriced)", l.unpriced));
    }
    if l.cached > 0 {
        line.push_str(&format!(", {} from the cache", l.cached));
    }
    line
}
