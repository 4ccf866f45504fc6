//! `/metrics` of a server that has served nothing yet (its own process, so no other test's
//! events are in it): every metric the code emits (`dynapage::telemetry::metric::ALL`, the one
//! list every call site goes through) is there from start-up with its type and help, each of
//! its series at its start value, and nothing else; dashboards and alerts see 0, not nothing.

use dynapage::telemetry::metric::{ALL, Kind, Metric};

use crate::helpers::metrics::Metrics;
use crate::helpers::process::ServerProcess;

/// The series `labels` of `metric` as it is sampled: `name_count{…}` for a histogram.
fn sample(metrics: &Metrics, metric: &Metric, labels: &[(&str, &str)]) -> Option<f64> {
    match metric.kind {
        Kind::Histogram => metrics.get(&format!("{}_count", metric.name), labels),
        _ => metrics.get(metric.name, labels),
    }
}

#[tokio::test]
async fn a_fresh_servers_metrics_show_every_metric_the_code_emits_and_only_those() {
    // A process of its own, with the settings a user starts with.
    let server = ServerProcess::start(&["--demo-comments", "0"]).await;
    let metrics = server.metrics().await;
    let text = &metrics.text;
    for metric in ALL {
        let name = metric.name;
        let kind = metric.kind.as_str();
        assert_eq!(
            metrics.types.get(name).map(String::as_str),
            Some(kind),
            "no `# TYPE {name} {kind}`:\n{text}"
        );
        assert_eq!(
            metrics.help.get(name).map(String::as_str),
            Some(metric.help()),
            "no help for {name}:\n{text}"
        );
        for labels in metric.series() {
            let value = sample(&metrics, metric, &labels)
                .unwrap_or_else(|| panic!("no series {name} {labels:?}:\n{text}"));
            // Counters and histograms start at 0; gauges at what their series says now
            // (`http_connections_open` counts this scrape), or NaN until first set.
            if metric.kind != Kind::Gauge {
                assert_eq!(value, 0.0, "{name} {labels:?}");
            }
        }
    }
    let listed: Vec<&str> = ALL.iter().map(|m| m.name).collect();
    for name in metrics.types.keys() {
        assert!(
            listed.contains(&name.as_str()),
            "{name} is emitted but not listed"
        );
    }
    let lag = sample(&metrics, &dynapage::telemetry::metric::SYNC_LAG_MS, &[]);
    assert!(
        lag.is_some_and(f64::is_nan),
        "a server that syncs nothing has no lag to show: {lag:?}"
    );
}
