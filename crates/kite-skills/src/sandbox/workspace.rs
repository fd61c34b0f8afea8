//! A run's workspace: a file system of its own, in memory (tmpfs), whose size and number of
//! files the kernel bounds. Nothing a command does takes it past them: a write, an
//! `fallocate` or a new file past the quota fails with `ENOSPC`, as on a full disk, at once.
//!
//! The tmpfs is mounted in a mount namespace of its own (and, for an ordinary user, a user
//! namespace that maps only that user), made by a short-lived child (`make`) on an empty
//! folder kite makes for it. The host never sees it: outside, the folder stays empty, and
//! the file system goes when kite lets go of it (or dies). kite keeps three handles: the
//! tmpfs's root, opened through the child's `/proc/PID/root`, for its own tools; and the
//! two namespaces, which each command joins before bubblewrap starts (`enter`). Then
//! bubblewrap, whose mount namespace is a copy of that one, mounts the workspace from its
//! handle (as an ordinary user) or from its place (as root, `stage.rs`). Every step is a
//! system call Linux has had since 3.8, so no new kernel is needed.
//!
//! Without a sandbox (`dangerously_unsandboxed`, where no user namespace may be had
//! either), the workspace is a plain folder, with no quota: its commands can write
//! anywhere kite can anyway.

use super::identity::{self, Id};
use std::ffi::CString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// The most files and folders a workspace may hold (its tmpfs's inodes, its root among
/// them), whatever their size.
pub const MAX_ENTRIES: u64 = 20_000;

/// A run's workspace.
pub struct Workspace {
    /// Its root, open: the tools read and write through it, and commands start in it.
    root: std::fs::File,
    /// `/proc/PID/fd/N` for `root`: a path to it for this process, and for the programs it
    /// starts that may read its `/proc` folder.
    path: PathBuf,
    /// Its size in bytes, when it has one.
    size: Option<u64>,
    /// As root, the unprivileged id it belongs to and commands run as.
    owner: Option<Id>,
    kind: Kind,
}

enum Kind {
    /// A tmpfs mounted on `place` in the mount namespace `mnt` (owned by `user`, for an
    /// ordinary user).
    Own {
        mnt: OwnedFd,
        user: Option<OwnedFd>,
        place: CString,
        /// The empty folder it is mounted on, removed last.
        _folder: tempfile::TempDir,
    },
    /// A plain folder (no sandbox), removed with the workspace.
    Folder { _folder: tempfile::TempDir },
}

impl std::fmt::Debug for Workspace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Workspace")
            .field("path", &self.path)
            .field("size", &self.size)
            .field("owner", &self.owner)
            .finish_non_exhaustive()
    }
}

impl Workspace {
    /// A new, empty workspace of `size` bytes (unbounded with `None`, though never more than
    /// half the machine's memory, tmpfs's default). With `unconfined` (commands will run
    /// without a sandbox), a plain folder where no tmpfs can be had.
    pub fn new(size: Option<u64>, unconfined: bool) -> std::io::Result<Self> {
        let owner = match identity::is_root() {
            true => Some(identity::fresh()?),
            false => None,
        };
        let made = make(size, owner);
        let (root, kind) = match made {
            Ok(own) => own,
            Err(_) if unconfined => {
                let folder = private_folder("kite-run-")?;
                let root = open_dir(folder.path())?;
                (root, Kind::Folder { _folder: folder })
            }
            Err(e) => {
                return Err(std::io::Error::new(
                    e.kind(),
                    format!("cannot give the workspace a file system of its own: {e}"),
                ));
            }
        };
        let path = PathBuf::from(format!(
            "/proc/{}/fd/{}",
            std::process::id(),
            root.as_raw_fd()
        ));
        Ok(Self {
            root,
            path,
            size,
            owner,
            kind,
        })
    }

    /// A path to the workspace (`/proc/PID/fd/N`: it is mounted nowhere the rest of the
    /// machine sees), for this process and the programs it starts that may read its
    /// `/proc` folder, while the workspace lives.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Its size (the quota), when it has one.
    pub fn size(&self) -> Option<u64> {
        self.size.filter(|_| matches!(self.kind, Kind::Own { .. }))
    }

    /// Bytes still free in it (`None` for a plain folder).
    pub fn free(&self) -> Option<u64> {
        self.size()?;
        // SAFETY: fstatvfs(2) writes the struct it is given.
        let mut stat: libc::statvfs = unsafe { std::mem::zeroed() };
        // SAFETY: as above, on a descriptor this workspace holds.
        if unsafe { libc::fstatvfs(self.root.as_raw_fd(), &mut stat) } != 0 {
            return None;
        }
        Some(stat.f_bavail.saturating_mul(stat.f_frsize))
    }

    /// As root, the unprivileged id commands run as and what kite makes belongs to.
    pub(crate) fn owner(&self) -> Option<Id> {
        self.owner
    }

    /// Its root, open (for a `cap-std` handle of one's own).
    pub(crate) fn root(&self) -> &std::fs::File {
        &self.root
    }

    /// What a child does to reach the workspace as bubblewrap will mount it: joins its
    /// namespaces (`None` for a plain folder).
    pub(super) fn entry(&self) -> Option<Entry<'_>> {
        match &self.kind {
            Kind::Own {
                mnt, user, place, ..
            } => Some(Entry {
                mnt: mnt.as_raw_fd(),
                user: user.as_ref().map_or(-1, AsRawFd::as_raw_fd),
                place,
                root: self.root.as_raw_fd(),
            }),
            Kind::Folder { .. } => None,
        }
    }
}

/// The handles a child needs to enter a workspace: copied into its `pre_exec` closure.
#[derive(Clone, Copy)]
pub(super) struct Entry<'a> {
    mnt: RawFd,
    user: RawFd,
    /// Where the tmpfs is, inside `mnt`.
    pub(super) place: &'a CString,
    /// Its root, open (for bubblewrap's `--bind-fd`).
    pub(super) root: RawFd,
}

impl Entry<'_> {
    /// The mount namespace's descriptor.
    pub(super) fn mnt_fd(&self) -> RawFd {
        self.mnt
    }

    /// The user namespace's descriptor (`-1` as root).
    pub(super) fn user_fd(&self) -> RawFd {
        self.user
    }
}

/// Joins a workspace's user namespace (`user`, an ordinary user's; `-1` as root) and mount
/// namespace (`mnt`): called in the child between fork and exec, with setns(2) alone.
pub(super) fn enter(mnt: RawFd, user: RawFd) -> std::io::Result<()> {
    for (fd, kind) in [(user, libc::CLONE_NEWUSER), (mnt, libc::CLONE_NEWNS)] {
        // SAFETY: setns(2) on a namespace descriptor the workspace holds.
        if fd >= 0 && unsafe { libc::setns(fd, kind) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// A new 0700 folder under the temporary folder.
fn private_folder(prefix: &str) -> std::io::Result<tempfile::TempDir> {
    use std::os::unix::fs::PermissionsExt;
    tempfile::Builder::new()
        .prefix(prefix)
        .permissions(std::fs::Permissions::from_mode(0o700))
        .tempdir()
}

fn open_dir(path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::File::options()
        .read(true)
        .custom_flags(libc::O_DIRECTORY)
        .open(path)
}

/// The steps of the child that makes the tmpfs, by number, as it reports a failure.
const STEPS: [&str; 6] = [
    "cannot make a user namespace",
    "cannot map the user into it",
    "cannot make a mount namespace",
    "cannot keep its mounts private",
    "cannot mount a tmpfs",
    "cannot write to the parent",
];

/// Makes the tmpfs: a child takes the namespaces and mounts it on a new folder, says so
/// through a pipe, and waits until kite has opened its root and namespaces through
/// `/proc/PID/`, then ends.
fn make(size: Option<u64>, owner: Option<Id>) -> std::io::Result<(std::fs::File, Kind)> {
    let folder = private_folder("kite-workspace-")?;
    let place =
        CString::new(folder.path().as_os_str().as_bytes()).map_err(std::io::Error::other)?;
    let mut options = format!("mode=0700,nr_inodes={MAX_ENTRIES}");
    if let Some(size) = size {
        options.push_str(&format!(",size={size}"));
    }
    if let Some(id) = owner {
        options.push_str(&format!(",uid={},gid={}", id.uid, id.gid));
    }
    let options = CString::new(options).map_err(std::io::Error::other)?;
    let user = owner.is_none();
    // SAFETY: getuid(2) and getgid(2) cannot fail.
    let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
    let uid_map = format!("{uid} {uid} 1\n");
    let gid_map = format!("{gid} {gid} 1\n");
    let (ready_r, ready_w) = pipe()?;
    let (done_r, done_w) = pipe()?;
    // SAFETY: the child calls only async-signal-safe functions (unshare(2), open(2),
    // write(2), close(2), mount(2), read(2), _exit(2)) on values made before the fork.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(std::io::Error::last_os_error());
    }
    if pid == 0 {
        drop(ready_r);
        drop(done_w);
        let step = child(user, &uid_map, &gid_map, &place, &options);
        let report = match step {
            Ok(()) => [0u8, 0],
            Err((step, errno)) => [step + 1, u8::try_from(errno).unwrap_or(u8::MAX)],
        };
        // SAFETY: write(2), read(2) and _exit(2) on the pipes this child holds.
        unsafe {
            libc::write(ready_w.as_raw_fd(), report.as_ptr().cast(), 2);
            let mut byte = 0u8;
            libc::read(done_r.as_raw_fd(), (&raw mut byte).cast(), 1);
            libc::_exit(0);
        }
    }
    drop(ready_w);
    drop(done_r);
    let mut report = [0u8; 2];
    let got = read_full(&ready_r, &mut report);
    let opened = match (got, report) {
        (true, [0, _]) => open_child(pid, user, folder.path()),
        (true, [step, errno]) => Err(std::io::Error::other(format!(
            "{}: {}",
            STEPS
                .get(usize::from(step) - 1)
                .copied()
                .unwrap_or("cannot make it"),
            std::io::Error::from_raw_os_error(i32::from(errno))
        ))),
        (false, _) => Err(std::io::Error::other("the child that makes it ended early")),
    };
    // Let the child go, and reap it.
    drop(done_w);
    // SAFETY: waitpid(2) on the child forked above.
    unsafe {
        libc::waitpid(pid, std::ptr::null_mut(), 0);
    }
    let (root, mnt, user) = opened?;
    Ok((
        root,
        Kind::Own {
            mnt,
            user,
            place,
            _folder: folder,
        },
    ))
}

/// Opens the child's tmpfs root (through its own root, in its mount namespace) and its
/// namespaces.
fn open_child(
    pid: libc::pid_t,
    user: bool,
    place: &Path,
) -> std::io::Result<(std::fs::File, OwnedFd, Option<OwnedFd>)> {
    let proc = PathBuf::from(format!("/proc/{pid}"));
    let relative = place.strip_prefix("/").unwrap_or(place);
    let root = open_dir(&proc.join("root").join(relative))?;
    let ns = |name: &str| -> std::io::Result<OwnedFd> {
        Ok(std::fs::File::open(proc.join("ns").join(name))?.into())
    };
    let mnt = ns("mnt")?;
    let user = match user {
        true => Some(ns("user")?),
        false => None,
    };
    Ok((root, mnt, user))
}

/// The child's work: the namespaces, then the tmpfs. `Err` holds the step (an index of
/// [`STEPS`]) and the errno.
fn child(
    user: bool,
    uid_map: &str,
    gid_map: &str,
    place: &CString,
    options: &CString,
) -> Result<(), (u8, i32)> {
    let errno = || std::io::Error::last_os_error().raw_os_error().unwrap_or(0);
    // SAFETY: plain system calls on NUL-terminated strings made before the fork.
    unsafe {
        if user {
            if libc::unshare(libc::CLONE_NEWUSER) != 0 {
                return Err((0, errno()));
            }
            for (file, text) in [
                (c"/proc/self/setgroups", "deny"),
                (c"/proc/self/uid_map", uid_map),
                (c"/proc/self/gid_map", gid_map),
            ] {
                let fd = libc::open(file.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
                if fd < 0 {
                    return Err((1, errno()));
                }
                let written = libc::write(fd, text.as_ptr().cast(), text.len());
                let failed = written != text.len() as isize;
                let e = errno();
                libc::close(fd);
                if failed {
                    return Err((1, e));
                }
            }
        }
        if libc::unshare(libc::CLONE_NEWNS) != 0 {
            return Err((2, errno()));
        }
        if libc::mount(
            std::ptr::null(),
            c"/".as_ptr(),
            std::ptr::null(),
            libc::MS_REC | libc::MS_PRIVATE,
            std::ptr::null(),
        ) != 0
        {
            return Err((3, errno()));
        }
        if libc::mount(
            c"kite-workspace".as_ptr(),
            place.as_ptr(),
            c"tmpfs".as_ptr(),
            libc::MS_NOSUID | libc::MS_NODEV,
            options.as_ptr().cast(),
        ) != 0
        {
            return Err((4, errno()));
        }
    }
    Ok(())
}

fn pipe() -> std::io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: pipe2(2) writes two new descriptors into the array.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: pipe2(2) returned two new descriptors that nothing else owns.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// Reads `buf.len()` bytes; false at an early end.
fn read_full(fd: &OwnedFd, buf: &mut [u8]) -> bool {
    let mut at = 0;
    while at < buf.len() {
        // SAFETY: read(2) into the rest of the buffer.
        let n = unsafe {
            libc::read(
                fd.as_raw_fd(),
                buf[at..].as_mut_ptr().cast(),
                buf.len() - at,
            )
        };
        match n {
            n if n > 0 => at += n as usize,
            n if n < 0
                && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted => {}
            _ => return false,
        }
    }
    true
}
