//! What bounds a command's resources beyond its time: a cgroup of its own where kite may
//! make one (as root, or where the hierarchy is delegated), capping its processes and their
//! memory together; where no memory cgroup can be had, an address-space rlimit on each
//! process instead. Every command also gets a file-size rlimit (no file past the
//! workspace's quota) and no core dumps.
//!
//! The cgroup is made below kite's own (so the command stays inside whatever bounds kite),
//! in cgroup v1's `pids` and `memory` hierarchies or in the v2 one.

use std::fs::File;
use std::os::fd::{AsRawFd, RawFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// The bounds of one command: the cgroup (removed when dropped) and what the child sets
/// on itself between fork and exec.
pub(super) struct Limits {
    groups: Vec<Group>,
    /// The address-space rlimit, when no memory cgroup could be made.
    address_space: Option<u64>,
    /// The file-size rlimit.
    file_size: Option<u64>,
}

/// One cgroup made for the command, in one hierarchy.
struct Group {
    dir: PathBuf,
    procs: File,
    /// Whether its memory is capped here (its OOM kills are then counted).
    memory: bool,
}

static NEXT: AtomicU64 = AtomicU64::new(0);

impl Limits {
    /// Bounds for a command: at most `processes` processes and `memory` bytes between
    /// them, and no file larger than `file_size` bytes.
    pub(super) fn new(processes: Option<u32>, memory: Option<u64>, file_size: Option<u64>) -> Self {
        let mut groups = Vec::new();
        let mut memory_capped = memory.is_none();
        match hierarchy() {
            Hierarchy::V1 => {
                if let Some(max) = processes {
                    groups.extend(Group::make("pids", &[("pids.max", max.to_string())], false));
                }
                if let Some(max) = memory {
                    let settings = [
                        ("memory.limit_in_bytes", max.to_string()),
                        // No swap beyond the memory: optional, as swap accounting may be off.
                        ("?memory.memsw.limit_in_bytes", max.to_string()),
                    ];
                    let made = Group::make("memory", &settings, true);
                    memory_capped = made.is_some();
                    groups.extend(made);
                }
            }
            Hierarchy::V2 => {
                let mut settings = Vec::new();
                if let Some(max) = processes {
                    settings.push(("pids.max", max.to_string()));
                }
                if let Some(max) = memory {
                    settings.push(("memory.max", max.to_string()));
                    settings.push(("?memory.swap.max", "0".to_owned()));
                }
                if !settings.is_empty() {
                    let made = Group::make("", &settings, memory.is_some());
                    memory_capped |= made.is_some();
                    groups.extend(made);
                }
            }
            Hierarchy::None => {}
        }
        Self {
            groups,
            address_space: if memory_capped { None } else { memory },
            file_size,
        }
    }

    /// What the child needs to apply the bounds to itself, with no allocation.
    pub(super) fn for_child(&self) -> ChildLimits {
        let mut procs = [-1; 2];
        for (slot, g) in procs.iter_mut().zip(&self.groups) {
            *slot = g.procs.as_raw_fd();
        }
        ChildLimits {
            procs,
            address_space: self.address_space,
            file_size: self.file_size,
        }
    }

    /// Whether the kernel killed one of the command's processes for using more memory than
    /// its cgroup allows.
    pub(super) fn out_of_memory(&self) -> bool {
        self.groups.iter().filter(|g| g.memory).any(|g| {
            ["memory.events", "memory.oom_control"].iter().any(|file| {
                std::fs::read_to_string(g.dir.join(file)).is_ok_and(|text| {
                    text.lines()
                        .filter_map(|l| l.strip_prefix("oom_kill "))
                        .any(|n| n.trim().parse::<u64>().is_ok_and(|n| n > 0))
                })
            })
        })
    }
}

/// The bounds as the child applies them: plain values, copied into the `pre_exec` closure.
#[derive(Clone, Copy)]
pub(super) struct ChildLimits {
    procs: [RawFd; 2],
    address_space: Option<u64>,
    file_size: Option<u64>,
}

impl ChildLimits {
    /// Moves the calling process into the cgroups and sets its rlimits. Called in the child
    /// between fork and exec, so that nothing it starts is outside; it only calls `write(2)`
    /// and `setrlimit(2)`, which are async-signal-safe. A cgroup that cannot be joined
    /// leaves the command without that cap (the time limit still holds); an rlimit that
    /// cannot be set fails the start.
    pub(super) fn apply(&self) -> std::io::Result<()> {
        for fd in self.procs.into_iter().filter(|fd| *fd >= 0) {
            // SAFETY: writes one byte from a static buffer to a descriptor the parent keeps
            // open.
            unsafe {
                libc::write(fd, b"0".as_ptr().cast(), 1);
            }
        }
        set_rlimit(libc::RLIMIT_CORE, 0)?;
        if let Some(max) = self.address_space {
            set_rlimit(libc::RLIMIT_AS, max)?;
        }
        if let Some(max) = self.file_size {
            set_rlimit(libc::RLIMIT_FSIZE, max)?;
        }
        Ok(())
    }
}

fn set_rlimit(resource: libc::__rlimit_resource_t, max: u64) -> std::io::Result<()> {
    let limit = libc::rlimit {
        rlim_cur: max,
        rlim_max: max,
    };
    // SAFETY: setrlimit(2) reads the struct it is given and touches nothing else.
    match unsafe { libc::setrlimit(resource, &limit) } {
        0 => Ok(()),
        _ => Err(std::io::Error::last_os_error()),
    }
}

impl Group {
    /// A new cgroup in `controller`'s hierarchy (`""`: the v2 one), below kite's own, with
    /// `settings` written (a name starting with `?` may fail); `None` where none can be
    /// made or a required setting is refused.
    fn make(controller: &str, settings: &[(&str, String)], memory: bool) -> Option<Self> {
        let parent = parent_for(controller)?;
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let dir = parent.join(format!("kite-sandbox-{}-{n}", std::process::id()));
        std::fs::create_dir(&dir).ok()?;
        let mut made = Ok(());
        for (name, value) in settings {
            let (optional, name) = match name.strip_prefix('?') {
                Some(name) => (true, name),
                None => (false, *name),
            };
            if let Err(e) = std::fs::write(dir.join(name), value)
                && !optional
            {
                made = Err(e);
                break;
            }
        }
        let made = made.and_then(|()| File::options().write(true).open(dir.join("cgroup.procs")));
        match made {
            Ok(procs) => Some(Self { dir, procs, memory }),
            Err(_) => {
                let _ = std::fs::remove_dir(&dir);
                None
            }
        }
    }
}

impl Drop for Group {
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

enum Hierarchy {
    V1,
    V2,
    None,
}

const ROOT: &str = "/sys/fs/cgroup";

fn hierarchy() -> Hierarchy {
    let root = Path::new(ROOT);
    if root.join("cgroup.subtree_control").exists() {
        Hierarchy::V2
    } else if root.join("pids").exists() || root.join("memory").exists() {
        Hierarchy::V1
    } else {
        Hierarchy::None
    }
}

/// Where kite may make a cgroup in `controller`'s hierarchy: below its own cgroup, else at
/// the hierarchy's root; in v2, only where the controllers are enabled for children.
fn parent_for(controller: &str) -> Option<PathBuf> {
    let own = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let own = own.lines().find_map(|line| {
        let mut parts = line.splitn(3, ':');
        let (_, names, path) = (parts.next()?, parts.next()?, parts.next()?);
        let matches = match controller {
            "" => names.is_empty(),
            c => names.split(',').any(|n| n == c),
        };
        matches.then(|| path.trim_start_matches('/').to_owned())
    });
    let base = Path::new(ROOT).join(controller);
    let candidates = own
        .filter(|p| !p.is_empty() && !p.contains(".."))
        .map(|p| base.join(p))
        .into_iter()
        .chain(std::iter::once(base.clone()));
    candidates
        .filter(|dir| dir.join("cgroup.procs").exists())
        .filter(|dir| {
            !controller.is_empty()
                || std::fs::read_to_string(dir.join("cgroup.subtree_control"))
                    .is_ok_and(|c| c.split_whitespace().any(|c| c == "pids" || c == "memory"))
        })
        .find(|dir| writable(dir))
}

fn writable(dir: &Path) -> bool {
    let Ok(c) = std::ffi::CString::new(dir.as_os_str().as_encoded_bytes()) else {
        return false;
    };
    // SAFETY: access(2) on a NUL-terminated path.
    unsafe { libc::access(c.as_ptr(), libc::W_OK) == 0 }
}
