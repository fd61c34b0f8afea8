//! `kite prices`: the price table kite uses for costs, and its update from PyPI.

use crate::terminal::output::{errln, outln};
use clap::Subcommand;
use kite::prices::PriceTable;
use std::process::ExitCode;

#[derive(Subcommand)]
pub(crate) enum PricesCommand {
    /// Fetch the newest genai-prices data from PyPI (with pip), check it and use it from
    /// now on (kept in kite's data folder).
    Update,
    /// Say where the prices in use come from and what a call of MODEL costs per million
    /// tokens in and out.
    Show {
        /// The provider (openai, anthropic, mistral, openrouter, groq, local, ...).
        provider: String,
        /// The model's name.
        model: String,
        /// One JSON object.
        #[arg(long)]
        json: bool,
    },
    /// List the models the table prices (of PROVIDER alone, when given), per million
    /// tokens in and out.
    List {
        /// The provider.
        provider: Option<String>,
        /// One JSON object per model.
        #[arg(long)]
        json: bool,
    },
}

/// The table in use: the one `kite prices update` stored, else the built-in one (said on
/// stderr when the stored one cannot be read).
fn table() -> &'static PriceTable {
    let loaded = match crate::config::data_dir() {
        Some(dir) => kite::prices::load(&dir),
        None => Ok(PriceTable::snapshot()),
    };
    loaded.unwrap_or_else(|e| {
        errln!("kite: {e}; using the built-in prices");
        PriceTable::snapshot()
    })
}

/// Prices an agent's calls: at what the provider reported, else at the operator's own
/// price for the model (`[prices."PROVIDER/MODEL"]`, then `[prices.MODEL]`), else at the
/// [`table`]'s.
pub(crate) fn pricer(
    own: &std::collections::BTreeMap<String, kite::prices::Rate>,
) -> kite::agent::Pricer {
    let table = table();
    let own = own.clone();
    std::sync::Arc::new(move |provider, model, usage| {
        if let Some(reported) = usage.cost {
            return Some(reported);
        }
        let set = own
            .get(&format!("{provider}/{model}"))
            .or_else(|| own.get(model));
        match set {
            Some(rate) => Some(rate.cost(usage)),
            None => kite::prices::call_cost(table, provider, model, usage),
        }
    })
}

pub(crate) fn run(cmd: PricesCommand) -> Result<(), ExitCode> {
    let fail = |e: String| {
        errln!("kite: {e}");
        ExitCode::FAILURE
    };
    let dir = crate::config::private_data_dir().map_err(|e| fail(e.to_string()))?;
    match cmd {
        PricesCommand::Update => {
            let (table, path) =
                kite::prices::update(&dir, |m| errln!("kite: {m}")).map_err(fail)?;
            outln!(
                "{}: {} models priced, saved to {}",
                table.source,
                table.models(),
                path.display()
            );
            Ok(())
        }
        PricesCommand::Show {
            provider,
            model,
            json,
        } => {
            let table: &PriceTable = kite::prices::load(&dir).map_err(fail)?;
            // The local model runs here: it costs nothing.
            let local = provider == "local" || provider == kite::trace::LOCAL_PROVIDER;
            // Priced on a thousand tokens (below any tier), then scaled; the input and
            // output parts alone, without any per-request fee.
            let usage = kite::Usage {
                input_tokens: 1000,
                output_tokens: 1000,
                ..kite::Usage::default()
            };
            let cost = match local {
                true => Some((0.0, 0.0)),
                false => table
                    .cost(
                        kite::prices::provider_id(&provider),
                        &model,
                        &usage,
                        std::time::SystemTime::now(),
                    )
                    .map(|c| (c.input * 1000.0, c.output * 1000.0)),
            };
            let source = match local {
                true => "the local model runs on this machine",
                false => table.source.as_str(),
            };
            let Some((i, o)) = cost else {
                return Err(fail(format!(
                    "{} has no price for {provider} {model} (`kite prices list {provider}` \
                     shows the models it prices)",
                    table.source
                )));
            };
            match json {
                false if local => outln!("{provider} {model} costs nothing: {source}"),
                true => outln!(
                    "{}",
                    serde_json::json!({"provider": provider, "model": model,
                        "input_per_million": i, "output_per_million": o, "source": source})
                ),
                false => outln!(
                    "{provider} {model}: ${i:.4} per million tokens in, ${o:.4} out ({source})"
                ),
            }
            Ok(())
        }
        PricesCommand::List { provider, json } => {
            if let Some(p) = provider
                .as_deref()
                .filter(|p| *p == "local" || *p == kite::trace::LOCAL_PROVIDER)
            {
                match json {
                    true => outln!(
                        "{}",
                        serde_json::json!({"provider": p, "model": "*",
                            "input_per_million": 0.0, "output_per_million": 0.0,
                            "source": "the local model runs on this machine"})
                    ),
                    false => outln!("{p} costs nothing: the local model runs on this machine"),
                }
                return Ok(());
            }
            let table: &PriceTable = kite::prices::load(&dir).map_err(fail)?;
            let now = std::time::SystemTime::now();
            let id = provider.as_deref().map(kite::prices::provider_id);
            let listed = table.list(id, now);
            if listed.is_empty() {
                let mut known: Vec<String> = table
                    .list(None, now)
                    .into_iter()
                    .map(|l| l.provider)
                    .collect();
                known.sort();
                known.dedup();
                return Err(fail(match provider {
                    Some(p) => format!(
                        "{} knows no provider called {p}; it prices {} (and local, which costs \
                         nothing)",
                        table.source,
                        known.join(", ")
                    ),
                    None => format!("{} prices no model", table.source),
                }));
            }
            for l in &listed {
                match (json, l.per_million) {
                    (true, p) => outln!(
                        "{}",
                        serde_json::json!({"provider": l.provider, "model": l.model,
                            "input_per_million": p.map(|p| p.0),
                            "output_per_million": p.map(|p| p.1)})
                    ),
                    (false, Some((i, o))) => {
                        outln!(
                            "{:<12} {:<48} ${i:>9.4} in  ${o:>9.4} out",
                            l.provider,
                            l.model
                        )
                    }
                    (false, None) => {
                        outln!("{:<12} {:<48} (no price holds now)", l.provider, l.model)
                    }
                }
            }
            if !json {
                errln!(
                    "kite: {} models, per million tokens ({})",
                    listed.len(),
                    table.source
                );
            }
            Ok(())
        }
    }
}
