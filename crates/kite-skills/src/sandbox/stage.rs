//! Where bubblewrap finds the workspace and the skills when kite is root.
//!
//! bubblewrap resolves the path of every folder it mounts, even one handed to it open, and
//! it does so as the unprivileged id the command runs as (`identity.rs`). That id may not
//! be able to walk the path: root's own skills sit under `/root`, which is 0700, and so
//! may the workspace's place. So, between fork and exec and while still root, the child
//! (already in the workspace's mount namespace, `workspace.rs`) takes a mount namespace of
//! its own (private: nothing it mounts reaches the host or the workspace's), copies the
//! workspace's mount from its place there, puts a small tmpfs on `/tmp`, and attaches on it
//! that copy and a copy of each skill folder's mount that kite took, before the fork, from
//! the folder's descriptor (open_tree(2)), which no path or link can redirect. bubblewrap
//! then mounts them from those places, which any id can reach; the host's own `/tmp` is
//! never used. Where root lacks `CAP_SYS_ADMIN` (some containers) or the kernel is older
//! than 5.2, the folders are handed over open instead, and must then be reachable by the
//! id.

use std::ffi::CString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// Copies of the skill folders' mounts, detached (open_tree(2)), and where the child
/// attaches each of them; the workspace's place, copied in the child, goes at `/tmp/0`.
pub(super) struct Stage {
    workspace: CString,
    points: Vec<(OwnedFd, CString)>,
}

/// open_tree(2)'s and move_mount(2)'s flags, as the kernel's uapi headers have them.
const OPEN_TREE_CLONE: libc::c_uint = 1;
const MOVE_MOUNT_F_EMPTY_PATH: libc::c_uint = 4;

impl Stage {
    /// A stage for the workspace at `workspace` (its place in its own mount namespace) and
    /// these open skill folders: `None` where kite cannot make one (not root, no
    /// `CAP_SYS_ADMIN`, or a kernel older than 5.2).
    pub(super) fn new(workspace: &CString, skills: &[RawFd]) -> Option<Self> {
        let points = skills
            .iter()
            .enumerate()
            .map(|(i, fd)| {
                // SAFETY: open_tree(2) on a descriptor kite holds, with an empty path.
                let tree = unsafe {
                    libc::syscall(
                        libc::SYS_open_tree,
                        *fd,
                        c"".as_ptr(),
                        OPEN_TREE_CLONE
                            | libc::O_CLOEXEC as libc::c_uint
                            | libc::AT_EMPTY_PATH as libc::c_uint,
                    )
                };
                let tree = RawFd::try_from(tree).ok().filter(|fd| *fd >= 0)?;
                // SAFETY: open_tree(2) returned a new descriptor that nothing else owns.
                let tree = unsafe { OwnedFd::from_raw_fd(tree) };
                Some((tree, CString::new(Self::place(i + 1)).ok()?))
            })
            .collect::<Option<_>>()?;
        Some(Self {
            workspace: workspace.clone(),
            points,
        })
    }

    /// Where bubblewrap finds the `i`th folder: 0 is the workspace, the skills follow.
    pub(super) fn place(i: usize) -> String {
        format!("/tmp/{i}")
    }

    /// Takes the mount namespace and attaches the folders: called in the child between
    /// fork and exec, while still root and in the workspace's mount namespace, with only
    /// async-signal-safe calls (unshare(2), mount(2), open_tree(2), mkdir(2),
    /// move_mount(2), close(2)) on values made before the fork.
    pub(super) fn enter(&self) -> std::io::Result<()> {
        let check = |ok: bool| match ok {
            true => Ok(()),
            false => Err(std::io::Error::last_os_error()),
        };
        // SAFETY: plain system calls on descriptors kite holds and NUL-terminated strings
        // that outlive them.
        unsafe {
            check(libc::unshare(libc::CLONE_NEWNS) == 0)?;
            check(
                libc::mount(
                    std::ptr::null(),
                    c"/".as_ptr(),
                    std::ptr::null(),
                    libc::MS_REC | libc::MS_PRIVATE,
                    std::ptr::null(),
                ) == 0,
            )?;
            // The workspace, copied from its place before `/tmp` (where it may be) is covered.
            let workspace = libc::syscall(
                libc::SYS_open_tree,
                libc::AT_FDCWD,
                self.workspace.as_ptr(),
                OPEN_TREE_CLONE | libc::O_CLOEXEC as libc::c_uint,
            );
            let workspace = RawFd::try_from(workspace).unwrap_or(-1);
            check(workspace >= 0)?;
            let workspace = OwnedFd::from_raw_fd(workspace);
            check(
                libc::mount(
                    c"tmpfs".as_ptr(),
                    c"/tmp".as_ptr(),
                    c"tmpfs".as_ptr(),
                    libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
                    c"mode=0755,size=64k,nr_inodes=256".as_ptr().cast(),
                ) == 0,
            )?;
            let first = (&workspace, c"/tmp/0");
            let rest = self.points.iter().map(|(tree, to)| (tree, to.as_c_str()));
            for (tree, to) in std::iter::once(first).chain(rest) {
                check(libc::mkdir(to.as_ptr(), 0o755) == 0)?;
                check(
                    libc::syscall(
                        libc::SYS_move_mount,
                        tree.as_raw_fd(),
                        c"".as_ptr(),
                        libc::AT_FDCWD,
                        to.as_ptr(),
                        MOVE_MOUNT_F_EMPTY_PATH,
                    ) == 0,
                )?;
                // A copy keeps its source's peers: this one shares nothing with them.
                check(
                    libc::mount(
                        std::ptr::null(),
                        to.as_ptr(),
                        std::ptr::null(),
                        libc::MS_PRIVATE,
                        std::ptr::null(),
                    ) == 0,
                )?;
            }
        }
        Ok(())
    }
}
