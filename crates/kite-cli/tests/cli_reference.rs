//! The book's command-line reference (`docs/src/reference/cli.md`) is made from clap: every
//! command's `--help`, as the built `kite` prints it. The test fails when the page and the
//! binary disagree; `KITE_BLESS=1 cargo test -p kite-llm-cli --test cli_reference` writes
//! the page again. The man pages come from the same tree (`kite man`), and are checked here
//! to name every command.

use std::path::Path;
use std::process::Command;

const PAGE: &str = "../../docs/src/reference/cli.md";

/// `kite ARGS --help` with nothing from the environment that would show in it.
fn help(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_kite"))
        .args(args)
        .arg("--help")
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", "/nonexistent/kite-tests")
        .output()
        .unwrap();
    assert!(out.status.success(), "kite {args:?} --help failed");
    String::from_utf8(out.stdout).unwrap()
}

/// The commands a help text lists under `Commands:`, less `help`.
fn commands(help: &str) -> Vec<String> {
    help.lines()
        .skip_while(|l| *l != "Commands:")
        .skip(1)
        .take_while(|l| !l.is_empty())
        // A command's line is indented by two; a description's wrapped lines by more.
        .filter(|l| l.starts_with("  ") && !l.starts_with("   "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .map(str::to_owned)
        .collect()
}

/// Every command, depth first as `--help` lists them: (its words, its help).
fn all() -> Vec<(Vec<String>, String)> {
    let mut found = Vec::new();
    let mut pending: Vec<Vec<String>> = vec![Vec::new()];
    while let Some(words) = pending.pop() {
        let args: Vec<&str> = words.iter().map(String::as_str).collect();
        let text = help(&args);
        let subs = commands(&text);
        found.push((words.clone(), text));
        for sub in subs.into_iter().rev() {
            let mut next = words.clone();
            next.push(sub);
            pending.push(next);
        }
    }
    found
}

fn page() -> String {
    let mut page = String::from(
        "# Command-line reference\n\n\
         <!-- generated from clap by `cargo test -p kite-llm-cli --test cli_reference`; do not \
         edit -->\n\n\
         Every command of `kite`, as `kite COMMAND --help` prints it. `kite man DIR` writes the \
         same as man pages (`kite.1`, `kite-ask.1`, …).\n",
    );
    for (words, text) in all() {
        let name = std::iter::once("kite".to_owned())
            .chain(words)
            .collect::<Vec<_>>()
            .join(" ");
        page.push_str(&format!(
            "\n## `{name}`\n\n```text\n{}\n```\n",
            text.trim_end()
        ));
    }
    page
}

#[test]
fn the_reference_page_is_what_the_binary_says() {
    let made = page();
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(PAGE);
    if std::env::var_os("KITE_BLESS").is_some() {
        std::fs::write(&path, &made).unwrap();
        return;
    }
    let kept = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        kept == made,
        "{} is not what `kite --help` says: run KITE_BLESS=1 cargo test -p kite-llm-cli --test \
         cli_reference and commit the page",
        path.display()
    );
}

#[test]
fn every_command_has_a_man_page() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_kite"))
        .arg("man")
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let commands = all();
    for (words, text) in &commands {
        let name = std::iter::once("kite".to_owned())
            .chain(words.iter().cloned())
            .collect::<Vec<_>>()
            .join("-");
        let page = std::fs::read_to_string(dir.path().join(format!("{name}.1")))
            .unwrap_or_else(|e| panic!("{name}.1: {e}"));
        // roff: the title line names the page, and each long option of the help is there.
        assert!(page.contains(&format!(".TH {name} 1")), "{name}.1: {page}");
        for option in text
            .split_whitespace()
            .filter(|w| w.starts_with("--") && w.len() > 2)
            .map(|w| w.trim_end_matches([',', '.', ')', '`']))
            .filter(|w| {
                w.chars()
                    .skip(2)
                    .all(|c| c.is_ascii_alphanumeric() || c == '-')
            })
        {
            let roff = option.replace('-', "\\-");
            assert!(
                page.contains(&roff) || page.contains(option),
                "{name}.1 lacks {option}"
            );
        }
    }
    let written = std::fs::read_dir(dir.path()).unwrap().count();
    assert_eq!(written, commands.len(), "one page a command");
}

/// Pages replace what stands in their place: a link is not followed (its target outside the
/// folder keeps its bytes), and a FIFO is not opened (which would wait for a reader).
#[test]
fn man_pages_replace_links_and_fifos_without_following_them() {
    let dir = tempfile::tempdir().unwrap();
    let outside = dir.path().join("outside.txt");
    std::fs::write(&outside, "keep me").unwrap();
    let pages = dir.path().join("pages");
    std::fs::create_dir(&pages).unwrap();
    std::os::unix::fs::symlink(&outside, pages.join("kite.1")).unwrap();
    let fifo = std::ffi::CString::new(pages.join("kite-ask.1").to_str().unwrap()).unwrap();
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o644) }, 0);

    let mut child = Command::new(env!("CARGO_BIN_EXE_kite"))
        .arg("man")
        .arg(&pages)
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if std::time::Instant::now() > deadline {
            child.kill().ok();
            panic!("kite man waited on the FIFO");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    assert!(status.success());
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), "keep me");
    for name in ["kite.1", "kite-ask.1"] {
        let meta = std::fs::symlink_metadata(pages.join(name)).unwrap();
        assert!(meta.file_type().is_file(), "{name}: {meta:?}");
    }
    let page = std::fs::read_to_string(pages.join("kite.1")).unwrap();
    assert!(page.contains(".TH kite 1"), "{page}");
}
