//! Who a command runs as. As an ordinary user, as that user: bubblewrap's user namespace
//! leaves it no capability outside. As root, never as root: each workspace belongs to an
//! unprivileged uid and gid of its own (picked at random from a range no account, container
//! or systemd allocation uses), and commands run as that id, so that a script keeps no
//! privilege on the host whatever it does inside.

/// The ids a workspace is given: 0x70000000 and the 2^26 after it, above the ranges of
/// accounts, subordinate ids and systemd's containers (which end below 0x70000000), and
/// below 2^31, which some tools take for negative.
const FIRST: u32 = 0x7000_0000;
const COUNT: u32 = 1 << 26;

/// A uid and gid commands run as.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Id {
    /// The user id.
    pub uid: u32,
    /// The group id.
    pub gid: u32,
}

impl Id {
    /// Whether it is one of the ids kite gives workspaces (no account's).
    pub fn is_kites(&self) -> bool {
        self.uid.wrapping_sub(FIRST) < COUNT && self.gid == self.uid
    }
}

/// Whether kite runs as root.
pub(crate) fn is_root() -> bool {
    // SAFETY: geteuid(2) has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// A random id in the range kite gives workspaces.
pub(crate) fn fresh() -> std::io::Result<Id> {
    let mut bytes = [0u8; 4];
    // SAFETY: getrandom(2) writes at most `bytes.len()` bytes into the buffer.
    let n = unsafe { libc::getrandom(bytes.as_mut_ptr().cast(), bytes.len(), 0) };
    if n != 4 {
        return Err(std::io::Error::last_os_error());
    }
    let id = FIRST + u32::from_ne_bytes(bytes) % COUNT;
    Ok(Id { uid: id, gid: id })
}

/// Becomes `id`, dropping root's groups: called in the child between fork and exec, with
/// only async-signal-safe calls. Any failure fails the start: a command never runs as
/// root by mistake.
pub(super) fn become_id(id: Id) -> std::io::Result<()> {
    // SAFETY: setgroups(2), setgid(2) and setuid(2) take plain values.
    let ok = unsafe {
        libc::setgroups(0, std::ptr::null()) == 0
            && libc::setgid(id.gid) == 0
            && libc::setuid(id.uid) == 0
    };
    match ok {
        true => Ok(()),
        false => Err(std::io::Error::last_os_error()),
    }
}
