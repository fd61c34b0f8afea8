//! `kite prices`: the price table kite uses for costs, and its update from PyPI.

use crate::output::{errln, outln};
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
        /// The provider (openai, anthropic, mistral, openrouter, groq, ...).
        provider: String,
        /// The model's name.
        model: String,
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

/// Prices an agent's calls with [`table`].
pub(crate) fn pricer() -> kite::agent::Pricer {
    let table = table();
    std::sync::Arc::new(move |provider, model, usage| {
        kite::prices::call_cost(table, provider, model, usage)
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
        PricesCommand::Show { provider, model } => {
            let table: &PriceTable = kite::prices::load(&dir).map_err(fail)?;
            // Priced on a thousand tokens (below any tier), then scaled; the input and
            // output parts alone, without any per-request fee.
            let usage = kite::Usage {
                input_tokens: 1000,
                output_tokens: 1000,
                ..kite::Usage::default()
            };
            let cost = table.cost(
                kite::prices::provider_id(&provider),
                &model,
                &usage,
                std::time::SystemTime::now(),
            );
            match cost.map(|c| (c.input * 1000.0, c.output * 1000.0)) {
                Some((i, o)) => {
                    outln!(
                        "{provider} {model}: ${i:.4} per million tokens in, ${o:.4} out ({})",
                        table.source
                    );
                    Ok(())
                }
                _ => Err(fail(format!(
                    "{} has no price for {provider} {model}",
                    table.source
                ))),
            }
        }
    }
}
