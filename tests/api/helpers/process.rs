//! The real binary as a child process: `dynapage <command>` to run to its end, and
//! `ServerProcess`, `dynapage serve` on a free port for the tests that need a process of its own
//! (its own `/metrics`, its memory, a kill, what it logs) rather than the in-process `TestApp`.

use std::ops::Deref;
use std::process::{ExitStatus, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::AsyncBufReadExt;

use crate::helpers::{Api, RATE_LIMITS_OFF};

/// `dynapage <command>` as a quiet child process (warnings only, no output kept), killed when
/// its handle is dropped; add arguments and environment, then spawn.
pub fn dynapage_command(command: &str) -> tokio::process::Command {
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_dynapage"));
    child
        .arg(command)
        .env("RUST_LOG", "warn")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true);
    child
}

/// What `dynapage serve --listen 127.0.0.1:0 --demo-comments 0 <args>` writes on standard error
/// when it refuses to start: it must end by itself, unsuccessfully, within 30 seconds.
pub async fn serve_fails_to_start(args: &[&str]) -> String {
    let child = dynapage_command("serve")
        .args(["--listen", "127.0.0.1:0", "--demo-comments", "0"])
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the dynapage binary runs");
    let output = tokio::time::timeout(Duration::from_secs(30), child.wait_with_output())
        .await
        .expect("serve stops at start-up instead of serving")
        .expect("its output");
    assert_ne!(output.status.code(), Some(0), "{output:?}");
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// Sends SIGTERM to `child` and waits at most `within` for it to exit; its exit status.
pub async fn terminate(child: &mut tokio::process::Child, within: Duration) -> ExitStatus {
    let pid = child.id().expect("the process runs").to_string();
    let signalled = tokio::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .await
        .expect("kill runs");
    assert!(signalled.success());
    tokio::time::timeout(within, child.wait())
        .await
        .expect("the process stops in time")
        .expect("exit status")
}

/// A finished command's standard output.
pub fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// A finished command's exit code (`None` when a signal ended it).
pub fn exit_code(output: &Output) -> Option<i32> {
    output.status.code()
}

/// A free port on 127.0.0.1 (free when asked: the process that binds it next gets it).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

/// The resident memory of process `pid`, in MiB (`VmRSS` of `/proc/<pid>/status`).
pub fn rss_mib(pid: u32) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("a process");
    let kib: f64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS");
    kib / 1024.0
}

/// `dynapage serve` as a child process on a free port, killed when dropped. It is an [`Api`]
/// (through `Deref`) once `/healthz` answers.
pub struct ServerProcess {
    pub child: tokio::process::Child,
    api: Api,
    /// Its standard error so far, when it is collected.
    log: Option<Arc<Mutex<String>>>,
}

impl Deref for ServerProcess {
    type Target = Api;

    fn deref(&self) -> &Api {
        &self.api
    }
}

impl ServerProcess {
    /// `dynapage serve --listen 127.0.0.1:<free port> <args>`, nothing added.
    pub async fn start(args: &[&str]) -> Self {
        Self::start_from(dynapage_command("serve"), args).await
    }

    /// [`start`](Self::start) with the response cache off unless `args` set it: a repeat the
    /// cache answers costs a point, not its complexity, and these servers price every request.
    pub async fn uncached(args: &[&str]) -> Self {
        let cache_off = ["--response-cache-bytes", "0"];
        let cache = if args.iter().any(|a| a.starts_with("--response-cache")) {
            &[][..]
        } else {
            &cache_off[..]
        };
        Self::start(&[cache, args].concat()).await
    }

    /// [`uncached`](Self::uncached) with no demo comments and no budgets, then `args`: for the
    /// WebSocket tests, whose clients subscribe and write freely.
    pub async fn unmetered(args: &[&str]) -> Self {
        Self::uncached(&[&["--demo-comments", "0"][..], &RATE_LIMITS_OFF, args].concat()).await
    }

    /// `command` (a `dynapage serve`, however it is wrapped) given `--listen` on a free port and
    /// `args`, once `/healthz` answers; its standard streams are left as `command` set them.
    pub async fn start_from(command: tokio::process::Command, args: &[&str]) -> Self {
        let server = Self::spawned(command, args);
        server.api.until_healthy().await;
        server
    }

    /// [`start_from`](Self::start_from) without waiting: the process runs, and may not answer
    /// yet (see [`Api::becomes_healthy`]).
    pub fn spawned(mut command: tokio::process::Command, args: &[&str]) -> Self {
        let listen = format!("127.0.0.1:{}", free_port());
        let child = command
            .args(["--listen", &listen])
            .args(args)
            .spawn()
            .expect("dynapage serve starts");
        Self {
            child,
            api: Api::at(&format!("http://{listen}")),
            log: None,
        }
    }

    /// [`start`](Self::start) logging at `rust_log` (`RUST_LOG`) to a standard error that is
    /// collected, for the tests that read what the server says.
    pub async fn logging(args: &[&str], rust_log: &str) -> Self {
        let listen = format!("127.0.0.1:{}", free_port());
        let mut child = dynapage_command("serve")
            .args(["--listen", &listen])
            .args(args)
            .env("RUST_LOG", rust_log)
            .env("NO_COLOR", "1")
            .stderr(Stdio::piped())
            .spawn()
            .expect("serve starts");
        let log = Arc::new(Mutex::new(String::new()));
        let mut lines = tokio::io::BufReader::new(child.stderr.take().expect("stderr")).lines();
        let sink = log.clone();
        tokio::spawn(async move {
            while let Ok(Some(line)) = lines.next_line().await {
                let mut log = sink.lock().expect("log");
                log.push_str(&line);
                log.push('\n');
            }
        });
        let server = Self {
            child,
            api: Api::at(&format!("http://{listen}")),
            log: Some(log),
        };
        assert!(
            server.becomes_healthy().await,
            "serve did not become healthy: {}",
            server.log()
        );
        server
    }

    /// What the server has logged so far ([`logging`](Self::logging) servers only).
    pub fn log(&self) -> String {
        let log = self.log.as_ref().expect("a logging server");
        log.lock().expect("log").clone()
    }

    /// How many lines of the log contain `text`.
    pub fn lines_with(&self, text: &str) -> usize {
        self.log()
            .lines()
            .filter(|line| line.contains(text))
            .count()
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.id().expect("the server runs")
    }

    /// SIGTERM, and the exit status within `within`.
    pub async fn terminate(&mut self, within: Duration) -> ExitStatus {
        terminate(&mut self.child, within).await
    }
}
