//! The `[skills]` table: where skills are found and what their scripts may do.

use serde::Deserialize;
use std::time::Duration;

/// The `[skills]` table. Skills are also found in `.agents/skills/` in the working
/// directory and its parents, and in `kite/skills` in the XDG config folder.
///
/// ```toml
/// [skills]
/// paths = ["/opt/team-skills", "vendor/skills"]   # relative to kite.toml's folder
/// network = false                                  # let scripts reach the internet
/// allow_networks = ["10.20.0.0/16"]                # and these private networks
/// timeout_secs = 60                                # how long a script may run
/// max_memory_mb = 1024                             # memory a command may use
/// max_cpus = 1.0                                   # CPUs a command may use at once
/// max_tmp_mb = 64                                  # the size of its /tmp
/// max_workspace_mb = 256                           # the workspace's quota
/// ```
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, try_from = "RawSkills")]
pub(crate) struct SkillsConfig {
    pub paths: Vec<std::path::PathBuf>,
    pub network: bool,
    pub allow_networks: Vec<kite::skills::sandbox::Cidr>,
    pub timeout: Option<Duration>,
    /// Bytes, from the `_mb` keys.
    pub max_memory: Option<u64>,
    pub max_cpus: Option<f64>,
    pub max_tmp: Option<u64>,
    pub max_workspace: Option<u64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSkills {
    #[serde(default)]
    paths: Vec<std::path::PathBuf>,
    #[serde(default)]
    network: bool,
    #[serde(default)]
    allow_networks: Vec<String>,
    timeout_secs: Option<f64>,
    max_memory_mb: Option<u64>,
    max_cpus: Option<f64>,
    max_tmp_mb: Option<u64>,
    max_workspace_mb: Option<u64>,
}

/// Megabytes (MiB) from `[skills] key` as bytes: at least 1, at most a mebibyte short of
/// 16 EiB.
fn mebibytes(key: &str, mb: Option<u64>) -> Result<Option<u64>, String> {
    match mb {
        None => Ok(None),
        Some(0) => Err(format!("[skills] `{key}` must be at least 1")),
        Some(mb) => mb
            .checked_mul(1 << 20)
            .map(Some)
            .ok_or_else(|| format!("[skills] `{key}` is too large")),
    }
}

impl TryFrom<RawSkills> for SkillsConfig {
    type Error = String;

    fn try_from(raw: RawSkills) -> Result<Self, String> {
        let timeout = raw
            .timeout_secs
            .map(|s| kite::duration_from_secs("`timeout_secs`", s))
            .transpose()?;
        let allow_networks = raw
            .allow_networks
            .iter()
            .map(|n| {
                n.parse()
                    .map_err(|e| format!("[skills] `allow_networks`: {e}"))
            })
            .collect::<Result<_, String>>()?;
        Ok(Self {
            paths: raw.paths,
            network: raw.network,
            allow_networks,
            timeout,
            max_memory: mebibytes("max_memory_mb", raw.max_memory_mb)?,
            max_cpus: match raw.max_cpus {
                Some(n) if !(0.01..=1024.0).contains(&n) => {
                    return Err("[skills] `max_cpus` must be from 0.01 to 1024".into());
                }
                n => n,
            },
            max_tmp: mebibytes("max_tmp_mb", raw.max_tmp_mb)?,
            max_workspace: mebibytes("max_workspace_mb", raw.max_workspace_mb)?,
        })
    }
}
