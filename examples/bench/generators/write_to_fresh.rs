//! `write-to-fresh`: the time from a write to the first fresh page through a CDN (issue 24,
//! BENCHMARKS.md "Response cache"). A writer adds a comment through the API every 1/`rate` s,
//! each with a body of its own; a reader polls the page through the CDN every 5 ms and notes
//! when each body first shows; a second reader polls the server's `totalCount` (read from the
//! index) and notes when each write was applied to it (the stream's lag). Times run from the
//! write's acknowledgement. `response-cache --backend dynamodb` ends with it; as a subcommand
//! it measures any server and CDN. Fails if a write never showed within 60 s of the last.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::bail;
use serde_json::{Value, json};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The server's API, e.g. http://127.0.0.1:8080
    api: String,
    /// The page's URL through the CDN (a GET of /graphql?query=…)
    page: String,
    /// The product written to, whose page that is
    sku: String,
    /// Comments added
    #[arg(long, default_value_t = 200)]
    writes: u64,
    /// Comments added per second
    #[arg(long, default_value_t = 10.0)]
    rate: f64,
}

pub async fn run(args: Args) -> anyhow::Result<()> {
    let (lines, missing) =
        measure(&args.api, &args.page, &args.sku, args.writes, args.rate).await?;
    for line in lines {
        println!("{line}");
    }
    if missing > 0 {
        bail!("{missing} writes never showed through the CDN");
    }
    Ok(())
}

const ADD: &str = "mutation($sku: String!, $body: String!) { addComment(input: { sku: $sku, author: \"bench\", body: $body, rating: 5 }) { comment { id } } }";
const COUNT: &str = "query($sku: String!) { comments(sku: $sku, first: 1) { totalCount } }";

/// When each write (by number) was acknowledged, first showed through the CDN, and was
/// counted by the index.
#[derive(Debug, Default)]
struct Times {
    acked: HashMap<u64, Instant>,
    fresh: HashMap<u64, Instant>,
    applied: HashMap<u64, Instant>,
}

/// Runs the measurement; returns its report's lines and how many writes never showed.
pub async fn measure(
    api: &str,
    page: &str,
    sku: &str,
    writes: u64,
    rate: f64,
) -> anyhow::Result<(Vec<String>, u64)> {
    let client = reqwest::Client::new();
    let tag = format!("fresh-{}", chrono::Utc::now().timestamp());
    let base = total_count(&client, api, sku).await?;
    let times = Arc::new(Mutex::new(Times::default()));
    let done = tokio_util::sync::CancellationToken::new();
    // Through the CDN: when each write's body first shows in the page.
    let cdn_reader = poll(&times, &done, {
        let (client, page, tag) = (client.clone(), page.to_owned(), tag.clone());
        move |times: Arc<Mutex<Times>>| {
            let (client, page, tag) = (client.clone(), page.clone(), tag.clone());
            async move {
                let text = client.get(&page).send().await?.text().await?;
                let now = Instant::now();
                let mut times = lock(&times);
                let shown: Vec<u64> = times
                    .acked
                    .keys()
                    .filter(|i| !times.fresh.contains_key(i) && text.contains(&marker(&tag, **i)))
                    .copied()
                    .collect();
                times.fresh.extend(shown.into_iter().map(|i| (i, now)));
                Ok(())
            }
        }
    });
    // From the server: when the index's count first includes each write.
    let index_reader = poll(&times, &done, {
        let (client, api, sku) = (client.clone(), api.to_owned(), sku.to_owned());
        move |times: Arc<Mutex<Times>>| {
            let (client, api, sku) = (client.clone(), api.clone(), sku.clone());
            async move {
                let total = total_count(&client, &api, &sku).await?;
                let now = Instant::now();
                let mut times = lock(&times);
                let counted: Vec<u64> = times
                    .acked
                    .keys()
                    .filter(|i| !times.applied.contains_key(i) && total > base + **i)
                    .copied()
                    .collect();
                times.applied.extend(counted.into_iter().map(|i| (i, now)));
                Ok(())
            }
        }
    });

    let started = Instant::now();
    for i in 0..writes {
        let body = marker(&tag, i);
        post(&client, api, ADD, json!({ "sku": sku, "body": body })).await?;
        lock(&times).acked.insert(i, Instant::now());
        let next = started + Duration::from_secs_f64((i + 1) as f64 / rate);
        tokio::time::sleep_until(next.into()).await;
    }
    let deadline = Instant::now() + Duration::from_secs(60);
    while Instant::now() < deadline {
        let all = {
            let t = lock(&times);
            t.fresh.len() as u64 >= writes && t.applied.len() as u64 >= writes
        };
        if all {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    done.cancel();
    cdn_reader.await??;
    index_reader.await??;
    let report = report(&lock(&times), writes, rate);
    Ok(report)
}

/// Runs `read` every 5 ms (after each answer) until `done`.
fn poll<F, Fut>(
    times: &Arc<Mutex<Times>>,
    done: &tokio_util::sync::CancellationToken,
    read: F,
) -> tokio::task::JoinHandle<anyhow::Result<()>>
where
    F: Fn(Arc<Mutex<Times>>) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = anyhow::Result<()>> + Send,
{
    let (times, done) = (times.clone(), done.clone());
    tokio::spawn(async move {
        while !done.is_cancelled() {
            read(times.clone()).await?;
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        Ok(())
    })
}

/// The report's lines, and how many writes never showed through the CDN.
fn report(t: &Times, writes: u64, rate: f64) -> (Vec<String>, u64) {
    let since = |later: &HashMap<u64, Instant>, earlier: &HashMap<u64, Instant>| -> Vec<f64> {
        later
            .iter()
            .filter_map(|(i, at)| {
                Some(at.saturating_duration_since(*earlier.get(i)?).as_secs_f64())
            })
            .collect()
    };
    // A body that shows in the CDN's page before the index counted it came from a page the
    // server ran while the stream lagged; each write is counted from its acknowledgement
    // either way.
    let missing = writes.saturating_sub(t.fresh.len() as u64);
    let lines = vec![
        summary(
            "write to fresh page through the CDN",
            since(&t.fresh, &t.acked),
        ),
        summary(
            "write to applied in the index (stream lag)",
            since(&t.applied, &t.acked),
        ),
        summary(
            "CDN after the index (purge and refetch)",
            since(&t.fresh, &t.applied),
        ),
        format!("writes: {writes} at {rate}/s; never fresh within 60 s after the last: {missing}"),
    ];
    (lines, missing)
}

fn lock(times: &Mutex<Times>) -> std::sync::MutexGuard<'_, Times> {
    times
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The body of write `i`, which no other write's contains.
fn marker(tag: &str, i: u64) -> String {
    format!("{tag}-{i}-")
}

async fn post(
    client: &reqwest::Client,
    api: &str,
    query: &str,
    variables: Value,
) -> anyhow::Result<Value> {
    let answer: Value = client
        .post(format!("{api}/graphql"))
        .json(&json!({ "query": query, "variables": variables }))
        .timeout(Duration::from_secs(30))
        .send()
        .await?
        .json()
        .await?;
    if let Some(errors) = answer.get("errors") {
        bail!("error: {errors}");
    }
    Ok(answer["data"].clone())
}

async fn total_count(client: &reqwest::Client, api: &str, sku: &str) -> anyhow::Result<u64> {
    let data = post(client, api, COUNT, json!({ "sku": sku })).await?;
    data["comments"]["totalCount"]
        .as_u64()
        .ok_or_else(|| anyhow::anyhow!("no totalCount in {data}"))
}

/// "name: n=… p50=… ms p99=… ms max=… ms mean=… ms" of lags in seconds, percentiles by the
/// index `q·n` of the sorted lags, as the script took them.
fn summary(name: &str, mut lags: Vec<f64>) -> String {
    if lags.is_empty() {
        return format!("{name}: none");
    }
    lags.sort_by(f64::total_cmp);
    let n = lags.len();
    let p = |q: f64| lags[((q * n as f64) as usize).min(n - 1)] * 1000.0;
    let mean = lags.iter().sum::<f64>() / n as f64 * 1000.0;
    format!(
        "{name}: n={n} p50={:.0} ms p99={:.0} ms max={:.0} ms mean={mean:.0} ms",
        p(0.5),
        p(0.99),
        lags[n - 1] * 1000.0
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_summary_takes_percentiles_by_index_as_the_script_did() {
        let lags: Vec<f64> = (1..=10).map(|i| f64::from(i) / 100.0).collect();
        assert_eq!(
            super::summary("lag", lags),
            "lag: n=10 p50=60 ms p99=100 ms max=100 ms mean=55 ms"
        );
        assert_eq!(super::summary("lag", Vec::new()), "lag: none");
    }
}
