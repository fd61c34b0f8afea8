//! Where logins are kept: in memory for one process, in a folder of files only their
//! owner can read (0600 in a 0700 folder), one per server, replaced whole on each write.
//! The OS keyring's store is `os_keyring.rs`.

use super::{Saved, TokenStore};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Mutex;

/// The login kept for `server` as `text`: none, said, when it cannot be read.
pub(super) fn read(server: &str, text: &str) -> Option<Saved> {
    match serde_json::from_str(text) {
        Ok(saved) => Some(saved),
        Err(_) => {
            tracing::warn!(server, "its kept login is unreadable: log in again");
            None
        }
    }
}

/// Logins kept for this process only.
#[derive(Default)]
pub struct MemoryTokens(Mutex<HashMap<String, Saved>>);

impl TokenStore for MemoryTokens {
    fn place(&self) -> String {
        "this process's memory".into()
    }

    fn load(&self, server: &str) -> Option<Saved> {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(server)
            .cloned()
    }

    fn save(&self, server: &str, saved: &Saved) -> Result<(), String> {
        let mut all = self.0.lock().unwrap_or_else(|e| e.into_inner());
        all.insert(server.to_owned(), saved.clone());
        Ok(())
    }

    fn clear(&self, server: &str) -> Result<bool, String> {
        let mut all = self.0.lock().unwrap_or_else(|e| e.into_inner());
        Ok(all.remove(server).is_some())
    }
}

/// Logins kept in files under a folder: `NAME.json`, readable by their owner alone.
pub struct FileTokens {
    dir: PathBuf,
}

/// The largest login file read.
const MAX_FILE: u64 = 256 * 1024;

impl FileTokens {
    /// Logins in `dir` (made, 0700, on the first write).
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self { dir: dir.into() }
    }

    /// The file of `server`: its name where it is plain, else a digest of it.
    fn path(&self, server: &str) -> PathBuf {
        let plain = !server.is_empty()
            && server.len() <= 64
            && server
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
        let name = match plain {
            true => server.to_owned(),
            false => {
                use sha2::Digest;
                let digest = sha2::Sha256::digest(server.as_bytes());
                digest.iter().take(12).map(|b| format!("{b:02x}")).collect()
            }
        };
        self.dir.join(format!("{name}.json"))
    }
}

impl FileTokens {
    /// The folder, made if need be, and this user's own.
    fn make_folder(&self) -> Result<(), String> {
        use std::os::unix::fs::DirBuilderExt;
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&self.dir)
            .map_err(|e| format!("{}: {e}", self.dir.display()))?;
        self.own_folder()
    }

    /// The folder is this user's own and no one else's to read or write: a link, or a
    /// folder of another user's, is refused; one others may enter is closed to them.
    fn own_folder(&self) -> Result<(), String> {
        use std::os::unix::fs::{MetadataExt, PermissionsExt};
        let shown = self.dir.display();
        let meta = std::fs::symlink_metadata(&self.dir).map_err(|e| format!("{shown}: {e}"))?;
        if !meta.is_dir() {
            return Err(format!(
                "{shown} is not a folder: logins are not kept there"
            ));
        }
        // SAFETY: geteuid has no preconditions and cannot fail.
        let me = unsafe { libc::geteuid() };
        if meta.uid() != me {
            return Err(format!(
                "{shown} belongs to another user: logins are not kept there"
            ));
        }
        if meta.mode() & 0o077 != 0 {
            std::fs::set_permissions(&self.dir, std::fs::Permissions::from_mode(0o700))
                .map_err(|e| format!("{shown}: {e}"))?;
        }
        Ok(())
    }
}

impl TokenStore for FileTokens {
    fn writable(&self) -> Result<(), String> {
        self.make_folder()
    }

    fn place(&self) -> String {
        self.dir.display().to_string()
    }

    fn load(&self, server: &str) -> Option<Saved> {
        use std::io::Read;
        use std::os::unix::fs::OpenOptionsExt;
        // What another user could have put here is not read.
        if let Err(e) = self.own_folder() {
            if self.dir.exists() {
                tracing::warn!(server, "kept logins are not read: {e}");
            }
            return None;
        }
        let file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW)
            .open(self.path(server))
            .ok()?;
        let mut text = String::new();
        file.take(MAX_FILE).read_to_string(&mut text).ok()?;
        read(server, &text)
    }

    fn save(&self, server: &str, saved: &Saved) -> Result<(), String> {
        use std::io::Write;
        use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&self.dir)
            .map_err(|e| format!("{}: {e}", self.dir.display()))?;
        self.own_folder()?;
        let path = self.path(server);
        let temporary = path.with_extension(format!("json.{}", std::process::id()));
        let _ = std::fs::remove_file(&temporary);
        let text = serde_json::to_string_pretty(saved).map_err(|e| e.to_string())?;
        // A new file, never one another user put there or a link to elsewhere.
        let written = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .custom_flags(libc::O_NOFOLLOW)
            .mode(0o600)
            .open(&temporary)
            .and_then(|mut f| {
                f.write_all(text.as_bytes())?;
                f.sync_all()
            })
            .and_then(|()| std::fs::rename(&temporary, &path));
        written.map_err(|e| {
            let _ = std::fs::remove_file(&temporary);
            format!("{}: {e}", path.display())
        })
    }

    fn clear(&self, server: &str) -> Result<bool, String> {
        match std::fs::remove_file(self.path(server)) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(e.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn logins_are_kept_readable_by_their_owner_alone() {
        use std::os::unix::fs::PermissionsExt;
        let dir = std::env::temp_dir().join(format!("kite-logins-{}", std::process::id()));
        let store = FileTokens::new(&dir);
        let saved = Saved {
            server_url: "https://m.example/mcp".into(),
            access_token: Some("tok-123456".into()),
            ..Saved::default()
        };
        store.save("docs", &saved).unwrap();
        store.save("../../etc/passwd", &saved).unwrap();
        assert_eq!(store.load("docs"), Some(saved.clone()));
        let mode = |p: PathBuf| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(dir.join("docs.json")), 0o600);
        assert_eq!(mode(dir.clone()), 0o700);
        assert_eq!(
            std::fs::read_dir(&dir).unwrap().count(),
            2,
            "nothing outside its folder"
        );
        assert!(store.clear("docs").unwrap());
        assert!(!store.clear("docs").unwrap());
        assert_eq!(store.load("docs"), None);
        std::fs::write(dir.join("bad.json"), "{not json").unwrap();
        assert_eq!(store.load("bad"), None);
        // A folder others may enter is closed to them; a link instead of it is refused.
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
        store.save("docs", &saved).unwrap();
        assert_eq!(mode(dir.clone()), 0o700);
        let link = dir.with_extension("link");
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(&dir, &link).unwrap();
        assert!(FileTokens::new(&link).save("docs", &saved).is_err());
        let _ = std::fs::remove_file(&link);
        let _ = std::fs::remove_dir_all(&dir);
        assert!(!format!("{saved:?}").contains("tok-123456"));
    }
}
