//! `ab paired`: the paired statistics of `ab run` outputs. For each round, the new side's CPU
//! per request over the old side's (the two runs are adjacent in time, so a machine that speeds
//! up or slows down between rounds moves both); then their median, geometric mean, spread, and
//! a 95 % bootstrap interval of the median (5,000 resamples, fixed seed). One line per file and
//! case.
//!
//! The resampling draws exactly as the Python script this replaced did (`bench/ab/paired.py`,
//! before issue 43: Python's Mersenne Twister seeded with 1, `random.choices`), so a file of an
//! earlier run gives the interval BENCHMARKS.md quotes; that script paired the last case of a
//! round only, and this pairs each case.

use std::collections::BTreeMap;
use std::path::PathBuf;

use anyhow::Context as _;

use super::run::RunLine;
use crate::stats::median;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Outputs of `ab run` (its result files, or what the script before it, `bench/ab/run.sh`,
    /// printed)
    #[arg(required = true)]
    files: Vec<PathBuf>,
}

pub fn run(args: &Args) -> anyhow::Result<()> {
    for path in &args.files {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        let name = path
            .file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
        let lines = parse(&text);
        let summaries = summaries(&name, &lines);
        if summaries.is_empty() {
            println!("{}: no complete round", path.display());
        }
        for line in summaries {
            println!("{line}");
        }
    }
    Ok(())
}

/// The run lines of an output: `round case side requests req_per_s cpu_us_per_request`.
pub fn parse(text: &str) -> Vec<RunLine> {
    text.lines()
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            if fields.len() != 6 || !fields[0].bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            Some(RunLine {
                round: fields[0].parse().ok()?,
                case: fields[1].to_owned(),
                side: fields[2].to_owned(),
                requests: fields[3].parse().ok()?,
                req_per_s: fields[4].parse().ok()?,
                cpu_us: fields[5].parse().ok()?,
            })
        })
        .collect()
}

/// A round's CPU per request of the old side and of the new one, as far as measured.
type Pair = (Option<f64>, Option<f64>);

/// One line per case of `lines` with a complete round (both sides), named `name` (and the case
/// when there are several).
pub fn summaries(name: &str, lines: &[RunLine]) -> Vec<String> {
    let mut cases: BTreeMap<&str, BTreeMap<u32, Pair>> = BTreeMap::new();
    let mut order: Vec<&str> = Vec::new();
    for line in lines {
        if !order.contains(&line.case.as_str()) {
            order.push(&line.case);
        }
        let round = cases
            .entry(&line.case)
            .or_default()
            .entry(line.round)
            .or_default();
        match line.side.as_str() {
            "old" => round.0 = Some(line.cpu_us),
            "new" => round.1 = Some(line.cpu_us),
            _ => {}
        }
    }
    let several = order.len() > 1;
    order
        .into_iter()
        .filter_map(|case| {
            let pairs: Vec<(f64, f64)> = cases[case]
                .values()
                .filter_map(|&(old, new)| Some((old?, new?)))
                .collect();
            let label = if several {
                format!("{name} {case}")
            } else {
                name.to_owned()
            };
            (!pairs.is_empty()).then(|| summary(&label, &pairs))
        })
        .collect()
}

/// The line of one file (and case) from its rounds' (old, new) CPU per request.
fn summary(label: &str, pairs: &[(f64, f64)]) -> String {
    let ratios: Vec<f64> = pairs.iter().map(|(old, new)| new / old).collect();
    let n = ratios.len();
    let middle = median(&ratios);
    let geometric = (ratios.iter().map(|r| r.ln()).sum::<f64>() / n as f64).exp();
    let mut rng = PythonRandom::new(1);
    let mut boots: Vec<f64> = (0..5000)
        .map(|_| {
            let sample: Vec<f64> = (0..n).map(|_| ratios[rng.below(n)]).collect();
            median(&sample)
        })
        .collect();
    boots.sort_by(f64::total_cmp);
    let (low, high) = (boots[125], boots[4874]);
    let spread = if n > 1 { stdev(&ratios) * 100.0 } else { 0.0 };
    let old = median(&pairs.iter().map(|p| p.0).collect::<Vec<_>>());
    let new = median(&pairs.iter().map(|p| p.1).collect::<Vec<_>>());
    format!(
        "{label}: {n} rounds; CPU per request, medians: old {old:.2} µs, new {new:.2} µs; paired new/old median {}, geometric mean {}, 95 % bootstrap interval of the median [{}, {}], sd {spread:.1} %",
        percent(middle),
        percent(geometric),
        percent(low),
        percent(high)
    )
}

fn percent(ratio: f64) -> String {
    format!("{:+.1} %", 100.0 * (ratio - 1.0))
}

/// The sample standard deviation (n - 1), as Python's `statistics.stdev`.
fn stdev(values: &[f64]) -> f64 {
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    (values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt()
}

/// Python's `random.Random(seed)` for a small integer seed: the Mersenne Twister (MT19937)
/// seeded by `init_by_array([seed])`, `random()` from two draws (53 bits), and `choices`'
/// index `floor(random() * n)`.
struct PythonRandom {
    state: [u32; 624],
    next: usize,
}

impl PythonRandom {
    fn new(seed: u32) -> Self {
        let mut state = [0u32; 624];
        state[0] = 19_650_218;
        for i in 1..624 {
            let prev = state[i - 1];
            state[i] = 1_812_433_253u32
                .wrapping_mul(prev ^ (prev >> 30))
                .wrapping_add(i as u32);
        }
        let (mut i, key) = (1usize, [seed]);
        for k in 0..624 {
            let prev = state[i - 1];
            state[i] = (state[i] ^ (prev ^ (prev >> 30)).wrapping_mul(1_664_525))
                .wrapping_add(key[k % key.len()])
                .wrapping_add((k % key.len()) as u32);
            i += 1;
            if i >= 624 {
                state[0] = state[623];
                i = 1;
            }
        }
        for _ in 0..623 {
            let prev = state[i - 1];
            state[i] = (state[i] ^ (prev ^ (prev >> 30)).wrapping_mul(1_566_083_941))
                .wrapping_sub(i as u32);
            i += 1;
            if i >= 624 {
                state[0] = state[623];
                i = 1;
            }
        }
        state[0] = 0x8000_0000;
        Self { state, next: 624 }
    }

    fn next_u32(&mut self) -> u32 {
        if self.next >= 624 {
            for i in 0..624 {
                let y = (self.state[i] & 0x8000_0000) | (self.state[(i + 1) % 624] & 0x7fff_ffff);
                let mag = if y & 1 == 1 { 0x9908_b0df } else { 0 };
                self.state[i] = self.state[(i + 397) % 624] ^ (y >> 1) ^ mag;
            }
            self.next = 0;
        }
        let mut y = self.state[self.next];
        self.next += 1;
        y ^= y >> 11;
        y ^= (y << 7) & 0x9d2c_5680;
        y ^= (y << 15) & 0xefc6_0000;
        y ^ (y >> 18)
    }

    /// `random()`: a float in [0, 1) with 53 random bits.
    fn random(&mut self) -> f64 {
        let a = f64::from(self.next_u32() >> 5);
        let b = f64::from(self.next_u32() >> 6);
        (a * 67_108_864.0 + b) / 9_007_199_254_740_992.0
    }

    /// An index below `n`, as `random.choices` picks one.
    fn below(&mut self, n: usize) -> usize {
        (self.random() * n as f64).floor() as usize
    }
}

#[cfg(test)]
mod tests {
    use super::{PythonRandom, parse, summaries};

    #[test]
    fn the_generator_draws_what_pythons_random_1_draws() {
        let mut rng = PythonRandom::new(1);
        // python3 -c 'import random; r = random.Random(1); print(r.random(), r.random())'
        assert_eq!(rng.random(), 0.134_364_244_112_401_22);
        assert_eq!(rng.random(), 0.847_433_736_937_232_7);
    }

    /// Rounds of two cases, as `ab run` writes them (case `page-0` with rounds 1 to 6, the
    /// order flipped every round, and `pager-deep` with one incomplete round).
    const OUTPUT: &str = "\
# round case side requests req_per_s cpu_us_per_request
1 page-0 old 49665 4966 370.88
1 page-0 new 47314 4731 389.74
1 pager-deep old 37243 3724 502.91
2 page-0 new 48324 4832 383.04
2 page-0 old 51829 5183 350.58
3 page-0 old 56198 5620 327.95
3 page-0 new 53000 5300 341.20
4 page-0 new 50110 5011 360.02
4 page-0 old 50001 5000 352.47
5 page-0 old 49990 4999 361.10
5 page-0 new 49000 4900 368.33
6 page-0 new 51000 5100 349.99
6 page-0 old 52000 5200 339.12
";

    #[test]
    fn the_paired_line_matches_what_paired_py_printed_for_the_same_rounds() {
        let lines = parse(OUTPUT);
        assert_eq!(lines.len(), 13);
        // The script this replaced (bench/ab/paired.py) printed exactly this for these lines.
        let page_0: Vec<_> = lines.into_iter().filter(|l| l.case == "page-0").collect();
        assert_eq!(
            summaries("run.txt", &page_0),
            [
                "run.txt: 6 rounds; CPU per request, medians: old 351.52 µs, new 364.17 µs; paired new/old median +3.6 %, geometric mean +4.3 %, 95 % bootstrap interval of the median [+2.1 %, +7.2 %], sd 2.7 %"
            ]
        );
    }

    #[test]
    fn several_cases_give_a_line_each_and_a_case_without_a_complete_round_none() {
        let lines = summaries("run.txt", &parse(OUTPUT));
        assert_eq!(lines.len(), 1);
        assert!(lines[0].starts_with("run.txt page-0: 6 rounds;"));
    }
}
