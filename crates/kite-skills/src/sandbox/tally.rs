//! Keeping a whole command within its memory and CPU where no cgroup does (an ordinary
//! user's, with no delegated hierarchy): every [`EVERY`], the memory of all its processes
//! (their private resident pages; the files they map are the machine's, and `/tmp` has a
//! size of its own) and the CPU time they have used are added up from `/proc`, and past
//! either cap the command is stopped. Each process also carries the same caps as rlimits,
//! so that no one process passes them between two looks.
//!
//! A command's processes are the descendants of the process kite started (bubblewrap, whose
//! process namespace keeps orphans among them, or the shell) and the members of its process
//! group.

use std::collections::{HashMap, HashSet};
use std::time::Duration;

/// How often the command is added up.
const EVERY: Duration = Duration::from_millis(100);

/// Which cap the command passed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Past {
    /// Its processes held more than this many bytes together.
    Memory(u64),
    /// Its processes used more than this much CPU time together.
    Cpu(Duration),
}

/// Resolves once the command started as `pid` passes `memory` or `cpu` (never, with
/// neither).
pub(super) async fn watch(pid: Option<u32>, memory: Option<u64>, cpu: Option<Duration>) -> Past {
    let Some(pid) = pid.filter(|_| memory.is_some() || cpu.is_some()) else {
        return std::future::pending().await;
    };
    loop {
        tokio::time::sleep(EVERY).await;
        let Ok(Some(used)) = tokio::task::spawn_blocking(move || Used::of(pid)).await else {
            continue;
        };
        if let Some(max) = memory
            && used.memory > max
        {
            return Past::Memory(max);
        }
        if let Some(max) = cpu
            && used.cpu > max
        {
            return Past::Cpu(max);
        }
    }
}

/// What a command's processes use together.
#[derive(Debug, Default)]
struct Used {
    memory: u64,
    cpu: Duration,
}

/// One process as `/proc/PID/stat` and `statm` tell it.
struct Process {
    parent: u32,
    group: u32,
    /// Clock ticks of CPU, its own and its reaped children's.
    ticks: u64,
}

impl Used {
    /// What the processes of the command started as `pid` use now: `None` once it is gone.
    fn of(pid: u32) -> Option<Used> {
        let all = processes();
        all.get(&pid)?;
        let mut children: HashMap<u32, Vec<u32>> = HashMap::new();
        for (p, process) in &all {
            children.entry(process.parent).or_default().push(*p);
        }
        let mut mine: HashSet<u32> = all
            .iter()
            .filter(|(_, p)| p.group == pid)
            .map(|(p, _)| *p)
            .collect();
        let (mut seen, mut stack) = (HashSet::new(), vec![pid]);
        while let Some(p) = stack.pop() {
            if seen.insert(p) {
                mine.insert(p);
                stack.extend(children.get(&p).into_iter().flatten());
            }
        }
        // SAFETY: sysconf(3) takes a plain name.
        let (page, hz) = unsafe {
            (
                libc::sysconf(libc::_SC_PAGESIZE),
                libc::sysconf(libc::_SC_CLK_TCK),
            )
        };
        let (page, hz) = (page.max(1) as u64, hz.max(1) as u64);
        let mut used = Used::default();
        let mut ticks = 0u64;
        for p in &mine {
            ticks = ticks.saturating_add(all.get(p).map_or(0, |p| p.ticks));
            used.memory = used.memory.saturating_add(private_pages(*p) * page);
        }
        used.cpu = Duration::from_millis(ticks.saturating_mul(1000) / hz);
        Some(used)
    }
}

/// Every process on the machine, by id.
fn processes() -> HashMap<u32, Process> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return HashMap::new();
    };
    dir.flatten()
        .filter_map(|e| {
            let pid: u32 = e.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(e.path().join("stat")).ok()?;
            Some((pid, parse_stat(&stat)?))
        })
        .collect()
}

/// The fields of `/proc/PID/stat` after the command's name (which may hold spaces and
/// parentheses, so it is cut at the last `)`).
fn parse_stat(stat: &str) -> Option<Process> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // After the name: state(0) ppid(1) pgrp(2) ... utime(11) stime(12) cutime(13) cstime(14).
    let number = |i: usize| fields.get(i)?.parse::<u64>().ok();
    Some(Process {
        parent: u32::try_from(number(1)?).ok()?,
        group: u32::try_from(number(2)?).ok()?,
        ticks: [11, 12, 13, 14]
            .iter()
            .filter_map(|i| number(*i))
            .fold(0u64, u64::saturating_add),
    })
}

/// A process's resident pages that are its own: resident less shared (`statm`).
fn private_pages(pid: u32) -> u64 {
    let Ok(statm) = std::fs::read_to_string(format!("/proc/{pid}/statm")) else {
        return 0;
    };
    let mut fields = statm.split_whitespace().skip(1);
    let resident: u64 = fields.next().and_then(|n| n.parse().ok()).unwrap_or(0);
    let shared: u64 = fields.next().and_then(|n| n.parse().ok()).unwrap_or(0);
    resident.saturating_sub(shared)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stat_line_is_read_past_a_name_with_spaces_and_parentheses() {
        let line = "4242 (a (b) c) S 7 4242 4242 0 -1 4194560 100 0 0 0 30 12 5 3 20 0 1 0";
        let p = parse_stat(line).unwrap();
        assert_eq!((p.parent, p.group, p.ticks), (7, 4242, 50));
    }

    #[test]
    fn this_process_is_counted() {
        let used = Used::of(std::process::id()).unwrap();
        assert!(used.memory > 0);
        assert!(Used::of(u32::MAX).is_none());
    }
}
