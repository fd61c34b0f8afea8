//! bubblewrap's command line for one command, and what must be ready before it starts:
//! the id it runs as, the mount points in the workspace, and the folders it mounts, open.

use super::identity::{self, Id};
use super::network::Net;
use super::stage::Stage;
use super::workspace::Workspace;
use super::{SandboxOptions, confine, limits};
use std::ffi::{OsStr, OsString};
use std::os::fd::RawFd;
use std::path::{Path, PathBuf};
use tokio::process::Command;

/// What a sandboxed command needs before bubblewrap starts: the workspace, the id it runs
/// as (as root), the skills' folders open, to be handed over as descriptors, and the
/// system-call filter bubblewrap installs.
pub(super) struct Prepared<'a> {
    workspace: &'a Workspace,
    id: Option<Id>,
    skills: Vec<(String, std::fs::File)>,
    filter: std::os::fd::OwnedFd,
    /// With a network: pasta, and what the command's namespace needs.
    network: Option<Net>,
}

/// A command line being written.
#[derive(Default)]
struct Line(Vec<OsString>);

impl Line {
    fn arg(&mut self, arg: impl AsRef<OsStr>) -> &mut Self {
        self.0.push(arg.as_ref().to_owned());
        self
    }

    fn args<S: AsRef<OsStr>>(&mut self, args: impl IntoIterator<Item = S>) -> &mut Self {
        self.0
            .extend(args.into_iter().map(|a| a.as_ref().to_owned()));
        self
    }
}

impl<'a> Prepared<'a> {
    pub(super) fn new(
        workspace: &'a Workspace,
        skills: &[(String, PathBuf)],
        options: &SandboxOptions,
    ) -> std::io::Result<Self> {
        let network = match options.network {
            true => Some(Net::new(&options.allow_networks)?),
            false => None,
        };
        let id = workspace.owner();
        mount_points(workspace, skills, id)?;
        let open = |dir: &Path| {
            use std::os::unix::fs::OpenOptionsExt;
            std::fs::File::options()
                .read(true)
                .custom_flags(libc::O_PATH | libc::O_DIRECTORY)
                .open(dir)
        };
        Ok(Self {
            workspace,
            id,
            skills: skills
                .iter()
                .map(|(name, dir)| Ok((name.clone(), open(dir)?)))
                .collect::<std::io::Result<_>>()?,
            filter: confine::filter_file()?,
            network,
        })
    }

    /// Who the command runs as: `None` for an id of kite's own (as root), whose every
    /// process is the command's; else the uid (the workspace's owner, or kite's user).
    pub(super) fn runs_as(&self) -> Option<u32> {
        match self.id {
            Some(id) if id.is_kites() => None,
            Some(id) => Some(id.uid),
            // SAFETY: getuid(2) has no preconditions and cannot fail.
            None => Some(unsafe { libc::getuid() }),
        }
    }

    /// bubblewrap, set up as the module doc says, with `bounds` applied to it before it
    /// starts (and so to all it starts); the command follows `--`.
    pub(super) fn command(
        &self,
        options: &SandboxOptions,
        bounds: Option<limits::ChildLimits>,
    ) -> std::io::Result<Command> {
        use std::os::fd::AsRawFd;
        let mut line = Line::default();
        line.args([
            "--die-with-parent",
            "--new-session",
            "--unshare-all",
            "--unshare-user",
            "--disable-userns",
            "--cap-drop",
            "ALL",
        ]);
        // With a network, pasta's namespace (`network.rs`); else none but loopback.
        if let Some(net) = &self.network {
            line.arg("--share-net");
            line.args(["--perms", "0644", "--ro-bind-data"]);
            line.arg(net.resolv().to_string()).arg("/etc/resolv.conf");
            line.args(["--ro-bind-try", "/etc/ssl", "/etc/ssl"]);
        }
        line.args(["--ro-bind", "/usr", "/usr"]);
        for top in ["bin", "sbin", "lib", "lib32", "lib64"] {
            let host = Path::new("/").join(top);
            match std::fs::read_link(&host) {
                Ok(target) => {
                    line.arg("--symlink").arg(target).arg(&host);
                }
                Err(_) if host.is_dir() => {
                    line.arg("--ro-bind").arg(&host).arg(&host);
                }
                Err(_) => {}
            }
        }
        // What programs need of /etc to start, and nothing that holds secrets.
        for file in [
            "/etc/ld.so.cache",
            "/etc/ld.so.conf",
            "/etc/ld.so.conf.d",
            "/etc/alternatives",
            "/etc/localtime",
            "/etc/mime.types",
        ] {
            line.args(["--ro-bind-try", file, file]);
        }
        line.args(["--proc", "/proc", "--dev", "/dev"]);
        // /tmp and /dev/shm live in memory: each has the size of the sandbox's /tmp, and
        // nothing else in /dev can be written (its devices still can).
        for tmp in ["/dev/shm", "/tmp"] {
            if let Some(size) = options.max_tmp {
                line.arg("--size").arg(size.to_string());
            }
            line.args(["--tmpfs", tmp]);
        }
        line.args(["--remount-ro", "/dev"]);
        let Some(entry) = self.workspace.entry() else {
            return Err(std::io::Error::other(
                "the workspace has no file system of its own, so no sandbox can mount it",
            ));
        };
        // The workspace first, then each skill's folder (read-only), each with its place.
        let folders: Vec<(RawFd, String, bool)> =
            std::iter::once((entry.root, "/workspace".to_owned(), false))
                .chain(self.skills.iter().map(|(name, dir)| {
                    (dir.as_raw_fd(), format!("/workspace/skills/{name}"), true)
                }))
                .collect();
        let mut fds = [-1; 64];
        if folders.len() + 2 >= fds.len() {
            return Err(std::io::Error::other(format!(
                "a command can see at most {} skills",
                fds.len() - 3
            )));
        }
        let stage = match self.id {
            Some(_) => Stage::new(
                entry.place,
                &folders[1..].iter().map(|f| f.0).collect::<Vec<_>>(),
            ),
            None => None,
        };
        for (i, (fd, place, read_only)) in folders.iter().enumerate() {
            match &stage {
                Some(_) => {
                    let flag = if *read_only { "--ro-bind" } else { "--bind" };
                    line.arg(flag).arg(Stage::place(i)).arg(place);
                }
                None => {
                    fds[i] = *fd;
                    let flag = if *read_only {
                        "--ro-bind-fd"
                    } else {
                        "--bind-fd"
                    };
                    line.arg(flag).arg(fd.to_string()).arg(place);
                }
            }
        }
        line.args(["--chdir", "/workspace"]);
        let filter = self.filter.as_raw_fd();
        fds[folders.len()] = filter;
        line.arg("--seccomp").arg(filter.to_string());
        let bwrap = resolve(&options.bwrap);
        let mut cmd = match &self.network {
            None => Command::new(bwrap),
            Some(net) => {
                fds[folders.len() + 1] = net.resolv();
                let (pasta, wrapped) = net.wrap(&bwrap, std::mem::take(&mut line.0));
                line.0 = wrapped;
                Command::new(pasta)
            }
        };
        cmd.args(line.0);
        let id = self.id;
        let enter = (entry.mnt_fd(), entry.user_fd());
        // SAFETY: the closure calls only async-signal-safe functions: write(2) and
        // setrlimit(2) (`ChildLimits::apply`), setns(2) (`workspace::enter`), unshare(2),
        // mount(2), open_tree(2), mkdir(2), move_mount(2) and close(2) (`Stage::enter`),
        // keyctl(2), close_range(2) and fcntl(2) (`confine::Child::apply`), umask(2),
        // setgroups(2), setgid(2) and setuid(2) (`become_id`), on values copied in.
        unsafe {
            cmd.pre_exec(move || {
                if let Some(bounds) = &bounds {
                    bounds.apply()?;
                }
                // The workspace's namespaces, where its file system is mounted.
                super::workspace::enter(enter.0, enter.1)?;
                // As root, the folders are mounted where the id can reach them
                // (`stage.rs`); else their descriptors reach bubblewrap, which closes them
                // once it has mounted them: the command never holds them. Nothing else
                // kite holds reaches it.
                if let Some(stage) = &stage {
                    stage.enter()?;
                }
                confine::Child {
                    keep: &fds,
                    filter: None,
                }
                .apply()?;
                // What the command makes is its own alone.
                libc::umask(0o077);
                match id {
                    Some(id) => identity::become_id(id),
                    None => Ok(()),
                }
            });
        }
        Ok(cmd)
    }
}

/// `program` as a path: as it is when it names a folder, else the first executable file of
/// that name on kite's own `PATH` (the command's `PATH` is a different, shorter one).
fn resolve(program: &Path) -> PathBuf {
    if program.components().count() > 1 {
        return program.to_owned();
    }
    std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .map(|dir| dir.join(program))
        .find(|p| {
            use std::os::unix::fs::PermissionsExt;
            p.metadata()
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
        .unwrap_or_else(|| program.to_owned())
}

/// Makes `skills/` and `skills/NAME` in the workspace real folders, for bubblewrap to mount
/// the skills on: a link or file an earlier command left there in their place is removed
/// first, so that bubblewrap never follows it out of the workspace. Every step is taken
/// relative to the workspace's own handle and never through a link (cap-std), so a
/// command that swaps in a link meanwhile cannot lead kite, as root, anywhere else.
fn mount_points(
    workspace: &Workspace,
    skills: &[(String, PathBuf)],
    id: Option<Id>,
) -> std::io::Result<()> {
    use cap_std::fs::{Dir, DirBuilder, DirBuilderExt as _, OpenOptions, OpenOptionsExt as _};
    let ws = Dir::from_std_file(workspace.root().try_clone()?);
    let real_dir = |rel: &Path| -> std::io::Result<()> {
        match ws.symlink_metadata(rel) {
            Ok(m) if m.is_dir() => return Ok(()),
            Ok(_) => ws.remove_file(rel)?,
            Err(_) => {}
        }
        ws.create_dir_with(rel, DirBuilder::new().mode(0o700))?;
        if let Some(id) = id {
            let made = ws.open_with(
                rel,
                OpenOptions::new()
                    .read(true)
                    .custom_flags(libc::O_DIRECTORY | libc::O_NOFOLLOW),
            )?;
            std::os::unix::fs::fchown(&made, Some(id.uid), Some(id.gid))?;
        }
        Ok(())
    };
    let dir = Path::new("skills");
    real_dir(dir)?;
    for (name, _) in skills {
        real_dir(&dir.join(name))?;
    }
    Ok(())
}
