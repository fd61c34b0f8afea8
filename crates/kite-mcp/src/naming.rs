//! Naming: the names the model sees for the servers' tools. Every name is sanitized to what
//! every provider accepts, and a clash (two servers, or a server and a tool already in the
//! set) is settled by the hub's [`Prefixing`] policy.

use crate::session::RemoteTool;
use std::collections::{HashMap, HashSet};
use std::time::Duration;

/// When tool names get their server's prefix (`prefix_name`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Prefixing {
    /// Only names offered by more than one server.
    #[default]
    OnClash,
    /// Every name.
    Always,
    /// Never (a clash leaves the first server's tool).
    Never,
}

/// A tool a live server offers, before naming.
pub(crate) struct Offered<'a> {
    pub server: &'a str,
    /// The server's prefix: its configured one, or its id.
    pub prefix: &'a str,
    pub remote: &'a RemoteTool,
    pub timeout: Duration,
}

/// A tool as the model sees it.
#[derive(Clone)]
pub(crate) struct Exposed {
    pub name: String,
    pub server: String,
    pub remote: RemoteTool,
    pub timeout: Duration,
}

/// The names of `offered` beside the `reserved` ones: a name offered twice, or already
/// reserved, is a clash.
pub(crate) fn expose(
    offered: Vec<Offered>,
    prefixing: Prefixing,
    reserved: &HashSet<String>,
) -> Vec<Exposed> {
    let bases: Vec<String> = offered.iter().map(|o| sanitize(&o.remote.name)).collect();
    let mut count: HashMap<&str, usize> = HashMap::new();
    for base in &bases {
        *count.entry(base.as_str()).or_default() += 1;
    }
    let mut taken: HashSet<String> = reserved.clone();
    let mut out = Vec::new();
    for (o, base) in offered.iter().zip(&bases) {
        let clash = count[base.as_str()] > 1 || reserved.contains(base);
        let prefixed = match prefixing {
            Prefixing::Always => true,
            Prefixing::OnClash => clash,
            Prefixing::Never => false,
        };
        let name = if prefixed {
            sanitize(&format!("{}_{base}", o.prefix))
        } else {
            base.clone()
        };
        if base.is_empty() {
            tracing::warn!(server = %o.server, "a tool with an empty name; not offered");
            continue;
        }
        if !taken.insert(name.clone()) {
            tracing::warn!(server = %o.server, tool = %o.remote.name, "tool name taken; not offered");
            continue;
        }
        out.push(Exposed {
            name,
            server: o.server.to_owned(),
            remote: o.remote.clone(),
            timeout: o.timeout,
        });
    }
    out
}

/// A name every provider accepts: letters, digits, `_` and `-`, at most 64 characters.
fn sanitize(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(64)
        .collect()
}
