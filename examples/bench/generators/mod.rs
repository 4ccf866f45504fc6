//! Load generators of our own, for what wrk cannot send: the raw DynamoDB (and Redis) calls a
//! page costs without dynapage, WebSocket subscribers with writes through the API, and timed
//! writes watched through a CDN. Each is
//! also a subcommand, so a benchmark can run it as a separate process (confined to a core with
//! `taskset`, its CPU apart from the tool's).

pub mod live_load;
pub mod raw_query;
pub mod write_to_fresh;

/// Runs this tool's own subcommand `args` as a child process (optionally under `taskset -c
/// CPUS`) and returns its stdout; fails on a non-zero exit.
pub async fn run_self(args: &[String], cpus: Option<&str>) -> anyhow::Result<String> {
    use anyhow::Context as _;
    let exe = std::env::current_exe().context("the path of this tool")?;
    let mut command = match cpus {
        Some(cpus) => {
            let mut c = tokio::process::Command::new("taskset");
            c.args(["-c", cpus]).arg(exe);
            c
        }
        None => tokio::process::Command::new(exe),
    };
    let output = command
        .args(args)
        .stderr(std::process::Stdio::inherit())
        .kill_on_drop(true)
        .output()
        .await
        .with_context(|| format!("running bench {}", args.join(" ")))?;
    anyhow::ensure!(
        output.status.success(),
        "bench {} failed ({})",
        args.first().map_or("", String::as_str),
        output.status
    );
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}
