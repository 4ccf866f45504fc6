//! Long-lived child processes (servers, DynamoDB Local, redis-server): started in a process
//! group of their own, so an interrupt reaches only this tool, which then stops them in order;
//! stopped with SIGTERM, then SIGKILL after 5 s, when their handle is dropped, so an error or
//! an interrupt anywhere still stops everything. Also free ports and waiting for readiness.
//! It knows nothing of what the processes are.

use std::fs::File;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};

/// A running child process, stopped when dropped.
#[derive(Debug)]
pub struct Service {
    name: String,
    child: Child,
    log: PathBuf,
}

impl Service {
    /// Starts `command` with its stdout and stderr in `log`.
    pub fn spawn(name: &str, mut command: Command, log: &Path) -> anyhow::Result<Self> {
        let out = File::create(log).with_context(|| format!("creating {}", log.display()))?;
        let err = out.try_clone()?;
        command
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .process_group(0);
        let child = command
            .spawn()
            .with_context(|| format!("starting {name} ({:?})", command.get_program()))?;
        Ok(Self {
            name: name.to_owned(),
            child,
            log: log.to_owned(),
        })
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Fails, with the end of its log, if the process has exited.
    pub fn ensure_running(&mut self) -> anyhow::Result<()> {
        if let Some(status) = self.child.try_wait()? {
            bail!(
                "{} exited ({status}); the end of {}:\n{}",
                self.name,
                self.log.display(),
                self.log_tail(20)
            );
        }
        Ok(())
    }

    /// The last `lines` lines of the process's log.
    pub fn log_tail(&self, lines: usize) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let all: Vec<&str> = text.lines().collect();
        all[all.len().saturating_sub(lines)..].join("\n")
    }

    /// SIGTERM, then SIGKILL if it is still running after 5 s.
    pub fn stop(mut self) {
        self.terminate();
    }

    fn terminate(&mut self) {
        if matches!(self.child.try_wait(), Ok(Some(_))) {
            return;
        }
        // std sends only SIGKILL; the servers drain and exit on SIGTERM.
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .stderr(Stdio::null())
            .status();
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if matches!(self.child.try_wait(), Ok(Some(_))) {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Service {
    fn drop(&mut self) {
        self.terminate();
    }
}

/// A port free on 127.0.0.1 right now.
pub fn free_port() -> anyhow::Result<u16> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    Ok(listener.local_addr()?.port())
}

/// Retries `ready` every 200 ms until it answers true, for at most `timeout`; fails early if
/// `service` exits meanwhile.
pub async fn wait_until<F, Fut>(
    what: &str,
    timeout: Duration,
    mut service: Option<&mut Service>,
    mut ready: F,
) -> anyhow::Result<()>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = Instant::now() + timeout;
    loop {
        if ready().await {
            return Ok(());
        }
        if let Some(service) = service.as_deref_mut() {
            service.ensure_running()?;
        }
        if Instant::now() >= deadline {
            let tail = service.map(|s| s.log_tail(20)).unwrap_or_default();
            bail!("{what} did not come up within {timeout:?}\n{tail}");
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Fails with an installation hint when `program` is not on the PATH.
pub fn require(program: &str, hint: &str) -> anyhow::Result<()> {
    let found = std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(program).is_file()));
    if !found {
        bail!("{program} is missing: {hint}");
    }
    Ok(())
}

/// Resolves on SIGINT or SIGTERM, with the signal's name.
pub async fn interrupted() -> &'static str {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut int), Ok(mut term)) = (
        signal(SignalKind::interrupt()),
        signal(SignalKind::terminate()),
    ) else {
        return std::future::pending().await;
    };
    tokio::select! {
        _ = int.recv() => "SIGINT",
        _ = term.recv() => "SIGTERM",
    }
}
