//! `kite trust`: let kite read a project's kite.toml as it is now, or offer a project
//! folder's skills (`config/trust.rs` says why they must be trusted first).

use crate::config::trust::{Recorded, record};
use crate::terminal::output::{errln, outln};
use clap::Args;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Args)]
pub(crate) struct TrustArgs {
    /// The file (default: kite.toml in the working directory), or a project folder whose
    /// `.agents/skills` may then be offered.
    #[arg(default_value = "kite.toml")]
    path: PathBuf,
    /// Stop trusting it.
    #[arg(long)]
    forget: bool,
}

pub(crate) fn run(args: TrustArgs) -> Result<(), ExitCode> {
    match record(&args.path, args.forget) {
        Ok(Recorded::Forgotten(name)) => outln!("kite: {name} is no longer trusted"),
        Ok(Recorded::Folder(name)) => outln!(
            "kite: the skills in {name}/.agents/skills may be offered now, as they change \
             too, to any model but the small local one, which is offered only the skills \
             named for it (`kite trust --forget {name}` stops it)"
        ),
        Ok(Recorded::File(name)) => outln!("kite: {name} is trusted as it is now"),
        Err(e) => {
            errln!("kite: {e}");
            return Err(ExitCode::FAILURE);
        }
    }
    Ok(())
}
