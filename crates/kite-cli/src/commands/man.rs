//! `kite man [DIR]`: kite's man pages, one a command (`kite.1`, `kite-ask.1`,
//! `kite-mcp-list.1`, …), made with clap_mangen from the same clap tree as `--help`, so that
//! they say what `--help` says.

use crate::terminal::output::{errln, outln};
use clap::Args;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(Args)]
pub(crate) struct ManArgs {
    /// The folder to write them into, made if missing (e.g. ~/.local/share/man/man1).
    #[arg(default_value = ".", value_name = "DIR")]
    dir: PathBuf,
}

pub(crate) fn run(args: ManArgs, cli: clap::Command) -> Result<(), ExitCode> {
    match write_all(&args.dir, cli) {
        Ok(n) => {
            outln!("kite: wrote {n} man pages in {}", args.dir.display());
            Ok(())
        }
        Err(e) => {
            errln!(
                "kite: cannot write man pages in {}: {e}",
                args.dir.display()
            );
            Err(ExitCode::FAILURE)
        }
    }
}

/// Writes the pages of `cli` and of each command under it; how many were written.
fn write_all(dir: &Path, mut cli: clap::Command) -> std::io::Result<usize> {
    std::fs::create_dir_all(dir)?;
    // Built, each command knows its full name (`kite-mcp-list`), which names its page.
    cli.build();
    let mut written = 0;
    let mut pending = vec![cli];
    while let Some(command) = pending.pop() {
        let name = command
            .get_display_name()
            .unwrap_or(command.get_name())
            .to_owned();
        let mut page = Vec::new();
        clap_mangen::Man::new(command.clone()).render(&mut page)?;
        replace(dir, &format!("{name}.1"), &page)?;
        written += 1;
        pending.extend(
            command
                .get_subcommands()
                .filter(|c| c.get_name() != "help" && !c.is_hide_set())
                .cloned(),
        );
    }
    Ok(written)
}

/// Writes `page` as `dir/name` through a new file beside it, renamed into place: whatever is
/// there already (a link, a FIFO) is replaced, never followed or opened, and a reader never
/// sees half a page.
fn replace(dir: &Path, name: &str, page: &[u8]) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let mut file = tempfile::Builder::new()
        .prefix(".kite-man-")
        .permissions(std::fs::Permissions::from_mode(0o644))
        .tempfile_in(dir)?;
    file.write_all(page)?;
    file.persist(dir.join(name)).map_err(|e| e.error)?;
    Ok(())
}
