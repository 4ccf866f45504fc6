//! The server's HTTP API as a benchmark uses it: one GraphQL request at a time (to check a
//! query before loading it, read a cursor, a count or a cost), `/metrics` for the server's own
//! counters, and the request bodies wrk sends.

use anyhow::{Context as _, bail};
use serde_json::{Value, json};

/// A server's API.
#[derive(Clone, Debug)]
pub struct Api {
    client: reqwest::Client,
    pub url: String,
    /// A bearer token `query` sends, if any.
    bearer: Option<String>,
}

/// One request body, `{"query": …}`, on one line.
pub fn body(query: &str) -> String {
    json!({ "query": query }).to_string()
}

/// Writes request bodies, one a line, for wrk (`bench/wrk/post.lua` picks one per request).
pub fn write_bodies(path: &std::path::Path, bodies: &[String]) -> anyhow::Result<()> {
    let mut text = bodies.join("\n");
    text.push('\n');
    std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))
}

impl Api {
    pub fn new(url: &str) -> Self {
        Self {
            client: reqwest::Client::new(),
            url: url.to_owned(),
            bearer: None,
        }
    }

    /// The same API, whose `query` sends `token` as a bearer token.
    pub fn with_bearer(&self, token: &str) -> Self {
        Self {
            bearer: Some(token.to_owned()),
            ..self.clone()
        }
    }

    /// Posts a body (with an optional header line "Name: value"); returns the response's text.
    pub async fn post(&self, body: &str, header: Option<&str>) -> anyhow::Result<String> {
        let mut request = self
            .client
            .post(format!("{}/graphql", self.url))
            .header("Content-Type", "application/json")
            .body(body.to_owned());
        if let Some((name, value)) = header.and_then(|h| h.split_once(':')) {
            request = request.header(name.trim(), value.trim());
        }
        let response = request.send().await.context("posting to /graphql")?;
        let status = response.status();
        let text = response.text().await?;
        if !status.is_success() {
            bail!("/graphql answered {status}: {text}");
        }
        Ok(text)
    }

    /// Runs a query that must succeed; returns the whole response (with `extensions`) and its
    /// size in bytes.
    pub async fn query(&self, query: &str) -> anyhow::Result<(Value, usize)> {
        let header = self
            .bearer
            .as_ref()
            .map(|t| format!("Authorization: Bearer {t}"));
        let text = self.post(&body(query), header.as_deref()).await?;
        let value: Value = serde_json::from_str(&text).context("a GraphQL response")?;
        if let Some(errors) = value.get("errors") {
            bail!("the query failed: {errors}\nquery: {query}");
        }
        Ok((value, text.len()))
    }

    /// `totalCount` of a product's comments.
    pub async fn total_count(&self, sku: &str) -> anyhow::Result<u64> {
        let (value, _) = self
            .query(&format!(
                "{{ comments(sku: \"{sku}\", first: 0) {{ totalCount }} }}"
            ))
            .await?;
        value["data"]["comments"]["totalCount"]
            .as_u64()
            .context("no totalCount")
    }

    /// `/metrics`, Prometheus's text format.
    pub async fn metrics(&self) -> anyhow::Result<String> {
        let response = self
            .client
            .get(format!("{}/metrics", self.url))
            .send()
            .await
            .with_context(|| format!("no /metrics at {}", self.url))?;
        Ok(response.error_for_status()?.text().await?)
    }

    /// GraphQL requests the server has executed with errors or cut at its timeout since it
    /// started (`dynapage_graphql_requests_total{outcome!="ok"}`). Requests refused before
    /// execution (depth, aliases) are not in it: each case's query is checked once first.
    pub async fn graphql_failures(&self) -> anyhow::Result<u64> {
        let metrics = self.metrics().await?;
        Ok(metrics
            .lines()
            .filter(|l| l.starts_with("dynapage_graphql_requests_total{"))
            .filter(|l| !l.contains("outcome=\"ok\""))
            .filter_map(|l| l.split_whitespace().last()?.parse::<f64>().ok())
            .sum::<f64>() as u64)
    }

    /// The lines of `/metrics` whose name starts with one of `prefixes`.
    pub async fn metric_lines(&self, prefixes: &[&str]) -> anyhow::Result<Vec<String>> {
        let metrics = self.metrics().await?;
        Ok(metrics
            .lines()
            .filter(|l| prefixes.iter().any(|p| l.starts_with(p)))
            .map(str::to_owned)
            .collect())
    }
}

/// The `extensions.cost` of a response: items read, store queries, index calls.
pub fn cost(response: &Value) -> anyhow::Result<[u64; 3]> {
    let cost = &response["extensions"]["cost"];
    let field = |name: &str| {
        cost[name]
            .as_u64()
            .with_context(|| format!("no cost.{name}"))
    };
    Ok([
        field("itemsRead")?,
        field("storeQueries")?,
        field("indexCalls")?,
    ])
}
