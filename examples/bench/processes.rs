//! Long-lived child processes (servers, DynamoDB Local, redis-server, `dynapage sync`): each a
//! [`Process`] of the launcher the tests and benches share (`tests/api/support/services.rs`),
//! in a process group of its own, so an interrupt reaches only this tool, which then stops them
//! in order; stopped (SIGTERM, then SIGKILL after 5 s) when their handle is dropped, so an
//! error or an interrupt anywhere still stops everything, and by their watchdog if this tool is
//! killed outright. Also waiting for readiness over the network, and programs that must be
//! installed. It knows nothing of what the processes are.

use std::time::{Duration, Instant};

use anyhow::bail;

pub use crate::services::{Process, free_port};

/// Starts `command` with its stdout and stderr in `log`.
pub fn spawn(
    name: &str,
    command: std::process::Command,
    log: &std::path::Path,
) -> anyhow::Result<Process> {
    Ok(Process::spawn(name, command, Some(log))?)
}

/// Retries `ready` every 200 ms until it answers true, for at most `timeout`; fails early if
/// `process` exits meanwhile.
pub async fn wait_until<F, Fut>(
    what: &str,
    timeout: Duration,
    mut process: Option<&mut Process>,
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
        if let Some(process) = process.as_deref_mut() {
            process.ensure_running()?;
        }
        if Instant::now() >= deadline {
            let tail = process.map(|p| p.log_tail(20)).unwrap_or_default();
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
