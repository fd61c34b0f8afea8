//! What a command's process is cut off from beyond bubblewrap's namespaces: the kernel's
//! keyrings, the descriptors kite holds, and the system calls no script needs.
//!
//! - **Keyrings.** A process inherits its session keyring, and through it whatever its
//!   starter keeps there (and `@u`, its user's keyring). Each command joins a fresh,
//!   empty session keyring, and the filter below refuses every keyring call, so nothing
//!   a command does reaches or outlives kite's keys.
//! - **Descriptors.** A descriptor kite inherited without close-on-exec (a folder handed to
//!   it by whoever started it, say) would lead a command out of any namespace. Only 0–2 and
//!   the descriptors kite means to pass reach the command.
//! - **System calls.** A seccomp filter, compiled once by `seccompiler`, refuses with
//!   `EPERM` the calls in [`DENIED`]: keyrings, tracing and reading other processes'
//!   memory, BPF, perf events, userfaultfd, io_uring (whose operations no filter sees),
//!   mounting, kernel modules and kexec, and opening files by handle. bubblewrap installs it
//!   last (`--seccomp`), just before the command starts; without a sandbox, the child
//!   installs it itself. Any other architecture's calls (32-bit ones on x86-64) end the
//!   process.

use seccompiler::{BpfProgram, SeccompAction, SeccompFilter, SeccompRule};
use std::collections::BTreeMap;
use std::os::fd::{FromRawFd, OwnedFd, RawFd};
use std::sync::OnceLock;

/// The system calls a command is refused.
const DENIED: &[libc::c_long] = &[
    libc::SYS_keyctl,
    libc::SYS_add_key,
    libc::SYS_request_key,
    libc::SYS_ptrace,
    libc::SYS_process_vm_readv,
    libc::SYS_process_vm_writev,
    libc::SYS_bpf,
    libc::SYS_perf_event_open,
    libc::SYS_userfaultfd,
    libc::SYS_io_uring_setup,
    libc::SYS_io_uring_enter,
    libc::SYS_io_uring_register,
    libc::SYS_mount,
    libc::SYS_umount2,
    libc::SYS_pivot_root,
    libc::SYS_fsopen,
    libc::SYS_fsconfig,
    libc::SYS_fsmount,
    libc::SYS_fspick,
    libc::SYS_move_mount,
    libc::SYS_open_tree,
    libc::SYS_mount_setattr,
    libc::SYS_init_module,
    libc::SYS_finit_module,
    libc::SYS_delete_module,
    libc::SYS_kexec_load,
    libc::SYS_kexec_file_load,
    libc::SYS_open_by_handle_at,
    libc::SYS_name_to_handle_at,
    libc::SYS_swapon,
    libc::SYS_swapoff,
    libc::SYS_reboot,
    libc::SYS_acct,
];

/// On x86-64, the x32 ABI reaches the same calls with this bit set in their number.
#[cfg(target_arch = "x86_64")]
const X32: libc::c_long = 0x4000_0000;

/// The filter, compiled once: `Err` says why it cannot be (an architecture seccompiler
/// does not know), and then no command starts.
fn program() -> Result<&'static BpfProgram, String> {
    static PROGRAM: OnceLock<Result<BpfProgram, String>> = OnceLock::new();
    PROGRAM
        .get_or_init(|| {
            let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
            // `c_long` is `i64` only on 64-bit machines.
            #[allow(clippy::useless_conversion)]
            for nr in DENIED {
                rules.insert(i64::from(*nr), Vec::new());
                #[cfg(target_arch = "x86_64")]
                rules.insert(i64::from(*nr | X32), Vec::new());
            }
            let arch = std::env::consts::ARCH
                .try_into()
                .map_err(|e| format!("no system-call filter for this machine: {e}"))?;
            let filter = SeccompFilter::new(
                rules,
                SeccompAction::Allow,
                SeccompAction::Errno(libc::EPERM as u32),
                arch,
            )
            .map_err(|e| format!("cannot build the system-call filter: {e}"))?;
            BpfProgram::try_from(filter)
                .map_err(|e| format!("cannot compile the system-call filter: {e}"))
        })
        .as_ref()
        .map_err(Clone::clone)
}

/// The compiled filter in a memory file, for bubblewrap's `--seccomp` (which reads it whole).
pub(super) fn filter_file() -> std::io::Result<OwnedFd> {
    let program = program().map_err(std::io::Error::other)?;
    let bytes: Vec<u8> = program
        .iter()
        .flat_map(|i| {
            let mut one = Vec::with_capacity(8);
            one.extend_from_slice(&i.code.to_ne_bytes());
            one.push(i.jt);
            one.push(i.jf);
            one.extend_from_slice(&i.k.to_ne_bytes());
            one
        })
        .collect();
    memory_file(c"kite-seccomp", &bytes)
}

/// `bytes` in a memory file, read from its start: what bubblewrap reads from a descriptor.
pub(super) fn memory_file(name: &std::ffi::CStr, bytes: &[u8]) -> std::io::Result<OwnedFd> {
    // SAFETY: memfd_create(2) with a NUL-terminated name; the descriptor is new.
    let fd = unsafe { libc::memfd_create(name.as_ptr(), libc::MFD_CLOEXEC) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: memfd_create(2) returned a new descriptor that nothing else owns.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    let mut file = std::fs::File::from(fd);
    std::io::Write::write_all(&mut file, bytes)?;
    std::io::Seek::rewind(&mut file)?;
    Ok(file.into())
}

/// The filter, for a child to install on itself ([`Child::apply`]).
pub(super) fn for_child() -> std::io::Result<&'static BpfProgram> {
    program().map_err(std::io::Error::other)
}

/// What the child does to itself between fork and exec, with async-signal-safe calls only:
/// a fresh session keyring, then every descriptor but 0–2 and `keep` closed at exec, then,
/// where no bubblewrap will, the filter.
#[derive(Clone, Copy)]
pub(super) struct Child<'a> {
    /// The descriptors the command (or bubblewrap) is given, the rest `-1`.
    pub(super) keep: &'a [RawFd],
    /// The filter to install in the child itself (no sandbox to do it).
    pub(super) filter: Option<&'static BpfProgram>,
}

/// keyctl(2)'s operation that joins a session keyring (a new anonymous one for a null name).
const KEYCTL_JOIN_SESSION_KEYRING: libc::c_long = 1;

impl Child<'_> {
    pub(super) fn apply(&self) -> std::io::Result<()> {
        // SAFETY: keyctl(2) with a null name makes and joins a new session keyring.
        let joined = unsafe {
            libc::syscall(
                libc::SYS_keyctl,
                KEYCTL_JOIN_SESSION_KEYRING,
                std::ptr::null::<libc::c_char>(),
            )
        };
        // A kernel without keyrings has none to leak.
        if joined < 0 && std::io::Error::last_os_error().raw_os_error() != Some(libc::ENOSYS) {
            return Err(std::io::Error::last_os_error());
        }
        close_on_exec_from(3)?;
        for fd in self.keep.iter().copied().filter(|fd| *fd >= 0) {
            // SAFETY: fcntl(2) on a descriptor the parent keeps open for the child.
            if unsafe { libc::fcntl(fd, libc::F_SETFD, 0) } != 0 {
                return Err(std::io::Error::last_os_error());
            }
        }
        if let Some(filter) = self.filter {
            seccompiler::apply_filter(filter).map_err(std::io::Error::other)?;
        }
        Ok(())
    }
}

/// Marks every descriptor from `first` on close-on-exec: close_range(2) where the kernel
/// has it (5.11), else one fcntl(2) each up to the limit of open files.
fn close_on_exec_from(first: RawFd) -> std::io::Result<()> {
    const CLOSE_RANGE_CLOEXEC: libc::c_uint = 1 << 2;
    // SAFETY: close_range(2) with the flag that only marks descriptors.
    let marked = unsafe {
        libc::syscall(
            libc::SYS_close_range,
            first as libc::c_uint,
            libc::c_uint::MAX,
            CLOSE_RANGE_CLOEXEC,
        )
    };
    if marked == 0 {
        return Ok(());
    }
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit(2) writes the struct it is given.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    let last = RawFd::try_from(limit.rlim_cur.min(1 << 20)).unwrap_or(1 << 20);
    for fd in first..last {
        // SAFETY: fcntl(2) on a number that may or may not be open; EBADF is harmless.
        unsafe {
            libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC);
        }
    }
    Ok(())
}
