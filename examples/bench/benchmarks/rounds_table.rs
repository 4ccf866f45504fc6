//! The tables of the benchmarks that compare cases in rounds (`page-numbers`, `orders`): from
//! every run and each query's cost, the medians, spreads and per-round ratios of each case to
//! the first (the baseline), written as CSV (one row per backend, offset and case) and as the
//! Markdown tables of BENCHMARKS.md.

use std::path::Path;

use crate::report::{Csv, Summary};
use crate::stats::{median, spread_pct, thousands};

/// One of the queries a benchmark compares: its name in files and its label in tables.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Case {
    pub name: &'static str,
    pub label: &'static str,
}

impl Case {
    pub fn name(self) -> &'static str {
        self.name
    }

    fn label(self) -> &'static str {
        self.label
    }
}

/// One measured run.
#[derive(Clone, Debug)]
pub struct RunRow {
    pub backend: String,
    pub round: u32,
    pub case: Case,
    pub offset: u64,
    pub connections: u32,
    pub req_s: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub load1: String,
    pub others_cores: f64,
    pub waited_s: u64,
    /// CPU µs per request of the server, then (on DynamoDB) DynamoDB Local and Redis.
    pub cpu_us: Vec<f64>,
}

impl RunRow {
    pub const HEADER: [&str; 14] = [
        "backend",
        "round",
        "case",
        "offset",
        "connections",
        "req_s",
        "p50_ms",
        "p99_ms",
        "load1",
        "others_cores",
        "waited_s",
        "server_cpu_us",
        "dynamodb_local_cpu_us",
        "redis_cpu_us",
    ];

    pub fn csv_line(&self) -> String {
        let cpu: Vec<String> = (0..3)
            .map(|i| {
                self.cpu_us
                    .get(i)
                    .map_or(String::new(), |v| format!("{v:.0}"))
            })
            .collect();
        format!(
            "{},{},{},{},{},{:.1},{:.2},{:.2},{},{:.2},{},{}",
            self.backend,
            self.round,
            self.case.name(),
            self.offset,
            self.connections,
            self.req_s,
            self.p50_ms,
            self.p99_ms,
            self.load1,
            self.others_cores,
            self.waited_s,
            cpu.join(",")
        )
    }

    fn is(&self, backend: &str, case: Case, offset: u64) -> bool {
        self.backend == backend && self.case == case && self.offset == offset
    }
}

/// What one query read, and its response's size.
#[derive(Clone, Debug)]
pub struct CostRow {
    backend: String,
    case: Case,
    offset: u64,
    /// Items read, store queries, index calls, response bytes.
    cost: [u64; 4],
}

impl CostRow {
    pub const HEADER: [&str; 7] = [
        "backend",
        "case",
        "offset",
        "items_read",
        "store_queries",
        "index_calls",
        "response_bytes",
    ];

    pub fn new(backend: &str, case: Case, offset: u64, cost: [u64; 4]) -> Self {
        Self {
            backend: backend.to_owned(),
            case,
            offset,
            cost,
        }
    }

    pub fn csv_line(&self) -> String {
        let [items, queries, calls, bytes] = self.cost;
        let (backend, case, offset) = (&self.backend, self.case.name(), self.offset);
        format!("{backend},{case},{offset},{items},{queries},{calls},{bytes}")
    }
}

/// One row of the tables: a backend, offset and case over its rounds.
#[derive(Debug)]
struct Row {
    backend: String,
    offset: u64,
    case: Case,
    p50: Vec<(u32, f64)>,
    p99: Vec<f64>,
    rps: Vec<(u32, f64)>,
    p50_16: Vec<f64>,
    cost: [u64; 4],
    max_others: f64,
    /// Median CPU µs per page of the server, DynamoDB Local, Redis (None where not measured).
    cpu: [Option<f64>; 3],
    /// This case over the baseline: the medians' ratio and each round's, for p50 and for req/s.
    ratios: Option<[(f64, String); 2]>,
}

fn values(pairs: &[(u32, f64)]) -> Vec<f64> {
    pairs.iter().map(|(_, v)| *v).collect()
}

/// Each round's ratio `a / b` (rounds in both), and the ratio of the medians.
fn ratio(a: &[(u32, f64)], b: &[(u32, f64)]) -> (f64, String) {
    let mut rounds: Vec<String> = Vec::new();
    let mut sorted = a.to_vec();
    sorted.sort_by_key(|(round, _)| *round);
    for (round, value) in &sorted {
        if let Some((_, base)) = b.iter().find(|(r, _)| r == round) {
            rounds.push(format!("{:.2}", value / base));
        }
    }
    (median(&values(a)) / median(&values(b)), rounds.join(" "))
}

/// The rows of each backend and offset: the cases in their order, each but the first with its
/// ratios to the first.
fn rows(runs: &[RunRow], costs: &[CostRow], cases: &[Case]) -> Vec<Row> {
    let mut rows: Vec<Row> = Vec::new();
    let mut backends: Vec<&str> = Vec::new();
    for run in runs {
        if !backends.contains(&run.backend.as_str()) {
            backends.push(&run.backend);
        }
    }
    for backend in backends {
        let mut offsets: Vec<u64> = Vec::new();
        for run in runs.iter().filter(|r| r.backend == backend) {
            if !offsets.contains(&run.offset) {
                offsets.push(run.offset);
            }
        }
        for offset in offsets {
            let Some((&first, others)) = cases.split_first() else {
                continue;
            };
            let baseline = row(runs, costs, backend, first, offset, None);
            let compared: Vec<Row> = others
                .iter()
                .map(|&case| row(runs, costs, backend, case, offset, Some(&baseline)))
                .collect();
            rows.push(baseline);
            rows.extend(compared);
        }
    }
    rows
}

fn row(
    runs: &[RunRow],
    costs: &[CostRow],
    backend: &str,
    case: Case,
    offset: u64,
    baseline: Option<&Row>,
) -> Row {
    let of = |connections: u32| {
        runs.iter()
            .filter(move |r| r.is(backend, case, offset) && r.connections == connections)
    };
    let cpu_median = |i: usize| {
        let v: Vec<f64> = of(16).filter_map(|r| r.cpu_us.get(i).copied()).collect();
        (!v.is_empty()).then(|| median(&v))
    };
    let p50: Vec<(u32, f64)> = of(1).map(|r| (r.round, r.p50_ms)).collect();
    let rps: Vec<(u32, f64)> = of(16).map(|r| (r.round, r.req_s)).collect();
    let ratios = baseline.map(|b| [ratio(&p50, &b.p50), ratio(&rps, &b.rps)]);
    Row {
        backend: backend.to_owned(),
        offset,
        case,
        p99: of(1).map(|r| r.p99_ms).collect(),
        p50_16: of(16).map(|r| r.p50_ms).collect(),
        p50,
        rps,
        cost: costs
            .iter()
            .find(|c| c.backend == backend && c.case == case && c.offset == offset)
            .map_or([0; 4], |c| c.cost),
        max_others: runs
            .iter()
            .filter(|r| r.is(backend, case, offset))
            .map(|r| r.others_cores)
            .fold(0.0, f64::max),
        cpu: [cpu_median(0), cpu_median(1), cpu_median(2)],
        ratios,
    }
}

const CSV_HEADER: [&str; 22] = [
    "backend",
    "offset",
    "case",
    "p50_ms",
    "p50_spread_pct",
    "p99_ms",
    "p99_spread_pct",
    "req_s",
    "req_s_spread_pct",
    "p50_16_ms",
    "items_read",
    "store_queries",
    "index_calls",
    "response_bytes",
    "max_others_cores",
    "server_cpu_us",
    "dynamodb_local_cpu_us",
    "redis_cpu_us",
    "p50_ratio",
    "p50_ratio_rounds",
    "req_s_ratio",
    "req_s_ratio_rounds",
];

fn csv_fields(r: &Row) -> Vec<String> {
    let f = |v: f64| format!("{v:.2}");
    let cpu = |v: Option<f64>| v.map_or(String::new(), f);
    let [items, queries, calls, bytes] = r.cost;
    let mut fields = vec![
        r.backend.clone(),
        r.offset.to_string(),
        r.case.name().to_owned(),
        f(median(&values(&r.p50))),
        f(spread_pct(&values(&r.p50))),
        f(median(&r.p99)),
        f(spread_pct(&r.p99)),
        f(median(&values(&r.rps))),
        f(spread_pct(&values(&r.rps))),
        f(median(&r.p50_16)),
        items.to_string(),
        queries.to_string(),
        calls.to_string(),
        bytes.to_string(),
        f(r.max_others),
        cpu(r.cpu[0]),
        cpu(r.cpu[1]),
        cpu(r.cpu[2]),
    ];
    match &r.ratios {
        Some([(p50, p50_rounds), (rps, rps_rounds)]) => {
            fields.extend([f(*p50), p50_rounds.clone(), f(*rps), rps_rounds.clone()]);
        }
        None => fields.extend([String::new(), String::new(), String::new(), String::new()]),
    }
    fields
}

/// Writes the CSV and prints the tables into `out`; `cases` as run, the baseline first, and
/// `ratio` names the ratio to it in the table's head (such as `pager/page`).
pub fn write_tables(
    (runs, costs, cases): (&[RunRow], &[CostRow], &[Case]),
    ratio: &str,
    csv_path: &Path,
    out: &mut Summary,
) -> anyhow::Result<()> {
    let rows = rows(runs, costs, cases);
    let mut csv = Csv::create(csv_path, &CSV_HEADER)?;
    for row in &rows {
        let fields = csv_fields(row);
        let refs: Vec<&dyn std::fmt::Display> =
            fields.iter().map(|f| f as &dyn std::fmt::Display).collect();
        csv.row(&refs)?;
    }
    out.line(&format!("| backend | offset | query | 1 conn p50 ms (spread) | 1 conn p99 ms (spread) | 16 conn req/s (spread) | 16 conn p50 ms | index calls | store queries | items read | bytes | {ratio} p50 (per round) | {ratio} req/s (per round) |"))?;
    out.line("|---|--:|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|")?;
    for r in &rows {
        let [items, queries, calls, bytes] = r.cost;
        let (p50_ratio, rps_ratio) = match &r.ratios {
            Some([(p, pr), (q, qr)]) => (format!("{p:.2} ({pr})"), format!("{q:.2} ({qr})")),
            None => (String::new(), String::new()),
        };
        out.line(&format!(
            "| {} | {} | {} | {:.2} (±{:.0}%) | {:.2} (±{:.0}%) | {} (±{:.0}%) | {:.2} | {calls} | {queries} | {items} | {} | {p50_ratio} | {rps_ratio} |",
            r.backend,
            thousands(r.offset as f64, 0),
            r.case.label(),
            median(&values(&r.p50)),
            spread_pct(&values(&r.p50)),
            median(&r.p99),
            spread_pct(&r.p99),
            thousands(median(&values(&r.rps)), 0),
            spread_pct(&values(&r.rps)),
            median(&r.p50_16),
            thousands(bytes as f64, 0),
        ))?;
    }
    out.line("")?;
    out.line(&format!("spread: (max - min) / median over the rounds; {ratio}: the medians' ratio, and per round the run over the {} run of the same round", cases.first().map_or("", |c| c.name)))?;
    out.line("")?;
    out.line("| backend | offset | query | server CPU µs per page | DynamoDB Local CPU µs per page | Redis CPU µs per page |")?;
    out.line("|---|--:|---|--:|--:|--:|")?;
    for r in &rows {
        let cell = |v: Option<f64>| v.map_or_else(|| "-".to_owned(), |v| thousands(v, 0));
        out.line(&format!(
            "| {} | {} | {} | {} | {} | {} |",
            r.backend,
            thousands(r.offset as f64, 0),
            r.case.label(),
            cell(r.cpu[0]),
            cell(r.cpu[1]),
            cell(r.cpu[2])
        ))?;
    }
    out.line("")?;
    out.line("CPU per page: each process's CPU time over a 16-connection run divided by its requests (median of the rounds)")?;
    let others: Vec<String> = rows
        .iter()
        .map(|r| {
            format!(
                "{} {} {}: {:.2}",
                r.backend,
                r.case.name(),
                r.offset,
                r.max_others
            )
        })
        .collect();
    out.line(&format!(
        "most CPU other processes took during one run of a case (cores): {}",
        others.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    const PAGE: Case = Case {
        name: "page",
        label: "page alone",
    };
    const PAGER: Case = Case {
        name: "pager",
        label: "page + pager",
    };

    fn run(round: u32, case: Case, connections: u32, req_s: f64, p50_ms: f64) -> RunRow {
        RunRow {
            backend: "embedded".into(),
            round,
            case,
            offset: 0,
            connections,
            req_s,
            p50_ms,
            p99_ms: 1.0,
            load1: "0.5".into(),
            others_cores: 0.1,
            waited_s: 3,
            cpu_us: vec![250.0],
        }
    }

    #[test]
    fn the_pager_row_carries_each_rounds_ratio_to_the_page() {
        let runs = [
            run(1, PAGE, 1, 0.0, 0.40),
            run(1, PAGER, 1, 0.0, 0.60),
            run(2, PAGER, 1, 0.0, 0.50),
            run(2, PAGE, 1, 0.0, 0.50),
            run(1, PAGE, 16, 1000.0, 2.0),
            run(1, PAGER, 16, 500.0, 4.0),
        ];
        let rows = rows(&runs, &[], &[PAGE, PAGER]);
        assert_eq!(rows.len(), 2);
        let Some([(p50, p50_rounds), (rps, rps_rounds)]) = &rows[1].ratios else {
            panic!("the pager row has ratios");
        };
        assert_eq!(p50_rounds, "1.50 1.00");
        assert!((p50 - 0.55 / 0.45).abs() < 1e-9);
        assert_eq!((*rps, rps_rounds.as_str()), (0.5, "0.50"));
        assert_eq!(rows[0].cpu, [Some(250.0), None, None]);
    }

    #[test]
    fn every_case_is_compared_with_the_first_of_its_round() {
        let other = Case {
            name: "other",
            label: "other",
        };
        let runs = [
            run(1, PAGE, 1, 0.0, 0.40),
            run(1, PAGER, 1, 0.0, 0.60),
            run(1, other, 1, 0.0, 0.20),
            run(2, PAGE, 1, 0.0, 0.30),
            run(2, other, 1, 0.0, 0.90),
        ];
        let rows = rows(&runs, &[], &[PAGE, PAGER, other]);
        let cases: Vec<&str> = rows.iter().map(|r| r.case.name).collect();
        assert_eq!(cases, ["page", "pager", "other"]);
        assert!(rows[0].ratios.is_none());
        let Some([(_, pager_rounds), _]) = &rows[1].ratios else {
            panic!("the pager row has ratios");
        };
        assert_eq!(pager_rounds, "1.50");
        let Some([(_, other_rounds), _]) = &rows[2].ratios else {
            panic!("the other row has ratios");
        };
        assert_eq!(other_rounds, "0.50 3.00");
    }
}
