//! What `/proc` says about the machine and our processes: CPU clock ticks of a process, of the
//! children this tool has waited for (wrk's CPU), of every core; resident memory; the load
//! average; the open-files limit. Linux only, as the benchmarks are.

use std::sync::OnceLock;
use std::time::Instant;

/// Clock ticks per second (`getconf CLK_TCK`; 100 on Linux unless it says otherwise).
pub fn ticks_per_s() -> f64 {
    static HZ: OnceLock<f64> = OnceLock::new();
    *HZ.get_or_init(|| {
        std::process::Command::new("getconf")
            .arg("CLK_TCK")
            .output()
            .ok()
            .and_then(|o| String::from_utf8_lossy(&o.stdout).trim().parse().ok())
            .unwrap_or(100.0)
    })
}

/// The fields of `/proc/<pid>/stat` after the command name (field 3, the state, is index 0).
fn stat_fields(pid: &str) -> Option<Vec<u64>> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, rest) = text.rsplit_once(')')?;
    Some(
        rest.split_whitespace()
            .map(|f| f.parse().unwrap_or(0))
            .collect(),
    )
}

/// User + system ticks a process has used (every thread); 0 once it is gone.
pub fn process_ticks(pid: u32) -> u64 {
    stat_fields(&pid.to_string()).map_or(0, |f| f[11] + f[12])
}

/// This process's own user + system ticks.
pub fn own_ticks() -> u64 {
    stat_fields("self").map_or(0, |f| f[11] + f[12])
}

/// User + system ticks of the children this process has waited for (`cutime + cstime`): read
/// before and after a wrk run, their difference is wrk's CPU.
pub fn children_ticks() -> u64 {
    stat_fields("self").map_or(0, |f| f[13] + f[14])
}

/// Busy ticks of every core (user, nice, system, irq, softirq) from `/proc/stat`.
pub fn busy_ticks() -> u64 {
    let text = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    let first = text.lines().next().unwrap_or_default();
    first
        .split_whitespace()
        .skip(1)
        .enumerate()
        .filter(|(i, _)| matches!(i, 0 | 1 | 2 | 5 | 6))
        .map(|(_, v)| v.parse::<u64>().unwrap_or(0))
        .sum()
}

/// The resident set size of a process in kB.
pub fn rss_kb(pid: u32) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
}

/// The 1-, 5- and 15-minute load averages, as `/proc/loadavg` writes them.
pub fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .unwrap_or_default()
        .split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" ")
}

/// The 1-minute load average.
pub fn load1() -> String {
    loadavg()
        .split_whitespace()
        .next()
        .unwrap_or_default()
        .to_owned()
}

/// The soft limit on open files (sockets count), which children inherit.
pub fn open_files_limit() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/self/limits").ok()?;
    let line = text.lines().find(|l| l.starts_with("Max open files"))?;
    line.split_whitespace().nth(3)?.parse().ok()
}

/// Ticks read together: every core's busy ticks, ours, the clock, and each watched process's.
#[derive(Clone, Debug)]
pub struct CpuSample {
    busy: u64,
    ours: u64,
    at: Instant,
    pub each: Vec<u64>,
}

impl CpuSample {
    /// Samples `pids` (the processes whose CPU we report) and this tool itself, whose ticks
    /// count as ours but not in `each`.
    pub fn take(pids: &[u32]) -> Self {
        let each: Vec<u64> = pids.iter().map(|&pid| process_ticks(pid)).collect();
        Self {
            busy: busy_ticks(),
            ours: each.iter().sum::<u64>() + own_ticks(),
            at: Instant::now(),
            each,
        }
    }

    /// Cores used by processes not ours between `self` and `later`; `extra_ticks` are ours
    /// but not watched (wrk's).
    pub fn others_cores(&self, later: &Self, extra_ticks: u64) -> f64 {
        let busy = later.busy.saturating_sub(self.busy) as f64;
        let ours = later.ours.saturating_sub(self.ours) as f64 + extra_ticks as f64;
        let seconds = later.at.duration_since(self.at).as_secs_f64();
        if seconds <= 0.0 {
            return 0.0;
        }
        ((busy - ours) / ticks_per_s() / seconds).max(0.0)
    }

    /// Each watched process's CPU per request in µs between `self` and `later`.
    pub fn per_request_us(&self, later: &Self, requests: u64) -> Vec<f64> {
        self.each
            .iter()
            .zip(&later.each)
            .map(|(a, b)| {
                b.saturating_sub(*a) as f64 / ticks_per_s() / requests.max(1) as f64 * 1e6
            })
            .collect()
    }
}
