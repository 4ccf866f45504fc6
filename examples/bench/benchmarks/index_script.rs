//! The Redis index's read script as the Redis benchmarks load and call it (`index-lua-callgrind`,
//! `index-big-product`): its source at a git revision or on disk, a connection patient enough
//! for seeding and valgrind, and figures cut as the scripts before them cut them.

use std::process::Stdio;
use std::time::Duration;

use anyhow::{Context as _, bail};
use redis::aio::MultiplexedConnection;

use crate::context::Context;

/// The index's read script as of `revision` (`worktree`: the files on disk), as the scripts
/// of issue 23 loaded it: `select.lua`, `pick.lua` (which older revisions lack) and
/// `read.lua` one after the other, trailing newlines dropped.
pub fn index_script(ctx: &Context, revision: &str) -> anyhow::Result<String> {
    let dir = "src/index/redis";
    let mut source = String::new();
    for file in ["select.lua", "pick.lua", "read.lua"] {
        let path = format!("{dir}/{file}");
        if revision == "worktree" {
            source.push_str(
                &std::fs::read_to_string(ctx.repo.join(&path))
                    .with_context(|| format!("reading {path}"))?,
            );
            continue;
        }
        let output = std::process::Command::new("git")
            .current_dir(&ctx.repo)
            .args(["show", &format!("{revision}:{path}")])
            .stderr(Stdio::null())
            .output()
            .context("running git show")?;
        match (output.status.success(), file) {
            (true, _) => source.push_str(&String::from_utf8_lossy(&output.stdout)),
            (false, "pick.lua") => {} // split from select.lua after main's ce54dd4
            (false, _) => bail!("{revision} has no {path}"),
        }
    }
    Ok(source.trim_end_matches('\n').to_owned())
}

/// "the work tree (on abc1234)" or "main (abc1234)".
pub fn describe_revision(ctx: &Context, revision: &str) -> anyhow::Result<String> {
    let short = |rev: &str| -> anyhow::Result<String> {
        let output = std::process::Command::new("git")
            .current_dir(&ctx.repo)
            .args(["rev-parse", "--short", rev])
            .output()?;
        if !output.status.success() {
            bail!("no revision {rev}");
        }
        Ok(String::from_utf8_lossy(&output.stdout).trim().to_owned())
    };
    Ok(if revision == "worktree" {
        format!("the work tree (on {})", short("HEAD")?)
    } else {
        format!("{revision} ({})", short(revision)?)
    })
}

/// A connection with a long response timeout: seeding chunks and scripts under valgrind
/// outlast the default.
pub async fn long_connection(url: &str) -> anyhow::Result<MultiplexedConnection> {
    let config =
        redis::AsyncConnectionConfig::new().set_response_timeout(Some(Duration::from_secs(600)));
    Ok(redis::Client::open(url)?
        .get_multiplexed_async_connection_with_config(&config)
        .await?)
}

/// `value` cut to one decimal as `bc` with `scale=1` cuts it (not rounded).
pub fn truncated_tenths(value: f64) -> f64 {
    (value * 10.0).trunc() / 10.0
}

#[cfg(test)]
mod tests {
    use super::truncated_tenths;

    #[test]
    fn tenths_are_cut_as_bc_cuts_them() {
        assert_eq!(truncated_tenths(7.99), 7.9);
        assert_eq!(truncated_tenths(3.0), 3.0);
    }
}
