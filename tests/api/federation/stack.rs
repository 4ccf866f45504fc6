//! A shop's supergraph around a dynapage subgraph (`tests/clients/federation/stack.mjs`): a
//! products subgraph, the supergraph both composers make, and `@apollo/gateway` and Hive Gateway
//! in front, in one Node process that lives as long as the [`Stack`].

use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader};

use crate::helpers::Api;
use crate::helpers::node::clients_dir;

/// The Node process and what it reported.
pub struct Stack {
    /// Killed when the stack is dropped.
    _process: tokio::process::Child,
    /// Its report: `products` (the subgraph's URL), `apollo` and `hive` (the gateways' origins),
    /// `composition` (both composers' errors and hints).
    pub report: Value,
}

/// How long the stack may take to compose and listen.
const STARTUP: Duration = Duration::from_secs(90);

impl Stack {
    /// The stack around the dynapage at `reviews` (its origin), with `products` products.
    pub async fn around(reviews: &Api, products: usize) -> Self {
        let config = serde_json::json!({
            "reviews": reviews.url("/graphql"),
            "products": products,
        });
        let mut process = tokio::process::Command::new("node")
            .arg("federation/stack.mjs")
            .arg(config.to_string())
            .current_dir(clients_dir())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .expect("node runs federation/stack.mjs");
        let stdout = process.stdout.take().expect("piped");
        let mut lines = BufReader::new(stdout).lines();
        let report = tokio::time::timeout(STARTUP, async {
            while let Some(line) = lines.next_line().await.expect("the stack's output") {
                if let Ok(report) = serde_json::from_str::<Value>(&line) {
                    return report;
                }
            }
            panic!("federation/stack.mjs ended without its report")
        })
        .await
        .expect("the stack starts within its time");
        Self {
            _process: process,
            report,
        }
    }

    /// The gateway `name` (`apollo` or `hive`), failing the test when composition failed.
    pub fn gateway(&self, name: &str) -> Api {
        let origin = self.report[name].as_str().unwrap_or_else(|| {
            panic!(
                "no {name} gateway (did composition fail?): {:#}",
                self.report
            )
        });
        Api::at(origin)
    }

    /// Both gateways, named.
    pub fn gateways(&self) -> [(&'static str, Api); 2] {
        ["apollo", "hive"].map(|name| (name, self.gateway(name)))
    }
}
