//! What bounds a command's resources beyond its time: a cgroup of its own where kite may
//! make one (as root, or where the hierarchy is delegated), capping its processes, their
//! memory and their CPU together; where no such cgroup can be had, rlimits on each process
//! instead (address space, CPU time, and a process count per user: see `for_child`), and
//! `tally.rs` keeps the whole command within the same memory and CPU. Every command also
//! gets a file-size rlimit (no file past the workspace's quota) and no core dumps.
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
    memory: Option<u64>,
    processes: Option<u32>,
    /// The CPU the command may use: a cgroup's quota (CPUs), else this many seconds of CPU
    /// time in all.
    cpu: Option<Cpu>,
    /// The file-size rlimit.
    file_size: Option<u64>,
}

/// A command's CPU: how many CPUs at once, and its time limit, whose product is the CPU
/// time it may use in all where no cgroup caps it.
#[derive(Clone, Copy, Debug)]
pub(super) struct Cpu {
    pub(super) cpus: f64,
    pub(super) time: std::time::Duration,
}

impl Cpu {
    /// The CPU time the command may use in all.
    pub(super) fn total(&self) -> std::time::Duration {
        self.time.mul_f64(self.cpus.max(0.01))
    }

    /// The cgroup quota in microseconds per 100 ms period.
    fn quota(&self) -> u64 {
        ((self.cpus * PERIOD as f64) as u64).max(1_000)
    }
}

/// The cgroup's CPU period, in microseconds.
const PERIOD: u64 = 100_000;

/// One cgroup made for the command, in one hierarchy.
struct Group {
    dir: PathBuf,
    procs: File,
    /// Whether its memory is capped here (its OOM kills are then counted).
    memory: bool,
    /// Whether its processes are capped here.
    pids: bool,
    /// Whether its CPU is capped here.
    cpu: bool,
}

static NEXT: AtomicU64 = AtomicU64::new(0);

impl Limits {
    /// Bounds for a command: at most `processes` processes and `memory` bytes between
    /// them, `cpu`, and no file larger than `file_size` bytes.
    pub(super) fn new(
        processes: Option<u32>,
        memory: Option<u64>,
        cpu: Option<Cpu>,
        file_size: Option<u64>,
    ) -> Self {
        let mut groups = Vec::new();
        match hierarchy() {
            Hierarchy::V1 => {
                if let Some(max) = processes {
                    let settings = [("pids.max", max.to_string())];
                    groups.extend(Group::make("pids", &settings, Caps::PIDS));
                }
                if let Some(max) = memory {
                    let settings = [
                        ("memory.limit_in_bytes", max.to_string()),
                        // No swap beyond the memory: optional, as swap accounting may be off.
                        ("?memory.memsw.limit_in_bytes", max.to_string()),
                    ];
                    groups.extend(Group::make("memory", &settings, Caps::MEMORY));
                }
                if let Some(cpu) = cpu {
                    let settings = [
                        ("cpu.cfs_period_us", PERIOD.to_string()),
                        ("cpu.cfs_quota_us", cpu.quota().to_string()),
                    ];
                    groups.extend(Group::make("cpu", &settings, Caps::CPU));
                }
            }
            Hierarchy::V2 => {
                // Only the controllers enabled where the cgroup is made: one refused does
                // not take the others' caps with it.
                let enabled = v2_controllers();
                let on = |name: &str| enabled.iter().any(|c| c == name);
                let mut settings = Vec::new();
                let mut caps = Caps::default();
                if let Some(max) = processes.filter(|_| on("pids")) {
                    settings.push(("pids.max", max.to_string()));
                    caps.pids = true;
                }
                if let Some(max) = memory.filter(|_| on("memory")) {
                    settings.push(("memory.max", max.to_string()));
                    settings.push(("?memory.swap.max", "0".to_owned()));
                    caps.memory = true;
                }
                if let Some(cpu) = cpu.filter(|_| on("cpu")) {
                    settings.push(("cpu.max", format!("{} {PERIOD}", cpu.quota())));
                    caps.cpu = true;
                }
                if !settings.is_empty() {
                    groups.extend(Group::make("", &settings, caps));
                }
            }
            Hierarchy::None => {}
        }
        Self {
            groups,
            memory,
            processes,
            cpu,
            file_size,
        }
    }

    /// What no cgroup holds, for `tally.rs` to keep the whole command within: its memory
    /// and its CPU time in all.
    pub(super) fn uncapped(&self) -> (Option<u64>, Option<std::time::Duration>) {
        let capped = |pick: fn(&Group) -> bool| self.groups.iter().any(pick);
        (
            self.memory.filter(|_| !capped(|g| g.memory)),
            self.cpu.filter(|_| !capped(|g| g.cpu)).map(|c| c.total()),
        )
    }

    /// Whether a `pids` cgroup was made to cap the command's processes.
    pub(super) fn pids_capped(&self) -> bool {
        self.groups.iter().any(|g| g.pids)
    }

    /// What the child needs to apply the bounds to itself, with no allocation. Where the
    /// pids cgroup is not joined, the process-count rlimit caps the command instead: it
    /// counts every thread of the user the command runs as, so `threads` says how many
    /// that user has already (0 for an id of kite's own, whose every process is the
    /// command's; `None`: no fallback).
    pub(super) fn for_child(&self, threads: Option<u64>) -> ChildLimits {
        let processes = self
            .processes
            .zip(threads)
            .map(|(max, now)| u64::from(max) + now);
        let fd = |pick: fn(&Group) -> bool| {
            self.groups
                .iter()
                .find(|g| pick(g))
                .map_or(-1, |g| g.procs.as_raw_fd())
        };
        ChildLimits {
            pids_fd: fd(|g| g.pids),
            memory_fd: fd(|g| g.memory),
            cpu_fd: fd(|g| g.cpu),
            memory: self.memory,
            processes,
            cpu_seconds: self.cpu.map(|c| c.total().as_secs().max(1)),
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
    pids_fd: RawFd,
    memory_fd: RawFd,
    cpu_fd: RawFd,
    memory: Option<u64>,
    /// The process-count rlimit, where the pids cgroup is not joined.
    processes: Option<u64>,
    /// The CPU-time rlimit, where the cpu cgroup is not joined.
    cpu_seconds: Option<u64>,
    file_size: Option<u64>,
}

/// Writes `0` to a cgroup's `cgroup.procs` (the caller joins it); false when it cannot.
fn join(fd: RawFd) -> bool {
    // SAFETY: writes one byte from a static buffer to a descriptor the parent keeps open.
    fd >= 0 && unsafe { libc::write(fd, b"0".as_ptr().cast(), 1) } == 1
}

impl ChildLimits {
    /// Moves the calling process into the cgroups and sets its rlimits. Called in the child
    /// between fork and exec, so that nothing it starts is outside; it only calls `write(2)`
    /// and `setrlimit(2)`, which are async-signal-safe. Where the memory cgroup cannot be
    /// joined, an address-space rlimit caps each process instead; where the pids one
    /// cannot, a process-count rlimit does. An rlimit that cannot be set fails the start.
    pub(super) fn apply(&self) -> std::io::Result<()> {
        let pids = join(self.pids_fd);
        let memory = self.memory_fd == self.pids_fd && pids || join(self.memory_fd);
        let cpu = self.cpu_fd == self.pids_fd && pids
            || self.cpu_fd == self.memory_fd && memory
            || join(self.cpu_fd);
        set_rlimit(libc::RLIMIT_CORE, 0)?;
        if let (Some(max), false) = (self.memory, memory) {
            set_rlimit(libc::RLIMIT_AS, max)?;
        }
        if let (Some(max), false) = (self.cpu_seconds, cpu) {
            set_rlimit(libc::RLIMIT_CPU, max)?;
        }
        if let (Some(max), false) = (self.processes, pids) {
            set_rlimit(libc::RLIMIT_NPROC, max)?;
        }
        if let Some(max) = self.file_size {
            set_rlimit(libc::RLIMIT_FSIZE, max)?;
        }
        Ok(())
    }
}

/// How many threads `uid` has now (what `RLIMIT_NPROC` counts); it reads all of `/proc`.
pub(super) fn threads_of(uid: u32) -> u64 {
    let me = uid.to_string();
    let Ok(all) = std::fs::read_dir("/proc") else {
        return 0;
    };
    all.flatten()
        .filter(|e| {
            e.file_name()
                .to_str()
                .is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit()))
        })
        .filter_map(|e| std::fs::read_to_string(e.path().join("status")).ok())
        .filter(|status| {
            status
                .lines()
                .find_map(|l| l.strip_prefix("Uid:"))
                .and_then(|ids| ids.split_whitespace().next())
                == Some(me.as_str())
        })
        .filter_map(|status| {
            status
                .lines()
                .find_map(|l| l.strip_prefix("Threads:"))
                .and_then(|n| n.trim().parse::<u64>().ok())
        })
        .sum()
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
    /// `settings` written (a name starting with `?` may fail), capping what `caps` says;
    /// `None` where none can be made or a required setting is refused.
    fn make(controller: &str, settings: &[(&str, String)], caps: Caps) -> Option<Self> {
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
            Ok(procs) => Some(Self {
                dir,
                procs,
                memory: caps.memory,
                pids: caps.pids,
                cpu: caps.cpu,
            }),
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

/// What a cgroup caps.
#[derive(Clone, Copy, Default)]
struct Caps {
    memory: bool,
    pids: bool,
    cpu: bool,
}

impl Caps {
    const MEMORY: Caps = Caps {
        memory: true,
        pids: false,
        cpu: false,
    };
    const PIDS: Caps = Caps {
        memory: false,
        pids: true,
        cpu: false,
    };
    const CPU: Caps = Caps {
        memory: false,
        pids: false,
        cpu: true,
    };
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

/// Where kite may make a cgroup in `controller`'s hierarchy: below its own cgroup (the
/// hierarchy's root only when kite is in it), never elsewhere, so the command stays inside
/// whatever bounds kite; in v2, only where controllers are enabled for children.
fn parent_for(controller: &str) -> Option<PathBuf> {
    let dir = own_cgroup(controller)?;
    let ok = dir.join("cgroup.procs").exists()
        && (!controller.is_empty()
            || std::fs::read_to_string(dir.join("cgroup.subtree_control"))
                .is_ok_and(|c| !c.trim().is_empty()));
    (ok && writable(&dir)).then_some(dir)
}

/// kite's own cgroup in `controller`'s hierarchy (`""`: the v2 one), from
/// `/proc/self/cgroup`.
fn own_cgroup(controller: &str) -> Option<PathBuf> {
    let own = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let path = own.lines().find_map(|line| {
        let mut parts = line.splitn(3, ':');
        let (_, names, path) = (parts.next()?, parts.next()?, parts.next()?);
        let matches = match controller {
            "" => names.is_empty(),
            c => names.split(',').any(|n| n == c),
        };
        matches.then(|| path.trim_start_matches('/').to_owned())
    })?;
    if path.split('/').any(|p| p == "..") {
        return None;
    }
    Some(Path::new(ROOT).join(controller).join(path))
}

/// The controllers v2 enables for the children of kite's cgroup.
fn v2_controllers() -> Vec<String> {
    own_cgroup("")
        .and_then(|dir| std::fs::read_to_string(dir.join("cgroup.subtree_control")).ok())
        .map(|c| c.split_whitespace().map(str::to_owned).collect())
        .unwrap_or_default()
}

fn writable(dir: &Path) -> bool {
    let Ok(c) = std::ffi::CString::new(dir.as_os_str().as_encoded_bytes()) else {
        return false;
    };
    // SAFETY: access(2) on a NUL-terminated path.
    unsafe { libc::access(c.as_ptr(), libc::W_OK) == 0 }
}
