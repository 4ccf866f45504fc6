//! `/metrics` read as a dashboard reads it: the Prometheus text format parsed into series (a
//! name and its labels) and their values, with each metric's `# TYPE` and `# HELP`, so a test
//! asks for one series by its labels in any order instead of matching the text.
//!
//! The in-process servers of one test binary share one recorder: their counters hold every
//! test's events, so tests compare a series before and after what they do.

use std::collections::BTreeMap;

/// One series: a metric's sample name (`_bucket`, `_sum` and `_count` for a histogram's) and
/// its labels.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Series {
    pub name: String,
    pub labels: BTreeMap<String, String>,
}

/// One scrape of `/metrics`.
#[derive(Debug)]
pub struct Metrics {
    /// The text as it was served, for failure messages.
    pub text: String,
    /// Every sample's value by its series.
    pub samples: BTreeMap<Series, f64>,
    /// Each metric's `# TYPE` (`counter`, `gauge`, `histogram`) by its name.
    pub types: BTreeMap<String, String>,
    /// Each metric's `# HELP` by its name.
    pub help: BTreeMap<String, String>,
}

impl Metrics {
    /// Parses the text format: `# HELP name text`, `# TYPE name kind`, and
    /// `name{label="value",…} value` samples (values may be `NaN` or `+Inf`).
    pub fn parse(text: &str) -> Self {
        let mut metrics = Self {
            text: text.to_owned(),
            samples: BTreeMap::new(),
            types: BTreeMap::new(),
            help: BTreeMap::new(),
        };
        for line in text.lines().filter(|line| !line.trim().is_empty()) {
            if let Some(rest) = line.strip_prefix("# HELP ") {
                let (name, help) = rest.split_once(' ').unwrap_or((rest, ""));
                metrics.help.insert(name.to_owned(), help.to_owned());
            } else if let Some(rest) = line.strip_prefix("# TYPE ") {
                let (name, kind) = rest.split_once(' ').expect("`# TYPE name kind`");
                metrics.types.insert(name.to_owned(), kind.to_owned());
            } else if !line.starts_with('#') {
                let (series, value) = sample(line);
                metrics.samples.insert(series, value);
            }
        }
        metrics
    }

    /// The value of the series `name` with exactly `labels` (in any order), `None` when it is
    /// not served.
    pub fn get(&self, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
        let series = Series {
            name: name.to_owned(),
            labels: labels
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
        };
        self.samples.get(&series).copied()
    }

    /// [`get`](Self::get), failing the test when the series is not served.
    #[track_caller]
    pub fn value(&self, name: &str, labels: &[(&str, &str)]) -> f64 {
        self.get(name, labels)
            .unwrap_or_else(|| panic!("no series {name} {labels:?} in /metrics:\n{}", self.text))
    }

    /// Every series of the sample name `name`, whatever their labels.
    pub fn series_of<'a>(&'a self, name: &'a str) -> impl Iterator<Item = (&'a Series, f64)> {
        self.samples
            .iter()
            .filter(move |(series, _)| series.name == name)
            .map(|(series, value)| (series, *value))
    }
}

/// `name{a="x",b="y"} value` (or `name value`) as a series and its value.
fn sample(line: &str) -> (Series, f64) {
    let (series, value) = line.rsplit_once(' ').expect("`series value`");
    let value = value
        .parse()
        .unwrap_or_else(|_| panic!("a number in `{line}`"));
    let Some((name, labels)) = series.split_once('{') else {
        let series = Series {
            name: series.to_owned(),
            labels: BTreeMap::new(),
        };
        return (series, value);
    };
    let labels = labels.strip_suffix('}').expect("labels end with `}`");
    let series = Series {
        name: name.to_owned(),
        labels: label_pairs(labels),
    };
    (series, value)
}

/// `a="x",b="y \"quoted\""` as pairs, escapes undone.
fn label_pairs(mut rest: &str) -> BTreeMap<String, String> {
    let mut labels = BTreeMap::new();
    while !rest.is_empty() {
        let (key, after) = rest.split_once("=\"").expect("`key=\"value\"`");
        let mut value = String::new();
        let mut chars = after.char_indices();
        let end = loop {
            match chars.next().expect("a closing quote") {
                (i, '"') => break i,
                (_, '\\') => match chars.next().expect("an escaped character").1 {
                    'n' => value.push('\n'),
                    other => value.push(other),
                },
                (_, c) => value.push(c),
            }
        };
        labels.insert(key.to_owned(), value);
        rest = after[end + 1..].trim_start_matches(',');
    }
    labels
}

#[test]
fn a_scrape_is_read_into_series_by_name_and_labels_in_any_order() {
    let metrics = Metrics::parse(
        "# HELP a_total What a counts.\n# TYPE a_total counter\na_total{x=\"1\",y=\"two, \\\"2\\\"\"} 3\n\
         # TYPE b gauge\nb NaN\nh_bucket{le=\"+Inf\"} 7\n",
    );
    assert_eq!(
        metrics.get("a_total", &[("y", "two, \"2\""), ("x", "1")]),
        Some(3.0)
    );
    assert_eq!(metrics.get("a_total", &[("x", "1")]), None);
    assert!(metrics.value("b", &[]).is_nan());
    assert_eq!(metrics.value("h_bucket", &[("le", "+Inf")]), 7.0);
    assert_eq!(metrics.types["a_total"], "counter");
    assert_eq!(metrics.help["a_total"], "What a counts.");
    assert_eq!(metrics.series_of("a_total").count(), 1);
}
