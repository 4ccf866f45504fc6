//! Helpful votes for the benchmarks that measure a product with some (`index-cpu --voted`,
//! `orders --voted`): the newest comments get one to three votes each, cast through
//! `markHelpful` from three client addresses (192.0.2.1 to .3 in `X-Forwarded-For`), so the
//! server must run with `--trusted-proxies 127.0.0.1`.

use anyhow::Context as _;
use futures::{StreamExt, TryStreamExt};
use redis::aio::MultiplexedConnection;

use super::SKU;
use crate::graphql::Api;

/// The server options votes need: the voters' addresses come in `X-Forwarded-For`.
pub const VOTER_PROXIES: [&str; 2] = ["--trusted-proxies", "127.0.0.1"];

/// Gives the `voted` newest comments of the benchmarks' product 1 to 3 helpful votes each
/// (comment `i` gets `1 + i % 3`), 16 votes in flight.
pub async fn cast(api: &Api, voted: u64) -> anyhow::Result<()> {
    let mut ids: Vec<String> = Vec::new();
    let mut after = String::new();
    while (ids.len() as u64) < voted {
        let query = format!(
            "{{ comments(sku: \"{SKU}\", first: 100{after}) {{ edges {{ cursor node {{ id }} }} }} }}"
        );
        let (page, _) = api.query(&query).await?;
        let edges = page["data"]["comments"]["edges"]
            .as_array()
            .context("edges")?;
        ids.extend(
            edges
                .iter()
                .filter_map(|e| e["node"]["id"].as_str().map(str::to_owned)),
        );
        let last = edges.last().context("a comment")?["cursor"]
            .as_str()
            .context("a cursor")?;
        after = format!(", after: \"{last}\"");
    }
    ids.truncate(voted as usize);
    let votes: Vec<(String, usize)> = ids
        .iter()
        .enumerate()
        .flat_map(|(i, id)| (1..=1 + i % 3).map(move |voter| (id.clone(), voter)))
        .collect();
    futures::stream::iter(votes)
        .map(|(id, voter)| async move {
            let query = format!(
                "mutation {{ markHelpful(input: {{ commentId: \"{id}\" }}) {{ comment {{ helpfulCount }} }} }}"
            );
            let header = format!("X-Forwarded-For: 192.0.2.{voter}");
            api.post(&crate::graphql::body(&query), Some(&header)).await
        })
        .buffer_unordered(16)
        .try_collect::<Vec<_>>()
        .await?;
    Ok(())
}

/// [`cast`], then waits until the Redis index on `conn` (keys under `prefix`, the server's
/// `--redis-prefix`) holds the `voted` comments among those with votes.
pub async fn cast_and_await_indexed(
    api: &Api,
    conn: &mut MultiplexedConnection,
    prefix: &str,
    voted: u64,
) -> anyhow::Result<()> {
    cast(api, voted).await?;
    await_indexed(conn, &voted_keys(prefix), voted).await
}

/// The Redis keys of the benchmarks' product's comments with votes, by count (`prefix` is
/// the server's `--redis-prefix`).
fn voted_keys(prefix: &str) -> Vec<String> {
    (1..=5)
        .map(|r| format!("{prefix}idx:{{{SKU}}}:h{r}"))
        .collect()
}

/// Waits (up to 5 minutes) until the sets `keys` hold `n` members together.
pub async fn await_indexed(
    conn: &mut MultiplexedConnection,
    keys: &[String],
    n: u64,
) -> anyhow::Result<()> {
    for _ in 0..600 {
        let mut pipe = redis::pipe();
        for key in keys {
            pipe.zcard(key);
        }
        let counts: Vec<u64> = pipe.query_async(conn).await?;
        if counts.iter().sum::<u64>() >= n {
            return Ok(());
        }
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    }
    Err(anyhow::anyhow!(
        "the index never held {n} comments with votes"
    ))
}
