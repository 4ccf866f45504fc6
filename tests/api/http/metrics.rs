//! `/metrics` of a server that has served nothing yet (its own process, so no other test's
//! events are in it): every metric the code emits (`dynapage::telemetry::metric::ALL`, the one
//! list every call site goes through) is there from start-up with its type and help, each of
//! its series at its start value, and nothing else; dashboards and alerts see 0, not nothing.

use std::time::Duration;

use dynapage::telemetry::metric::{ALL, Kind, Metric};

use crate::helpers::dynapage_command;

/// `/metrics` of a fresh `dynapage serve` (embedded, no demo comments).
async fn fresh_scrape() -> String {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let authority = format!("127.0.0.1:{port}");
    let _server = dynapage_command("serve")
        .args(["--listen", &authority, "--demo-comments", "0"])
        .spawn()
        .expect("the dynapage binary runs");
    for _ in 0..600 {
        let healthy = reqwest::get(format!("http://{authority}/healthz")).await;
        if healthy.is_ok_and(|r| r.status().is_success()) {
            let metrics = reqwest::get(format!("http://{authority}/metrics"))
                .await
                .expect("/metrics");
            assert_eq!(metrics.status(), 200);
            return metrics.text().await.expect("its text");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("serve did not become healthy");
}

/// The sample line of one series: `name{labels} value` (`name_count{…}` for a histogram).
fn sample<'a>(text: &'a str, metric: &Metric, labels: &[(&str, &str)]) -> Option<&'a str> {
    let name = match metric.kind {
        Kind::Histogram => format!("{}_count", metric.name),
        _ => metric.name.to_owned(),
    };
    let labels: Vec<String> = labels.iter().map(|(k, v)| format!("{k}=\"{v}\"")).collect();
    let series = if labels.is_empty() {
        format!("{name} ")
    } else {
        format!("{name}{{{}}} ", labels.join(","))
    };
    text.lines()
        .find_map(|line| line.strip_prefix(series.as_str()))
}

#[tokio::test]
async fn a_fresh_servers_metrics_show_every_metric_the_code_emits_and_only_those() {
    let text = fresh_scrape().await;
    for metric in ALL {
        let name = metric.name;
        let kind = metric.kind.as_str();
        assert!(
            text.contains(&format!("\n# TYPE {name} {kind}\n")),
            "no `# TYPE {name} {kind}`:\n{text}"
        );
        assert!(
            text.contains(&format!("# HELP {name} {}\n", metric.help())),
            "no help for {name}:\n{text}"
        );
        for labels in metric.series() {
            let value = sample(&text, metric, &labels)
                .unwrap_or_else(|| panic!("no series {name} {labels:?}:\n{text}"));
            // Counters and histograms start at 0; gauges at what their series says now
            // (`http_connections_open` counts this scrape), or NaN until first set.
            if metric.kind != Kind::Gauge {
                assert_eq!(value, "0", "{name} {labels:?}");
            }
        }
    }
    let listed: Vec<&str> = ALL.iter().map(|m| m.name).collect();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let name = rest.split(' ').next().unwrap_or_default();
            assert!(listed.contains(&name), "{name} is emitted but not listed");
        }
    }
    assert_eq!(
        sample(&text, &dynapage::telemetry::metric::SYNC_LAG_MS, &[]),
        Some("NaN"),
        "a server that syncs nothing has no lag to show"
    );
}
