//! What of kite's environment a program it starts may see when nothing says more: the
//! variables programs need to run at all, and the locale. Provider keys and tokens are
//! never among them, so a child that was not given a key cannot read one.

/// The variables a child inherits when kite has them, besides `LC_*`.
#[cfg(not(windows))]
pub const INHERITED: &[&str] = &[
    "HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "LANG", "LANGUAGE", "TZ", "TMPDIR", "TMP",
    "TEMP",
];

/// The variables a child inherits when kite has them (Windows' own, which programs need to
/// start at all).
#[cfg(windows)]
pub const INHERITED: &[&str] = &[
    "APPDATA",
    "HOMEDRIVE",
    "HOMEPATH",
    "LOCALAPPDATA",
    "PATH",
    "PATHEXT",
    "PROCESSOR_ARCHITECTURE",
    "PROGRAMFILES",
    "SYSTEMDRIVE",
    "SYSTEMROOT",
    "TEMP",
    "TMP",
    "USERNAME",
    "USERPROFILE",
    "COMSPEC",
    "WINDIR",
];

/// What pip needs beyond [`INHERITED`] to reach its index as the user set it up: its own
/// settings (`PIP_*`), the Python it runs on (`PYTHON*`, `PYENV_*`, `VIRTUAL_ENV`), proxies
/// and certificate bundles. Names ending in `*` are prefixes.
pub const PIP: &[&str] = &[
    "PIP_*",
    "PYTHON*",
    "PYENV_*",
    "VIRTUAL_ENV",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "ALL_PROXY",
    "NO_PROXY",
    "http_proxy",
    "https_proxy",
    "all_proxy",
    "no_proxy",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "REQUESTS_CA_BUNDLE",
    "CURL_CA_BUNDLE",
];

/// Whether `name` is [`INHERITED`], `LC_*`, or one of `more` (`*` ending a prefix).
pub fn allowed(name: &str, more: &[&str]) -> bool {
    INHERITED.contains(&name)
        || name.starts_with("LC_")
        || more.iter().any(|m| match m.strip_suffix('*') {
            Some(prefix) => name.starts_with(prefix),
            None => name == *m,
        })
}

/// kite's variables a child may see: [`allowed`] with `more`.
pub fn inherited(more: &[&str]) -> Vec<(std::ffi::OsString, std::ffi::OsString)> {
    std::env::vars_os()
        .filter(|(k, _)| k.to_str().is_some_and(|k| allowed(k, more)))
        .collect()
}

/// What a program that failed said last: its stderr's last few lines, else its stdout's,
/// joined on one line; or that it said nothing.
pub fn last_lines(stderr: &[u8], stdout: &[u8]) -> String {
    const LINES: usize = 5;
    for said in [stderr, stdout] {
        let text = String::from_utf8_lossy(said);
        let lines: Vec<&str> = text
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .collect();
        if !lines.is_empty() {
            return lines[lines.len().saturating_sub(LINES)..].join(" / ");
        }
    }
    "it said nothing".to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_never_inherited_and_pip_gets_what_it_needs() {
        for key in [
            "OPENAI_API_KEY",
            "ANTHROPIC_API_KEY",
            "KITE_API_KEY",
            "AWS_SECRET",
        ] {
            assert!(!allowed(key, PIP), "{key}");
        }
        for name in [
            "PATH",
            "LC_ALL",
            "PIP_INDEX_URL",
            "HTTPS_PROXY",
            "PYENV_ROOT",
        ] {
            assert!(allowed(name, PIP), "{name}");
        }
        assert!(!allowed("PIP_INDEX_URL", &[]));
    }
}
