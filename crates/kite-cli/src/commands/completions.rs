//! `kite completions SHELL`: a shell's completion script, made from the same clap tree as
//! `--help`.

use crate::terminal::output::out;
use clap::Args;
use std::process::ExitCode;

#[derive(Args)]
pub(crate) struct CompletionsArgs {
    /// The shell.
    #[arg(value_enum)]
    shell: clap_complete::Shell,
}

pub(crate) fn run(args: CompletionsArgs, mut cli: clap::Command) -> Result<(), ExitCode> {
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut cli, "kite", &mut script);
    out!("{}", String::from_utf8_lossy(&script));
    Ok(())
}
