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

/// A number as Python's `format(value, "g")` writes it: six significant digits, no trailing
/// zeros, an exponent below 1e-4 and from 1e6 (`0.0208333`, `48`, `1.5e+06`).
pub fn general(value: f64) -> String {
    if value == 0.0 || !value.is_finite() {
        return format!("{value}");
    }
    let exponent = value.abs().log10().floor() as i32;
    // Rounding to six digits can carry into the next power of ten (999999.5 → 1e+06).
    let scientific = format!("{value:.5e}");
    let (mantissa, exp) = scientific.split_once('e').unwrap_or((&scientific, "0"));
    let exp: i32 = exp.parse().unwrap_or(exponent);
    let trim = |text: &str| {
        if text.contains('.') {
            text.trim_end_matches('0').trim_end_matches('.').to_owned()
        } else {
            text.to_owned()
        }
    };
    if (-4..6).contains(&exp) {
        let decimals = usize::try_from(5 - exp).unwrap_or(0);
        trim(&format!("{value:.decimals$}"))
    } else {
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{}e{sign}{:02}", trim(mantissa), exp.abs())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn general_numbers_print_as_pythons_g() {
        assert_eq!(general(48.0), "48");
        assert_eq!(general(1.0 / 48.0), "0.0208333");
        assert_eq!(general(2.5), "2.5");
        assert_eq!(general(96.001), "96.001");
        assert_eq!(general(1_500_000.0), "1.5e+06");
        assert_eq!(general(999_999.5), "1e+06");
        assert_eq!(general(0.000_05), "5e-05");
        assert_eq!(general(0.0), "0");
    }

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
