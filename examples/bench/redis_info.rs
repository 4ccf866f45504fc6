//! What Redis says about the work it did: `INFO commandstats` (calls and time per command,
//! the commands a script makes included) and `INFO cpu` (the server's own CPU seconds), reset
//! with `CONFIG RESETSTAT` around a measured run.

use redis::aio::MultiplexedConnection;

/// One command's line of `INFO commandstats`.
#[derive(Clone, Debug, PartialEq)]
pub struct CommandStat {
    /// Lower case, as Redis names it (`evalsha`, `zrange`).
    pub name: String,
    pub calls: u64,
    pub usec_per_call: f64,
}

/// Zeroes the command statistics.
pub async fn reset_stats(conn: &mut MultiplexedConnection) -> anyhow::Result<()> {
    redis::cmd("CONFIG")
        .arg("RESETSTAT")
        .query_async::<()>(conn)
        .await?;
    Ok(())
}

/// Every command's calls since the last reset (CONFIG and INFO left out), most called first.
pub async fn command_stats(conn: &mut MultiplexedConnection) -> anyhow::Result<Vec<CommandStat>> {
    let info: String = redis::cmd("INFO")
        .arg("commandstats")
        .query_async(conn)
        .await?;
    let mut stats = parse_command_stats(&info);
    // Ours, around the measured run: CONFIG RESETSTAT (`config|resetstat`) and INFO.
    stats.retain(|s| !s.name.starts_with("config") && s.name != "info");
    stats.sort_by_key(|s| std::cmp::Reverse(s.calls));
    Ok(stats)
}

fn parse_command_stats(info: &str) -> Vec<CommandStat> {
    info.lines()
        .filter_map(|line| {
            let (name, fields) = line.strip_prefix("cmdstat_")?.split_once(':')?;
            let field = |key: &str| {
                fields
                    .split(',')
                    .find_map(|f| f.strip_prefix(key)?.strip_prefix('='))
            };
            Some(CommandStat {
                name: name.to_owned(),
                calls: field("calls")?.parse().ok()?,
                usec_per_call: field("usec_per_call")?.parse().ok()?,
            })
        })
        .collect()
}

/// Every command's calls since the last reset, by name (`INFO commandstats`, nothing left out).
pub async fn command_calls(
    conn: &mut MultiplexedConnection,
) -> anyhow::Result<std::collections::BTreeMap<String, u64>> {
    let info: String = redis::cmd("INFO")
        .arg("commandstats")
        .query_async(conn)
        .await?;
    Ok(parse_command_stats(&info)
        .into_iter()
        .map(|s| (s.name, s.calls))
        .collect())
}

/// A number of `INFO <section>` by its name (`used_memory`, `total_reads_processed`).
pub async fn info_number(
    conn: &mut MultiplexedConnection,
    section: &str,
    name: &str,
) -> anyhow::Result<f64> {
    let info: String = redis::cmd("INFO").arg(section).query_async(conn).await?;
    info.lines()
        .find_map(|line| line.strip_prefix(name)?.strip_prefix(':'))
        .and_then(|value| value.trim().parse().ok())
        .ok_or_else(|| anyhow::anyhow!("no {name} in INFO {section}"))
}

/// The CPU seconds (user + system) redis-server has used, by its own `INFO cpu`.
pub async fn cpu_seconds(conn: &mut MultiplexedConnection) -> anyhow::Result<f64> {
    let info: String = redis::cmd("INFO").arg("cpu").query_async(conn).await?;
    Ok(info
        .lines()
        .filter_map(|line| {
            let (key, value) = line.split_once(':')?;
            matches!(key, "used_cpu_sys" | "used_cpu_user")
                .then(|| value.trim().parse::<f64>().ok())?
        })
        .sum())
}

/// Loads a script, returning its SHA1.
pub async fn script_load(conn: &mut MultiplexedConnection, source: &str) -> anyhow::Result<String> {
    Ok(redis::cmd("SCRIPT")
        .arg("LOAD")
        .arg(source)
        .query_async(conn)
        .await?)
}

#[cfg(test)]
mod tests {
    #[test]
    fn command_stats_read_calls_and_time_per_call() {
        let info = "# Commandstats\r\ncmdstat_zcount:calls=45,usec=90,usec_per_call=2.00,rejected_calls=0,failed_calls=0\r\ncmdstat_evalsha:calls=1,usec=1286,usec_per_call=1286.00\r\n";
        let stats = super::parse_command_stats(info);
        assert_eq!(stats.len(), 2);
        assert_eq!(stats[0].name, "zcount");
        assert_eq!(stats[0].calls, 45);
        assert_eq!(stats[1].usec_per_call, 1286.0);
    }
}

/// The suffixes of the keys the index keeps for one list (`idx:{<list>}:<suffix>`): its sets
/// by rating without and with votes and by count, its versions and its version (not its
/// epoch, made only by the response cache's reads).
pub fn list_key_suffixes() -> Vec<String> {
    let mut suffixes: Vec<String> = ["r", "w", "h"]
        .iter()
        .flat_map(|set| (1..=5).map(move |r| format!("{set}{r}")))
        .collect();
    suffixes.extend(["v", "n"].map(str::to_owned));
    suffixes
}

/// `MEMORY USAGE … SAMPLES 0` summed over `keys` (0 for a key that does not exist).
pub async fn memory_usage(
    conn: &mut MultiplexedConnection,
    keys: impl IntoIterator<Item = String>,
) -> anyhow::Result<i64> {
    let mut total = 0;
    for key in keys {
        let bytes: Option<i64> = redis::cmd("MEMORY")
            .arg("USAGE")
            .arg(&key)
            .arg("SAMPLES")
            .arg(0)
            .query_async(conn)
            .await?;
        total += bytes.unwrap_or(0);
    }
    Ok(total)
}
