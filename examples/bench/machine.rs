//! The machine, commit and build a result was measured on, for the header of every result file:
//! figures mean little without them (BENCHMARKS.md compares ratios across machines, not rates).

use std::process::Command;

use crate::context::Context;

/// What the results' headers say about where they were measured.
#[derive(Debug)]
pub struct Machine {
    pub date: String,
    pub commit: String,
    pub cores: usize,
    pub cpu: String,
    pub memory_gb: u64,
    pub kernel: String,
    pub build: String,
}

impl Machine {
    pub fn describe(ctx: &Context) -> Self {
        let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
        let memory_kb: u64 = meminfo
            .lines()
            .find_map(|l| l.strip_prefix("MemTotal:"))
            .and_then(|v| v.split_whitespace().next()?.parse().ok())
            .unwrap_or(0);
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let cpu = cpuinfo
            .lines()
            .find_map(|l| l.strip_prefix("model name"))
            .and_then(|l| l.split_once(':'))
            .map_or_else(|| "unknown CPU".to_owned(), |(_, m)| m.trim().to_owned());
        Self {
            date: now(),
            commit: commit(ctx),
            cores: std::thread::available_parallelism().map_or(0, usize::from),
            cpu,
            memory_gb: memory_kb / 1024 / 1024,
            kernel: first_line("uname", &["-r"]),
            build: ctx.build_description(),
        }
    }

    /// The three header lines of a text result: the command that made it, at which commit
    /// and when; the machine and the versions of the programs it used; the build of the server.
    pub fn header(&self) -> Vec<String> {
        vec![
            format!("# {} at {}, {}", command_line(), self.commit, self.date),
            format!(
                "# {} cores, {}, {} GB, Linux {}, redis {}, {}, {}",
                self.cores,
                self.cpu,
                self.memory_gb,
                self.kernel,
                redis_version(),
                java_version(),
                wrk_version()
            ),
            format!("# {}", self.build),
        ]
    }
}

/// This run's command as a user would type it again: `cargo bench-tool` and its arguments,
/// quoted where the shell needs it.
pub fn command_line() -> String {
    let args: Vec<String> = std::env::args().skip(1).map(|a| shell_quote(&a)).collect();
    format!("cargo bench-tool {}", args.join(" "))
}

fn shell_quote(arg: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "-_./:=,@%+".contains(c);
    if !arg.is_empty() && arg.chars().all(plain) {
        arg.to_owned()
    } else {
        format!("'{}'", arg.replace('\'', "'\\''"))
    }
}

/// The current time, UTC, to the minute.
pub fn now() -> String {
    chrono::Utc::now().format("%Y-%m-%dT%H:%MZ").to_string()
}

/// The short commit hash, marked when the work tree differs from it.
fn commit(ctx: &Context) -> String {
    let hash = Command::new("git")
        .current_dir(&ctx.repo)
        .args(["rev-parse", "--short", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map_or_else(
            || "unknown".to_owned(),
            |o| String::from_utf8_lossy(&o.stdout).trim().to_owned(),
        );
    let clean = Command::new("git")
        .current_dir(&ctx.repo)
        .args([
            "diff",
            "--quiet",
            "HEAD",
            "--",
            "src",
            "Cargo.toml",
            "Cargo.lock",
        ])
        .status()
        .is_ok_and(|s| s.success());
    if clean {
        hash
    } else {
        format!("{hash} (with uncommitted changes to the server)")
    }
}

/// The first line a program prints (on stdout or stderr), or "absent".
pub fn first_line(program: &str, args: &[&str]) -> String {
    Command::new(program)
        .args(args)
        .output()
        .ok()
        .map(|o| {
            let out = if o.stdout.is_empty() {
                o.stderr
            } else {
                o.stdout
            };
            String::from_utf8_lossy(&out)
                .lines()
                .next()
                .unwrap_or_default()
                .trim()
                .to_owned()
        })
        .filter(|line| !line.is_empty())
        .unwrap_or_else(|| format!("{program}: absent"))
}

/// "7.0.15" from `redis-server --version`.
pub fn redis_version() -> String {
    let line = first_line("redis-server", &["--version"]);
    line.split_whitespace()
        .find_map(|w| w.strip_prefix("v="))
        .map_or_else(|| line.clone(), str::to_owned)
}

/// `java -version`'s first line.
pub fn java_version() -> String {
    first_line("java", &["-version"])
}

/// "wrk debian/4.1.0-3+b2" from `wrk -v`.
pub fn wrk_version() -> String {
    first_line("wrk", &["-v"])
        .split_whitespace()
        .take(2)
        .collect::<Vec<_>>()
        .join(" ")
}
