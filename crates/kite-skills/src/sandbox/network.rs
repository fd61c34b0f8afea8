//! A command's network, when the options allow one: the internet, and nothing of the host
//! or of private networks.
//!
//! The sandbox never shares the host's network. `pasta` (Debian's `passt`) gives it a
//! network namespace of its own whose traffic it carries out through ordinary sockets of
//! kite's user, with no route to the host's loopback (`--no-map-gw`, and no port of the
//! host forwarded in: `-t`, `-u`, `-T`, `-U none`). Before bubblewrap starts in that
//! namespace, `ip rule` sets `prohibit` rules that no command can lift (it has no
//! capability): every loopback, private, link-local, shared, multicast and reserved range
//! ([`BLOCKED`]), the host's own addresses and the networks it sits on, and the v6 forms
//! that lead to v4 ones (mapped, NAT64, 6to4). A connection there fails at once with
//! "Permission denied"; networks the options name ([`Cidr`], `allow_networks`) go through.
//! Names resolve through pasta's forwarder, the only address of its range let through (UDP
//! port 53), which asks the host's resolvers.

use std::ffi::OsString;
use std::net::IpAddr;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::path::{Path, PathBuf};

/// Where names are resolved inside: pasta forwards it to the host's resolvers.
const DNS: &str = "169.254.1.53";

/// What a command never reaches unless the options name it.
const BLOCKED: &[&str] = &[
    "0.0.0.0/8",
    "10.0.0.0/8",
    "100.64.0.0/10",
    "127.0.0.0/8",
    "169.254.0.0/16",
    "172.16.0.0/12",
    "192.0.0.0/24",
    "192.168.0.0/16",
    "198.18.0.0/15",
    "224.0.0.0/4",
    "240.0.0.0/4",
    "::/128",
    "::1/128",
    "::ffff:0:0/96",
    "64:ff9b::/96",
    "64:ff9b:1::/48",
    "2002::/16",
    "fc00::/7",
    "fe80::/10",
    "ff00::/8",
];

/// A network: an address and how many of its leading bits count (`10.99.0.0/16`,
/// `fd00::/8`; a bare address is the one host).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cidr {
    addr: IpAddr,
    prefix: u8,
}

impl std::str::FromStr for Cidr {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let (addr, prefix) = match s.trim().split_once('/') {
            Some((a, p)) => (a, Some(p)),
            None => (s.trim(), None),
        };
        let addr: IpAddr = addr
            .parse()
            .map_err(|_| format!("{s:?} is not a network (as 10.0.0.0/8 or fd00::/8)"))?;
        let most = if addr.is_ipv4() { 32 } else { 128 };
        let prefix = match prefix {
            None => most,
            Some(p) => p
                .parse::<u8>()
                .ok()
                .filter(|p| *p <= most)
                .ok_or_else(|| format!("{s:?}: the length after `/` is 0 to {most}"))?,
        };
        Ok(Cidr { addr, prefix })
    }
}

impl std::fmt::Display for Cidr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.addr, self.prefix)
    }
}

impl Cidr {
    /// The network `addr` lies in, `prefix` bits long (its host bits cleared).
    fn network(addr: IpAddr, prefix: u8) -> Self {
        let addr = match addr {
            IpAddr::V4(a) => {
                let mask = u32::MAX.checked_shl(32 - u32::from(prefix)).unwrap_or(0);
                IpAddr::V4((u32::from(a) & mask).into())
            }
            IpAddr::V6(a) => {
                let mask = u128::MAX.checked_shl(128 - u32::from(prefix)).unwrap_or(0);
                IpAddr::V6((u128::from(a) & mask).into())
            }
        };
        Cidr { addr, prefix }
    }
}

/// What a command with a network needs: pasta and ip, found, and its `/etc/resolv.conf`.
pub(super) struct Net {
    pasta: PathBuf,
    ip: PathBuf,
    resolv: OwnedFd,
    allowed: Vec<Cidr>,
}

impl Net {
    /// The network for commands that may reach `allowed` beyond the internet; `Err` says
    /// what is missing.
    pub(super) fn new(allowed: &[Cidr]) -> std::io::Result<Self> {
        let missing = |what: &str, package: &str| {
            std::io::Error::other(format!(
                "scripts may use the network, but `{what}` is not installed: it gives them the \
                 internet and nothing of this machine (Debian and Ubuntu: apt install {package})"
            ))
        };
        let pasta = find("pasta").ok_or_else(|| missing("pasta", "passt"))?;
        let ip = find("ip").ok_or_else(|| missing("ip", "iproute2"))?;
        let tun = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open("/dev/net/tun");
        if let Err(e) = tun {
            return Err(std::io::Error::other(format!(
                "scripts may use the network, but /dev/net/tun cannot be opened ({e}): pasta \
                 needs it (its usual mode is 0666)"
            )));
        }
        let resolv = super::confine::memory_file(
            c"kite-resolv.conf",
            format!("nameserver {DNS}\n").as_bytes(),
        )?;
        Ok(Self {
            pasta,
            ip,
            resolv,
            allowed: allowed.to_vec(),
        })
    }

    /// The descriptor of `/etc/resolv.conf`'s text, for bubblewrap to keep.
    pub(super) fn resolv(&self) -> RawFd {
        self.resolv.as_raw_fd()
    }

    /// The command line that runs `bwrap` with `args` inside pasta's namespace, once the
    /// rules are in place.
    pub(super) fn wrap(&self, bwrap: &Path, args: Vec<OsString>) -> (PathBuf, Vec<OsString>) {
        let mut line: Vec<OsString> = [
            "--config-net",
            "--quiet",
            "-t",
            "none",
            "-u",
            "none",
            "-T",
            "none",
            "-U",
            "none",
            "--no-map-gw",
            "--dns-forward",
            DNS,
            "--",
            "/bin/sh",
            "-c",
        ]
        .iter()
        .map(OsString::from)
        .collect();
        line.push(self.script().into());
        line.push(bwrap.as_os_str().to_owned());
        line.extend(args);
        (self.pasta.clone(), line)
    }

    /// The shell script run as pasta's namespace's root: the rules, then bubblewrap.
    fn script(&self) -> String {
        let (mut v4, mut v6) = (Vec::new(), Vec::new());
        let mut push = |cidr: &Cidr, rule: String| match cidr.addr {
            IpAddr::V4(_) => v4.push(rule),
            IpAddr::V6(_) => v6.push(rule),
        };
        for cidr in &self.allowed {
            push(cidr, format!("rule add prio 100 to {cidr} lookup main"));
        }
        let dns: Cidr = format!("{DNS}/32").parse().expect("a network");
        push(
            &dns,
            format!("rule add prio 100 to {dns} ipproto udp dport 53 lookup main"),
        );
        let mut blocked: Vec<Cidr> = BLOCKED.iter().filter_map(|c| c.parse().ok()).collect();
        blocked.extend(host_networks());
        blocked.sort_by_key(|c| (c.addr, c.prefix));
        blocked.dedup();
        for cidr in &blocked {
            push(cidr, format!("rule add prio 1000 to {cidr} prohibit"));
        }
        let ip = self.ip.display();
        // Every value here is an address kite printed or a path it found: nothing to quote.
        format!(
            "printf '%s\\n' {v4} | {ip} -4 -batch - || exit 125\n\
             if [ -e /proc/net/if_inet6 ]; then printf '%s\\n' {v6} | {ip} -6 -batch - || exit 125; fi\n\
             exec \"$0\" \"$@\"",
            v4 = quoted(&v4),
            v6 = quoted(&v6),
        )
    }
}

fn quoted(lines: &[String]) -> String {
    lines
        .iter()
        .map(|l| format!("'{l}'"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The first executable `name` in kite's `PATH` or the usual system folders.
fn find(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/sbin", "/sbin", "/usr/bin", "/bin"].map(PathBuf::from))
        .map(|dir| dir.join(name))
        .find(|p| {
            use std::os::unix::fs::PermissionsExt;
            p.metadata()
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
        .filter(|p| {
            p.to_str()
                .is_some_and(|s| !s.contains(['\'', '"', '\\', '$', '`']))
        })
}

/// The host's own addresses, and the networks its interfaces sit on (getifaddrs(3)).
fn host_networks() -> Vec<Cidr> {
    let mut out = Vec::new();
    let mut list: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: getifaddrs(3) fills `list`, freed below with freeifaddrs(3).
    if unsafe { libc::getifaddrs(&mut list) } != 0 {
        return out;
    }
    let mut at = list;
    while !at.is_null() {
        // SAFETY: a node of the list getifaddrs(3) made, read before it is freed.
        let node = unsafe { &*at };
        // SAFETY: as above; the address and mask point at sockaddrs of their family.
        if let (Some(addr), mask) = unsafe { (ip_of(node.ifa_addr), ip_of(node.ifa_netmask)) } {
            let most = if addr.is_ipv4() { 32 } else { 128 };
            out.push(Cidr { addr, prefix: most });
            if let Some(mask) = mask {
                let prefix = match mask {
                    IpAddr::V4(m) => u32::from(m).leading_ones(),
                    IpAddr::V6(m) => u128::from(m).leading_ones(),
                };
                if prefix > 0 {
                    out.push(Cidr::network(addr, prefix as u8));
                }
            }
        }
        at = node.ifa_next;
    }
    // SAFETY: the list getifaddrs(3) made, freed once.
    unsafe { libc::freeifaddrs(list) };
    out
}

/// The address a sockaddr holds, when it is an IP one.
///
/// # Safety
/// `sa` is null or points at a sockaddr of the size its family gives.
unsafe fn ip_of(sa: *const libc::sockaddr) -> Option<IpAddr> {
    if sa.is_null() {
        return None;
    }
    // SAFETY: the caller's promise.
    match i32::from(unsafe { (*sa).sa_family }) {
        libc::AF_INET => {
            // SAFETY: an AF_INET sockaddr is a sockaddr_in.
            let sin = unsafe { &*sa.cast::<libc::sockaddr_in>() };
            Some(IpAddr::V4(u32::from_be(sin.sin_addr.s_addr).into()))
        }
        libc::AF_INET6 => {
            // SAFETY: an AF_INET6 sockaddr is a sockaddr_in6.
            let sin6 = unsafe { &*sa.cast::<libc::sockaddr_in6>() };
            Some(IpAddr::V6(sin6.sin6_addr.s6_addr.into()))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn networks_are_read_and_refused_as_they_should_be() {
        let c: Cidr = "10.99.0.0/16".parse().unwrap();
        assert_eq!(c.to_string(), "10.99.0.0/16");
        assert_eq!(
            "fd00::1".parse::<Cidr>().unwrap().to_string(),
            "fd00::1/128"
        );
        assert_eq!(
            Cidr::network("192.168.7.9".parse().unwrap(), 24).to_string(),
            "192.168.7.0/24"
        );
        for bad in ["10.0.0.0/33", "example.com", "1.2.3.4/x", "'; rm -rf /"] {
            assert!(bad.parse::<Cidr>().is_err(), "{bad}");
        }
    }

    #[test]
    fn the_host_is_blocked_by_its_own_addresses() {
        let host = host_networks();
        assert!(
            host.iter().any(|c| c.to_string() == "127.0.0.1/32"),
            "{host:?}"
        );
    }
}
