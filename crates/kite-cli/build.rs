//! Names the commit `kite` is built from, for `kite --version`: `KITE_COMMIT` when the
//! builder gives it; else the commit `cargo package` wrote into `.cargo_vcs_info.json` (a
//! crate from crates.io, or `cargo install` of a packaged one); else the git checkout's
//! `HEAD`; else `unknown`.

use std::path::Path;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-env-changed=KITE_COMMIT");
    let dir = std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default();
    let commit = std::env::var("KITE_COMMIT")
        .ok()
        .filter(|c| !c.trim().is_empty())
        .or_else(|| packaged(Path::new(&dir)))
        .or_else(|| checked_out(Path::new(&dir)))
        .unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=KITE_COMMIT={}", commit.trim());
}

/// The commit in `.cargo_vcs_info.json`: `{"git": {"sha1": "…"}, …}`.
fn packaged(dir: &Path) -> Option<String> {
    let info = dir.join(".cargo_vcs_info.json");
    watch(&info);
    let text = std::fs::read_to_string(info).ok()?;
    let at = text.find("\"sha1\"")?;
    let rest = &text[at + 6..];
    let start = rest.find('"')? + 1;
    let sha: String = rest[start..]
        .chars()
        .take_while(char::is_ascii_hexdigit)
        .collect();
    (sha.len() >= 12).then(|| sha[..12].to_owned())
}

/// `git rev-parse HEAD` in the checkout, rerun when `HEAD` or the branch it names moves.
fn checked_out(dir: &Path) -> Option<String> {
    let git = |args: &[&str]| {
        let out = Command::new("git")
            .args(args)
            .current_dir(dir)
            .output()
            .ok()?;
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
    };
    let sha = git(&["rev-parse", "--short=12", "HEAD"])?;
    // HEAD is the worktree's own; the branches are the repository's.
    if let Some(head) = git(&["rev-parse", "--path-format=absolute", "--git-path", "HEAD"]) {
        watch(Path::new(&head));
    }
    if let Some(common) = git(&["rev-parse", "--path-format=absolute", "--git-common-dir"]) {
        let common = Path::new(&common);
        watch(&common.join("packed-refs"));
        if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]) {
            watch(&common.join(branch));
        }
    }
    Some(sha)
}

/// Reruns the script when `path` changes; a file that is not there is not watched, since
/// cargo would rerun the script at every build for it.
fn watch(path: &Path) {
    if path.exists() {
        println!("cargo:rerun-if-changed={}", path.display());
    }
}
