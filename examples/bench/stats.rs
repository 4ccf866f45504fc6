//! The statistics the tables report: medians, spreads and percentiles of a few samples.

/// The median: the middle value, or the mean of the two middle ones (0 for no values).
pub fn median(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len();
    match n {
        0 => 0.0,
        _ if n % 2 == 1 => sorted[n / 2],
        _ => (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0,
    }
}

/// (max - min) / median, in percent: how far the runs of one case disagree.
pub fn spread_pct(values: &[f64]) -> f64 {
    let m = median(values);
    let max = values.iter().copied().fold(f64::MIN, f64::max);
    let min = values.iter().copied().fold(f64::MAX, f64::min);
    if m > 0.0 && !values.is_empty() {
        100.0 * (max - min) / m
    } else {
        0.0
    }
}

/// The `p`-th percentile (0 to 100) of sorted values, by nearest rank; NaN for none.
pub fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = ((p / 100.0) * (sorted.len() - 1) as f64).round() as usize;
    sorted[rank.min(sorted.len() - 1)]
}

/// `value` rounded to `decimals` decimals, so that it prints as that many digits at most.
pub fn round(value: f64, decimals: i32) -> f64 {
    let scale = 10f64.powi(decimals);
    (value * scale).round() / scale
}

/// A number with `decimals` decimals and a comma between thousands: `1,234.5`.
pub fn thousands(value: f64, decimals: usize) -> String {
    let text = format!("{:.*}", decimals, value.abs());
    let (whole, fraction) = text.split_once('.').unwrap_or((&text, ""));
    let mut grouped = String::new();
    for (i, digit) in whole.chars().enumerate() {
        if i > 0 && (whole.len() - i) % 3 == 0 {
            grouped.push(',');
        }
        grouped.push(digit);
    }
    let sign = if value < 0.0 && text.chars().any(|c| c.is_ascii_digit() && c != '0') {
        "-"
    } else {
        ""
    };
    if fraction.is_empty() {
        format!("{sign}{grouped}")
    } else {
        format!("{sign}{grouped}.{fraction}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_and_spread_of_a_few_runs() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), 2.5);
        assert_eq!(spread_pct(&[90.0, 100.0, 110.0]), 20.0);
        assert_eq!(percentile(&[1.0, 2.0, 3.0, 4.0, 5.0], 50.0), 3.0);
    }

    #[test]
    fn thousands_are_grouped_as_python_does() {
        assert_eq!(thousands(1_234_567.891, 1), "1,234,567.9");
        assert_eq!(thousands(999.0, 0), "999");
        assert_eq!(thousands(1000.0, 0), "1,000");
        assert_eq!(thousands(-1234.0, 0), "-1,234");
    }
}
