//! What a command is cut off from beyond the sandbox's namespaces: the keyrings of whoever
//! started kite, the descriptors kite holds, and the system calls no script needs. Each
//! test runs with bubblewrap and, where it applies, without it, as root and again as an
//! ordinary user.

mod common;

use common::{sandboxed, text};
use kite_agent::CancellationToken;
use kite_skills::SandboxOptions;
use kite_skills::sandbox::{self, Workspace};
use std::ffi::CString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// The session keyring (`@s`), as keyctl(2) names it.
const SESSION: libc::c_long = -3;
const KEYCTL_READ: libc::c_long = 11;
const KEYCTL_SEARCH: libc::c_long = 10;

/// Adds a `user` key to this process's session keyring, as a login keeps one.
fn add_key(description: &str, payload: &[u8]) -> libc::c_long {
    let kind = CString::new("user").unwrap();
    let description = CString::new(description).unwrap();
    // SAFETY: add_key(2) with NUL-terminated strings and a payload of the length given.
    let id = unsafe {
        libc::syscall(
            libc::SYS_add_key,
            kind.as_ptr(),
            description.as_ptr(),
            payload.as_ptr(),
            payload.len(),
            SESSION,
        )
    };
    assert!(id > 0, "add_key: {}", std::io::Error::last_os_error());
    id
}

/// A key's payload, read by this process.
fn read_key(id: libc::c_long) -> Vec<u8> {
    let mut buf = vec![0u8; 256];
    // SAFETY: keyctl(2) writes at most `buf.len()` bytes into the buffer.
    let n = unsafe {
        libc::syscall(
            libc::SYS_keyctl,
            KEYCTL_READ,
            id,
            buf.as_mut_ptr(),
            buf.len(),
        )
    };
    assert!(n >= 0, "keyctl read: {}", std::io::Error::last_os_error());
    buf.truncate(usize::try_from(n).unwrap().min(256));
    buf
}

/// Whether the session keyring holds a `user` key with this description.
fn session_has(description: &str) -> bool {
    let kind = CString::new("user").unwrap();
    let description = CString::new(description).unwrap();
    // SAFETY: keyctl(2) search with NUL-terminated strings and no keyring to link into.
    let id = unsafe {
        libc::syscall(
            libc::SYS_keyctl,
            KEYCTL_SEARCH,
            SESSION,
            kind.as_ptr(),
            description.as_ptr(),
            0,
        )
    };
    id > 0
}

/// A Python script that reads every key it can name in the keyrings it may reach, then
/// tries to overwrite the planted secret and to plant a key of its own; each line is what a
/// call gave and its errno.
fn keyring_attack(description: &str) -> String {
    format!(
        r#"python3 -c '
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
def call(name, nr, *args):
    r = libc.syscall(nr, *args)
    print(name, r, ctypes.get_errno())
    return r
for ring in (-3, -4, -5):
    call("keyring", {keyctl}, 0, ring, 0)
found = call("search", {keyctl}, 10, -3, b"user", b"{description}", 0)
buf = ctypes.create_string_buffer(256)
if found > 0:
    n = call("read", {keyctl}, 11, found, buf, 256)
    print("READ", buf.raw[:max(n, 0)])
    call("update", {keyctl}, 2, found, b"changed-by-the-script", 21)
call("request_key", {request_key}, b"user", b"{description}", None, 0)
call("add_key", {add_key}, b"user", b"planted-by-the-script", b"x", 1, -3)
'"#,
        keyctl = libc::SYS_keyctl,
        request_key = libc::SYS_request_key,
        add_key = libc::SYS_add_key,
    )
}

/// Every keyring call the attack made was refused, and the keyring is as it was.
fn assert_keyrings_held(shown: &str, id: libc::c_long, secret: &[u8], description: &str) {
    assert!(!shown.contains("READ"), "{shown}");
    let calls: Vec<&str> = shown
        .lines()
        .filter(|l| {
            ["keyring", "search", "request_key", "add_key"]
                .iter()
                .any(|c| l.starts_with(&format!("{c} ")))
        })
        .collect();
    assert_eq!(calls.len(), 6, "{shown}");
    for line in calls {
        assert!(
            line.ends_with(" -1 1"),
            "not refused with EPERM: {line}\n{shown}"
        );
    }
    assert_eq!(read_key(id), secret, "the key was changed");
    assert!(session_has(description), "the key is gone");
    assert!(!session_has("planted-by-the-script"), "a key was planted");
}

#[tokio::test]
async fn the_keyrings_of_whoever_started_kite_are_out_of_reach() {
    let description = format!("kite-test-{}", std::process::id());
    let secret = b"the-keyring-secret-of-the-user";
    let id = add_key(&description, secret);
    let attack = keyring_attack(&description);

    let (out, _ws) = sandboxed(&attack, SandboxOptions::default()).await;
    assert_keyrings_held(&text(&out), id, secret, &description);

    // Without a sandbox (only where the user allowed it), the same holds.
    let ws = Workspace::new(None, true).unwrap();
    let options = SandboxOptions {
        bwrap: "/nonexistent/bwrap".into(),
        dangerously_unsandboxed: true,
        ..SandboxOptions::default()
    };
    let ready = sandbox::probe(&options).await;
    let out = sandbox::run(
        &attack,
        &ws,
        &[],
        &options,
        ready,
        &CancellationToken::new(),
    )
    .await
    .unwrap();
    assert_keyrings_held(&text(&out), id, secret, &description);
}

#[tokio::test]
async fn the_calls_no_script_needs_are_refused() {
    let calls = [
        ("ptrace", libc::SYS_ptrace),
        ("bpf", libc::SYS_bpf),
        ("perf_event_open", libc::SYS_perf_event_open),
        ("userfaultfd", libc::SYS_userfaultfd),
        ("io_uring_setup", libc::SYS_io_uring_setup),
        ("mount", libc::SYS_mount),
        ("umount2", libc::SYS_umount2),
        ("fsopen", libc::SYS_fsopen),
        ("open_tree", libc::SYS_open_tree),
        ("init_module", libc::SYS_init_module),
        ("finit_module", libc::SYS_finit_module),
        ("delete_module", libc::SYS_delete_module),
        ("kexec_load", libc::SYS_kexec_load),
    ];
    // ptrace(PTRACE_TRACEME) and userfaultfd(UFFD_USER_MODE_ONLY) succeed unfiltered.
    let script = calls
        .iter()
        .map(|(name, nr)| {
            let first = if *name == "userfaultfd" { 1 } else { 0 };
            format!("call(\"{name}\", {nr}, {first})")
        })
        .collect::<Vec<_>>()
        .join("\n");
    let command = format!(
        "python3 -c '
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
def call(name, nr, first):
    r = libc.syscall(nr, first, 0, 0, 0, 0)
    print(name, r, ctypes.get_errno())
{script}
print(\"still running\")
'"
    );
    let (out, _ws) = sandboxed(&command, SandboxOptions::default()).await;
    let shown = text(&out);
    assert!(shown.contains("still running"), "{shown}");
    for (name, _) in calls {
        let line = shown
            .lines()
            .find(|l| l.starts_with(&format!("{name} ")))
            .unwrap_or_else(|| panic!("{name} not called: {shown}"));
        assert_eq!(line, format!("{name} -1 1"), "{shown}");
    }
}

/// Opens `path` with `flags` and without close-on-exec, as a descriptor kite inherited.
fn inherited(path: &str, flags: libc::c_int) -> OwnedFd {
    let path = CString::new(path).unwrap();
    // SAFETY: open(2) with a NUL-terminated path; the descriptor is new.
    let fd = unsafe { libc::open(path.as_ptr(), flags, 0o600) };
    assert!(fd >= 0, "{}", std::io::Error::last_os_error());
    // SAFETY: open(2) returned a new descriptor that nothing else owns.
    unsafe { OwnedFd::from_raw_fd(fd) }
}

#[tokio::test]
async fn descriptors_kite_holds_do_not_reach_a_command() {
    let host = tempfile::tempdir().unwrap();
    let file = host.path().join("host-file");
    std::fs::write(&file, "the host's").unwrap();
    let root = inherited("/", libc::O_PATH | libc::O_DIRECTORY);
    let tmp = inherited(
        host.path().to_str().unwrap(),
        libc::O_RDONLY | libc::O_DIRECTORY,
    );
    let writable = inherited(file.to_str().unwrap(), libc::O_WRONLY | libc::O_APPEND);
    let (r, t, w) = (root.as_raw_fd(), tmp.as_raw_fd(), writable.as_raw_fd());
    let command = format!(
        "for fd in {r} {t} {w}; do [ -e /proc/self/fd/$fd ] && echo LEAKED $fd; done; \
         cat /proc/self/fd/{r}/etc/hostname && echo READ-HOST; \
         echo planted > /proc/self/fd/{t}/planted && echo WROTE-HOST; \
         echo appended >> /proc/self/fd/{w} && echo APPENDED; \
         ls /proc/self/fd; echo done"
    );
    let check = |shown: &str| {
        assert!(shown.contains("done"), "{shown}");
        for word in ["LEAKED", "READ-HOST", "WROTE-HOST", "APPENDED"] {
            assert!(!shown.contains(word), "{word}: {shown}");
        }
        assert!(!host.path().join("planted").exists());
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "the host's");
    };
    let (out, _ws) = sandboxed(&command, SandboxOptions::default()).await;
    check(&text(&out));

    let ws = Workspace::new(None, true).unwrap();
    let options = SandboxOptions {
        bwrap: "/nonexistent/bwrap".into(),
        dangerously_unsandboxed: true,
        ..SandboxOptions::default()
    };
    let ready = sandbox::probe(&options).await;
    let out = sandbox::run(
        &command,
        &ws,
        &[],
        &options,
        ready,
        &CancellationToken::new(),
    )
    .await
    .unwrap();
    check(&text(&out));
}

/// Runs this file's other tests again as an ordinary user.
#[test]
fn the_command_is_confined_for_an_ordinary_user_too() {
    common::rerun_as_ordinary_user("the_command_is_confined_for_an_ordinary_user_too");
}
