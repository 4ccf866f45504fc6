//! Every metric the server emits, in one list: its name, kind, what it says (the `# HELP` line
//! of `/metrics`, from the doc comment), its labels and the values they take. Code emits a
//! metric only through its constant here ([`Metric::counter`], [`Metric::gauge`],
//! [`Metric::histogram`]); `clippy.toml` forbids the `metrics` macros anywhere else, so a metric
//! cannot be emitted without being listed.
//!
//! Why a list: the Prometheus exporter shows a series only once it has been touched, so most
//! names the README promised were absent from `/metrics` until their first event (a dashboard
//! or an alert on them saw nothing, not 0), and nothing said which names the code emits. At
//! start-up `register_all` describes every metric and registers every series its labels can
//! make, at 0 (or NaN for a gauge whose 0 would be read as a value: a sync lag or a checkpoint
//! time on a server that syncs nothing).

use metrics::Label;

/// The kind of series a metric is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A count that only goes up.
    Counter,
    /// A value that is set, and may go up or down.
    Gauge,
    /// A distribution of observed values, in buckets.
    Histogram,
}

impl Kind {
    /// The word in Prometheus's `# TYPE` line.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Counter => "counter",
            Kind::Gauge => "gauge",
            Kind::Histogram => "histogram",
        }
    }
}

/// One metric (see the module's comment).
#[derive(Debug)]
pub struct Metric {
    /// The series' name in `/metrics`.
    pub name: &'static str,
    /// Its kind.
    pub kind: Kind,
    /// What it says, from its doc comment.
    help: &'static str,
    /// Each label, in order, with every value it takes.
    pub labels: &'static [(&'static str, &'static [&'static str])],
    /// A gauge's value until the code sets it.
    start: f64,
}

/// The first expression given (a gauge's start value when the list names one, else 0).
macro_rules! first {
    ($first:expr $(, $rest:expr)*) => {
        $first
    };
}

/// Defines each metric's constant and [`ALL`] from one list, so no constant is left out of it.
macro_rules! metrics {
    ($(
        $(#[doc = $doc:literal])+
        $id:ident: $kind:ident($name:literal $(, $label:literal => [$($value:literal),+])*)
            $(= $start:expr)?;
    )+) => {
        $(
            $(#[doc = $doc])+
            pub const $id: Metric = Metric {
                name: $name,
                kind: Kind::$kind,
                help: concat!($($doc),+),
                labels: &[$(($label, &[$($value),+])),*],
                start: first!($($start,)? 0.0),
            };
        )+

        /// Every metric the server emits.
        pub const ALL: &[Metric] = &[$($id),+];
    };
}

metrics! {
    /// GraphQL requests over HTTP, by operation kind and outcome (`rate_limited`: refused by a
    /// budget).
    GRAPHQL_REQUESTS: Counter("dynapage_graphql_requests_total",
        "kind" => ["query", "mutation"],
        "outcome" => ["ok", "error", "rate_limited", "timeout"]);
    /// How long GraphQL requests over HTTP took, in seconds.
    GRAPHQL_REQUEST_DURATION: Histogram("dynapage_graphql_request_duration_seconds",
        "kind" => ["query", "mutation"]);
    /// Items one connection (a page) read from the store.
    PAGE_ITEMS_READ: Histogram("dynapage_page_items_read");
    /// Items read from DynamoDB, by operation.
    STORE_ITEMS_READ: Counter("dynapage_store_items_read_total",
        "operation" => ["query", "get_many", "scan", "helpful_votes", "moderation_log", "reports", "votes_by"]);
    /// Read capacity units DynamoDB says batch reads consumed, by operation.
    STORE_READ_UNITS: Counter("dynapage_store_read_units_total",
        "operation" => ["get_many", "helpful_votes"]);
    /// Write capacity units DynamoDB says writes consumed, by operation.
    STORE_WRITE_UNITS: Counter("dynapage_store_write_units_total",
        "operation" => ["mark_helpful"]);
    /// Helpful-vote transactions that met another transaction on the same comment and were
    /// retried.
    STORE_TRANSACTION_CONFLICTS: Counter("dynapage_store_transaction_conflicts_total");
    /// How long the durable embedded store took to commit a group of writes, in seconds.
    STORE_COMMIT_SECONDS: Histogram("dynapage_store_commit_seconds");
    /// Fields answered with INDEX_UNAVAILABLE or STORE_UNAVAILABLE (index fallbacks and store
    /// outages).
    BACKEND_UNAVAILABLE: Counter("dynapage_backend_unavailable_total",
        "code" => ["INDEX_UNAVAILABLE", "STORE_UNAVAILABLE"]);
    /// Requests refused at once because --max-concurrent-requests were running.
    REQUESTS_SHED: Counter("dynapage_requests_shed_total");
    /// Requests refused by a client's budget, by budget.
    RATE_LIMITED: Counter("dynapage_rate_limited_total",
        "limit" => ["cost", "writes", "registrations", "subscribe"]);
    /// Rate-limit checks Redis failed to answer.
    RATE_LIMIT_STORE_ERRORS: Counter("dynapage_rate_limit_store_errors_total");
    /// Rate-limit checks made in this process while Redis could not answer.
    RATE_LIMIT_FALLBACK_CHECKS: Counter("dynapage_rate_limit_fallback_checks_total");
    /// Requests refused with TOO_MANY_ITEMS (--max-items-per-request).
    ITEMS_CAP_REFUSALS: Counter("dynapage_items_cap_refusals_total");
    /// Requests naming a persisted document that were refused, by error code.
    PERSISTED_REFUSALS: Counter("dynapage_persisted_refusals_total",
        "code" => ["PERSISTED_QUERY_NOT_FOUND", "PERSISTED_QUERY_NOT_SUPPORTED",
            "PERSISTED_QUERY_NOT_IN_LIST", "QUERY_NOT_IN_SAFELIST", "BAD_REQUEST"]);
    /// Bearer tokens refused (UNAUTHENTICATED), over HTTP and on WebSocket upgrades.
    AUTH_REFUSALS: Counter("dynapage_auth_refusals_total");
    /// Failed fetches of the JWKS (the cached keys stay in use).
    AUTH_JWKS_FETCH_FAILURES: Counter("dynapage_auth_jwks_fetch_failures_total");
    /// Response cache lookups, by outcome (`unavailable`: the index could not give versions).
    RESPONSE_CACHE: Counter("dynapage_response_cache_total",
        "outcome" => ["hit", "miss", "stale", "bypass", "unavailable"]);
    /// Encodings of kept answers the response cache made, by coding.
    RESPONSE_CACHE_ENCODINGS: Counter("dynapage_response_cache_encodings_total",
        "coding" => ["gzip", "br", "zstd"]);
    /// Bytes the response cache holds.
    RESPONSE_CACHE_BYTES: Gauge("dynapage_response_cache_bytes");
    /// CDN purge requests, by outcome.
    PURGE_REQUESTS: Counter("dynapage_purge_requests_total",
        "outcome" => ["ok", "retry", "failed", "dropped"]);
    /// Tags named in CDN purges that succeeded.
    PURGE_TAGS: Counter("dynapage_purge_tags_total");
    /// Connections open now, WebSockets included.
    HTTP_CONNECTIONS_OPEN: Gauge("dynapage_http_connections_open");
    /// Connections closed as soon as accepted, by the cap they were over.
    HTTP_CONNECTIONS_REFUSED: Counter("dynapage_http_connections_refused_total",
        "reason" => ["max_connections", "max_connections_per_address"]);
    /// Connections closed for waiting too long, by what they waited for.
    HTTP_CONNECTIONS_TIMED_OUT: Counter("dynapage_http_connections_timed_out_total",
        "reason" => ["header_timeout", "body_timeout", "idle_timeout"]);
    /// Failed accepts of new connections (out of file descriptors, say).
    HTTP_ACCEPT_ERRORS: Counter("dynapage_http_accept_errors_total");
    /// GraphQL WebSockets open now.
    WEBSOCKETS_OPEN: Gauge("dynapage_websockets_open");
    /// WebSockets closed because their client did not read within the send deadline.
    WEBSOCKETS_CLOSED_SLOW: Counter("dynapage_websockets_closed_slow_total");
    /// WebSocket writes: messages sent together with one flush (`--websocket-coalesce-ms`
    /// gathers a busy socket's events into fewer).
    WEBSOCKET_WRITES: Counter("dynapage_websocket_writes_total");
    /// WebSocket upgrades refused over a client's cap of sockets.
    WEBSOCKETS_REFUSED: Counter("dynapage_websockets_refused_total");
    /// Subscriptions open now.
    SUBSCRIPTIONS_OPEN: Gauge("dynapage_subscriptions_open");
    /// Subscriptions closed for falling behind the feed (SLOW_SUBSCRIBER).
    SUBSCRIPTIONS_DROPPED_SLOW: Counter("dynapage_subscriptions_dropped_slow_total");
    /// Subscription events sent, one per subscriber.
    SUBSCRIPTION_EVENTS: Counter("dynapage_subscription_events_total");
    /// Subscription selection sets run: one per event and cohort.
    SUBSCRIPTION_EXECUTIONS: Counter("dynapage_subscription_executions_total");
    /// Cohorts of subscribers sharing one execution, now.
    SUBSCRIPTION_COHORTS: Gauge("dynapage_subscription_cohorts");
    /// Seconds from the index applying a change to its execution for a cohort.
    SUBSCRIPTION_DELIVERY_LAG: Histogram("dynapage_subscription_delivery_lag_seconds");
    /// Applied changes this server's live feed received.
    LIVE_CHANGES: Counter("dynapage_live_changes_total");
    /// Failed reads of the Redis change log.
    LIVE_FEED_ERRORS: Counter("dynapage_live_feed_errors_total");
    /// Changes the sync applied to the index.
    SYNC_EVENTS_APPLIED: Counter("dynapage_sync_events_applied_total");
    /// Changes the index refused as older than what it holds.
    SYNC_EVENTS_STALE: Counter("dynapage_sync_events_stale_total");
    /// Stream records the sync read.
    SYNC_RECORDS: Counter("dynapage_sync_records_total");
    /// Stream records skipped because they are not comments.
    SYNC_RECORDS_SKIPPED: Counter("dynapage_sync_records_skipped_total");
    /// Age of the last applied stream record, in milliseconds (NaN until one is applied).
    SYNC_LAG_MS: Gauge("dynapage_sync_lag_ms") = f64::NAN;
    /// When the sync last checkpointed, in seconds since the epoch (NaN until it does).
    SYNC_CHECKPOINT_TIMESTAMP: Gauge("dynapage_sync_checkpoint_timestamp_seconds") = f64::NAN;
    /// Stream shards the sync reads.
    SYNC_SHARDS: Gauge("dynapage_sync_shards");
    /// Times the stream had trimmed records before they were applied (run a reindex).
    SYNC_TRIMMED: Counter("dynapage_sync_trimmed_total");
    /// Expired shard iterators renewed from the checkpoint.
    SYNC_ITERATORS_EXPIRED: Counter("dynapage_sync_iterators_expired_total");
    /// Sync errors, by stage.
    SYNC_ERRORS: Counter("dynapage_sync_errors_total",
        "stage" => ["describe", "iterator", "get_records", "decode", "apply", "trimmed"]);
}

#[expect(
    clippy::disallowed_macros,
    reason = "the one place the metrics macros are called (clippy.toml)"
)]
impl Metric {
    /// This counter with `labels`: each of its labels, in order, with one of its values.
    pub fn counter(&self, labels: &[(&'static str, &'static str)]) -> metrics::Counter {
        self.check(Kind::Counter, labels);
        if labels.is_empty() {
            metrics::counter!(self.name)
        } else {
            metrics::counter!(self.name, series(labels))
        }
    }

    /// This gauge with `labels` (see [`Metric::counter`]).
    pub fn gauge(&self, labels: &[(&'static str, &'static str)]) -> metrics::Gauge {
        self.check(Kind::Gauge, labels);
        if labels.is_empty() {
            metrics::gauge!(self.name)
        } else {
            metrics::gauge!(self.name, series(labels))
        }
    }

    /// This histogram with `labels` (see [`Metric::counter`]).
    pub fn histogram(&self, labels: &[(&'static str, &'static str)]) -> metrics::Histogram {
        self.check(Kind::Histogram, labels);
        if labels.is_empty() {
            metrics::histogram!(self.name)
        } else {
            metrics::histogram!(self.name, series(labels))
        }
    }

    /// What it says (its doc comment).
    pub fn help(&self) -> &'static str {
        self.help.trim()
    }

    /// Every series its labels make: one per combination of their values (one without labels).
    pub fn series(&self) -> Vec<Vec<(&'static str, &'static str)>> {
        self.labels
            .iter()
            .fold(vec![Vec::new()], |sets, &(label, values)| {
                sets.iter()
                    .flat_map(|set| {
                        values.iter().map(move |&value| {
                            let mut set = set.clone();
                            set.push((label, value));
                            set
                        })
                    })
                    .collect()
            })
    }

    /// Describes the metric and registers each of its series at its start value.
    fn register(&self) {
        match self.kind {
            Kind::Counter => metrics::describe_counter!(self.name, self.help()),
            Kind::Gauge => metrics::describe_gauge!(self.name, self.help()),
            Kind::Histogram => metrics::describe_histogram!(self.name, self.help()),
        }
        for labels in self.series() {
            match self.kind {
                Kind::Counter => self.counter(&labels).increment(0),
                Kind::Gauge => self.gauge(&labels).set(self.start),
                Kind::Histogram => drop(self.histogram(&labels)),
            }
        }
    }

    /// In debug builds (every test), a call with another kind, other labels or a value not
    /// listed fails at once, so the list says what `/metrics` will show.
    fn check(&self, kind: Kind, labels: &[(&'static str, &'static str)]) {
        debug_assert_eq!(self.kind, kind, "{} is a {:?}", self.name, self.kind);
        debug_assert!(
            labels.len() == self.labels.len()
                && labels
                    .iter()
                    .zip(self.labels)
                    .all(|((label, value), (listed, values))| {
                        label == listed && values.contains(value)
                    }),
            "{} takes {:?}, not {labels:?}",
            self.name,
            self.labels
        );
    }
}

fn series(labels: &[(&'static str, &'static str)]) -> Vec<Label> {
    labels
        .iter()
        .map(|&(label, value)| Label::from_static_parts(label, value))
        .collect()
}

/// Describes every metric and registers all its series (see the module's comment); run once
/// the recorder is installed.
pub(super) fn register_all() {
    for metric in ALL {
        metric.register();
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;

    #[test]
    fn every_metric_has_its_own_prometheus_name_and_says_what_it_counts() {
        let names: BTreeSet<&str> = ALL.iter().map(|m| m.name).collect();
        assert_eq!(names.len(), ALL.len(), "a name listed twice");
        for metric in ALL {
            let name = metric.name;
            assert!(name.starts_with("dynapage_"), "{name}");
            assert!(
                name.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_'),
                "{name}"
            );
            assert_eq!(
                name.ends_with("_total"),
                metric.kind == Kind::Counter,
                "counters and only counters end in _total: {name}"
            );
            assert!(metric.help().ends_with('.'), "{name}: {:?}", metric.help());
            assert!(!metric.help().contains("  "), "{name}: {:?}", metric.help());
            assert!(metric.start == 0.0 || metric.kind == Kind::Gauge, "{name}");
        }
    }

    #[test]
    fn a_metrics_series_are_every_combination_of_its_label_values() {
        assert_eq!(REQUESTS_SHED.series(), vec![Vec::new()]);
        let series = GRAPHQL_REQUESTS.series();
        assert_eq!(series.len(), 2 * 4);
        assert_eq!(series[0], [("kind", "query"), ("outcome", "ok")]);
        assert_eq!(series[7], [("kind", "mutation"), ("outcome", "timeout")]);
    }
}
