//! Structured logs: `RUST_LOG` filters (default `info`), text or JSON lines on stderr.

use tracing_subscriber::EnvFilter;

use crate::config::LogFormat;

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

/// The process's Prometheus recorder, installed on first use. `None` if another recorder
/// was installed first (then `/metrics` answers 404 rather than lying).
pub fn metrics_handle() -> Option<metrics_exporter_prometheus::PrometheusHandle> {
    static HANDLE: std::sync::OnceLock<Option<metrics_exporter_prometheus::PrometheusHandle>> =
        std::sync::OnceLock::new();
    HANDLE
        .get_or_init(|| {
            let builder = metrics_exporter_prometheus::PrometheusBuilder::new();
            let installed = builder.install_recorder();
            if let Err(error) = &installed {
                tracing::warn!(%error, "metrics recorder not installed; /metrics is disabled");
            }
            let handle = installed.ok()?;
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
