//! A cap on how many processes a command may have, through a `pids` cgroup of its own,
//! where kite may make one (as root, or where the hierarchy is delegated). Elsewhere the
//! time limit is what stops a fork bomb.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// A cgroup made for one command, removed when dropped.
pub(super) struct Cap {
    dir: PathBuf,
    procs: File,
}

static NEXT: AtomicU64 = AtomicU64::new(0);

impl Cap {
    /// A new cgroup holding at most `max` processes, or `None` where none can be made.
    pub(super) fn new(max: u32) -> Option<Self> {
        let root = pids_root()?;
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let dir = root.join(format!("kite-sandbox-{}-{n}", std::process::id()));
        std::fs::create_dir(&dir).ok()?;
        let made = std::fs::write(dir.join("pids.max"), max.to_string())
            .and_then(|()| File::options().write(true).open(dir.join("cgroup.procs")));
        match made {
            Ok(procs) => Some(Self { dir, procs }),
            Err(_) => {
                let _ = std::fs::remove_dir(&dir);
                None
            }
        }
    }

    /// The descriptor a child writes `0` to, to join the cgroup.
    pub(super) fn procs_fd(&self) -> std::os::fd::RawFd {
        use std::os::fd::AsRawFd;
        self.procs.as_raw_fd()
    }
}

/// Moves the calling process into the cgroup whose `cgroup.procs` is open as `fd`. Called
/// in the child between fork and exec, so that nothing it starts is outside; it only calls
/// `write(2)`, which is async-signal-safe. A failure leaves the command uncapped (the time
/// limit still holds).
pub(super) fn enter_from_child(fd: std::os::fd::RawFd) {
    // SAFETY: writes one byte from a static buffer to a descriptor the parent keeps open.
    unsafe {
        libc::write(fd, b"0".as_ptr().cast(), 1);
    }
}

impl Drop for Cap {
    fn drop(&mut self) {
        // Empty once the command's processes are gone (they were killed); a few tries give
        // the kernel time to reap them.
        for _ in 0..20 {
            if std::fs::remove_dir(&self.dir).is_ok() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
    }
}

/// The `pids` hierarchy's root when kite may make cgroups in it: cgroup v1's
/// `/sys/fs/cgroup/pids`, or a cgroup v2 root with the controller enabled below it.
fn pids_root() -> Option<PathBuf> {
    let v1 = Path::new("/sys/fs/cgroup/pids");
    if v1.join("cgroup.procs").exists() {
        return writable(v1);
    }
    let v2 = Path::new("/sys/fs/cgroup");
    let enabled = std::fs::read_to_string(v2.join("cgroup.subtree_control")).ok()?;
    match enabled.split_whitespace().any(|c| c == "pids") {
        true => writable(v2),
        false => None,
    }
}

fn writable(dir: &Path) -> Option<PathBuf> {
    let c = std::ffi::CString::new(dir.as_os_str().as_encoded_bytes()).ok()?;
    // SAFETY: access(2) on a NUL-terminated path.
    let ok = unsafe { libc::access(c.as_ptr(), libc::W_OK) } == 0;
    ok.then(|| dir.to_owned())
}
