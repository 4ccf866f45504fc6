//! Structured logs: `RUST_LOG` filters (default `info`), text or JSON lines on stderr; the
//! Prometheus recorder behind `/metrics`, and every metric the code emits (`metric`).

pub mod metric;

use tracing_subscriber::EnvFilter;

/// How logs are written: `Text`, human-readable lines, or `Json`, one JSON object per line with
/// the event's fields at its top level.
// clap prints a variant's doc comment in `--help` (and switches every subcommand's help to the
// long layout), so the variants are described above instead.
#[allow(missing_docs)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    Text,
    Json,
}

/// Installs the global log subscriber: `RUST_LOG`'s filter (default `info`), lines in `format`
/// on stderr. Does nothing if a subscriber is already installed.
pub fn init(format: LogFormat) {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    // `try_init` fails only when a subscriber is already set (tests), which is fine.
    let _ = match format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder.json().flatten_event(true).try_init(),
    };
}

/// The process's Prometheus recorder, installed on first use with every metric of
/// [`metric::ALL`] registered, so `/metrics` shows them all from start-up. `None` if another
/// recorder was installed first (then `/metrics` answers 404 rather than lying).
pub fn metrics_handle() -> Option<metrics_exporter_prometheus::PrometheusHandle> {
    static HANDLE: std::sync::OnceLock<Option<metrics_exporter_prometheus::PrometheusHandle>> =
        std::sync::OnceLock::new();
    HANDLE
        .get_or_init(|| {
            let installed = histogram_buckets(metrics_exporter_prometheus::PrometheusBuilder::new())
                .and_then(|builder| builder.install_recorder());
            if let Err(error) = &installed {
                tracing::warn!(%error, "metrics recorder not installed; /metrics is disabled");
            }
            let handle = installed.ok()?;
            metric::register_all();
            // Histogram samples pile up in the recorder until upkeep drains them; without it the
            // process grows for as long as nobody scrapes /metrics. Drain every five seconds.
            let upkeep = handle.clone();
            let spawned = std::thread::Builder::new().name("metrics-upkeep".into()).spawn(move || loop {
                std::thread::sleep(std::time::Duration::from_secs(5));
                upkeep.run_upkeep();
            });
            if let Err(error) = spawned {
                tracing::warn!(%error, "metrics upkeep thread not started; histograms drain only when /metrics is scraped");
            }
            Some(handle)
        })
        .clone()
}

/// Upper bounds (`le`) of the request-latency histogram, in seconds: from a cached embedded
/// page (~0.2 ms) through DynamoDB pages (1-10 ms) to the 10 s request timeout.
pub const REQUEST_SECONDS_BUCKETS: &[f64] = &[
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

/// Upper bounds of the items-read-per-page histogram: a page of `n` reads `n + 1` (21 at the
/// default size, 101 at the maximum), small offsets read `offset + n + 1` straight from the
/// store (up to 221 with the default settings), a ratings page reads up to `n + 1` per rating.
pub const PAGE_ITEMS_BUCKETS: &[f64] = &[
    0.0, 1.0, 2.0, 5.0, 11.0, 21.0, 51.0, 101.0, 221.0, 501.0, 1001.0, 5001.0,
];

/// Every histogram is exported as a Prometheus histogram (`_bucket`, `_sum`, `_count`), never
/// as a summary: quantiles of one replica cannot be combined with another's, buckets can
/// (`histogram_quantile(0.99, sum by (le) (rate(..._bucket[5m])))` over every server).
fn histogram_buckets(
    builder: metrics_exporter_prometheus::PrometheusBuilder,
) -> Result<metrics_exporter_prometheus::PrometheusBuilder, metrics_exporter_prometheus::BuildError>
{
    use metrics_exporter_prometheus::Matcher;
    builder
        .set_buckets(REQUEST_SECONDS_BUCKETS)?
        .set_buckets_for_metric(
            Matcher::Full(metric::PAGE_ITEMS_READ.name.into()),
            PAGE_ITEMS_BUCKETS,
        )
}
