//! Custom scalars, with descriptions of our own (generated clients show them to developers).

use async_graphql::{InputValueError, InputValueResult, Scalar, ScalarType, Value};
use chrono::Utc;

/// A UTC instant, our `DateTime` scalar. A newtype rather than async-graphql's own chrono
/// scalar so the schema carries our description; the wire format is the same.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DateTime(pub chrono::DateTime<Utc>);

/// An instant in UTC as an RFC 3339 string, e.g. `2026-09-04T15:43:19.800+00:00` (millisecond
/// precision; fractional seconds are left out when they are zero).
#[Scalar(
    name = "DateTime",
    specified_by_url = "https://datatracker.ietf.org/doc/html/rfc3339"
)]
impl ScalarType for DateTime {
    fn parse(value: Value) -> InputValueResult<Self> {
        match &value {
            Value::String(s) => Ok(Self(s.parse::<chrono::DateTime<Utc>>()?)),
            _ => Err(InputValueError::expected_type(value)),
        }
    }

    fn to_value(&self) -> Value {
        Value::String(self.text())
    }
}

impl DateTime {
    /// The instant as its `DateTime` value's text.
    pub fn text(&self) -> String {
        Rfc3339::of(&self.0).into_string()
    }
}

/// `to_rfc3339()`'s text of an instant. The instants dynapage stores (years 0 to 9999, whole
/// milliseconds: two on every comment of a page) are written on the stack without a formatter
/// ([`Short`]); chrono writes any other.
pub(super) enum Rfc3339 {
    /// The text of an instant dynapage stores.
    Short(Short),
    /// chrono's text of any other instant.
    Long(String),
}

/// At most `YYYY-MM-DDTHH:MM:SS.mmm+00:00`: ASCII digits and punctuation, nothing a JSON string
/// escapes.
pub(super) struct Short {
    text: [u8; 29],
    len: usize,
}

impl Rfc3339 {
    /// The text, as a `String`.
    pub(super) fn into_string(self) -> String {
        match self {
            Self::Short(short) => std::str::from_utf8(short.as_bytes())
                .unwrap_or_else(|_| unreachable!("ASCII digits and punctuation"))
                .to_owned(),
            Self::Long(text) => text,
        }
    }

    /// The text of `at`.
    pub(super) fn of(at: &chrono::DateTime<Utc>) -> Self {
        use chrono::{Datelike as _, Timelike as _};
        // The UTC date and time once: `DateTime<Utc>`'s accessors add the offset on every call.
        let naive = at.naive_utc();
        let (year, nanos) = (naive.year(), naive.nanosecond());
        match u32::try_from(year) {
            Ok(year) if year <= 9999 && nanos % 1_000_000 == 0 && nanos < 1_000_000_000 => {
                let date = [year, naive.month(), naive.day()];
                let time = [naive.hour(), naive.minute(), naive.second()];
                Self::Short(Short::new(date, time, nanos / 1_000_000))
            }
            _ => Self::Long(at.to_rfc3339()),
        }
    }

    /// The text of the instant `ms` milliseconds after the Unix epoch, as stored
    /// (`domain::Comment::created_at_ms`): the text of `millis_to_datetime(ms)`, from the
    /// milliseconds without chrono's calendar for the instants before the year 10000 (days to
    /// a civil date by Hinnant's `civil_from_days`).
    pub(super) fn of_millis(ms: u64) -> Self {
        /// 10000-01-01T00:00:00Z: this and later instants are written by chrono.
        const YEAR_10000_MS: u64 = 253_402_300_800_000;
        if ms >= YEAR_10000_MS {
            return Self::of(&crate::domain::millis_to_datetime(ms));
        }
        let narrow = |value: u64| u32::try_from(value).unwrap_or_else(|_| unreachable!("< 10000"));
        let (days, in_day) = (ms / 86_400_000, ms % 86_400_000);
        // Days since 0000-03-01, in eras of 400 years (146,097 days).
        let z = days + 719_468;
        let (era, day_of_era) = (z / 146_097, z % 146_097);
        let year_of_era =
            (day_of_era - day_of_era / 1_460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
        let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
        let from_march = (5 * day_of_year + 2) / 153;
        let day = day_of_year - (153 * from_march + 2) / 5 + 1;
        let month = if from_march < 10 {
            from_march + 3
        } else {
            from_march - 9
        };
        let year = year_of_era + era * 400 + u64::from(month <= 2);
        let seconds = in_day / 1_000;
        let date = [narrow(year), narrow(month), narrow(day)];
        let time = [seconds / 3_600, seconds / 60 % 60, seconds % 60].map(narrow);
        Self::Short(Short::new(date, time, narrow(in_day % 1_000)))
    }
}

impl Short {
    /// `YYYY-MM-DDTHH:MM:SS+00:00`, with `.mmm` before the offset when `millis` is not zero.
    fn new(date: [u32; 3], time: [u32; 3], millis: u32) -> Self {
        let mut text = [0u8; 29];
        let mut at = 0;
        let mut put = |digits: usize, value: u32, after: &[u8]| {
            let mut rest = value;
            for i in (0..digits).rev() {
                text[at + i] = b'0' + (rest % 10) as u8;
                rest /= 10;
            }
            at += digits;
            text[at..at + after.len()].copy_from_slice(after);
            at += after.len();
        };
        put(4, date[0], b"-");
        put(2, date[1], b"-");
        put(2, date[2], b"T");
        put(2, time[0], b":");
        put(2, time[1], b":");
        if millis == 0 {
            put(2, time[2], b"+00:00");
        } else {
            put(2, time[2], b".");
            put(3, millis, b"+00:00");
        }
        Self { text, len: at }
    }

    /// The text's bytes.
    pub(super) fn as_bytes(&self) -> &[u8] {
        &self.text[..self.len]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_writer_writes_what_chrono_writes() {
        let mut state = 11u64;
        let mut instants: Vec<chrono::DateTime<Utc>> = (0..5_000)
            .map(|_| {
                state = crate::domain::splitmix(state);
                // Any millisecond from about 969 to 11,900 CE (past 9999 chrono writes it).
                let ms = (state % 346_000_000_000_000) as i64 - 31_600_000_000_000;
                chrono::DateTime::from_timestamp_millis(ms).expect("in range")
            })
            .collect();
        for edge in [0, 999, 1_000, 253_402_300_799_999, 253_402_300_800_000, -1] {
            instants.push(chrono::DateTime::from_timestamp_millis(edge).expect("in range"));
        }
        let nanos = chrono::DateTime::from_timestamp(1_788_536_599, 123_456).expect("valid");
        instants.push(nanos);
        for at in instants {
            assert_eq!(DateTime(at).text(), at.to_rfc3339(), "{at:?}");
        }
    }

    #[test]
    fn the_text_of_stored_milliseconds_is_chronos() {
        let mut state = 13u64;
        let mut stored: Vec<u64> = (0..20_000)
            .map(|_| {
                state = crate::domain::splitmix(state);
                // Any millisecond from 1970 to about 11,900 CE.
                state % 313_000_000_000_000
            })
            .collect();
        // The epoch, leap days around 2000 and 2100, the last millisecond before the year 10000,
        // the first after it (chrono's text), and the largest value (read as -1 ms, as stored).
        stored.extend([
            0,
            1,
            999,
            951_782_400_000,
            4_107_542_400_000,
            253_402_300_799_999,
        ]);
        stored.extend([253_402_300_800_000, u64::MAX]);
        for ms in stored {
            let text = Rfc3339::of_millis(ms).into_string();
            let chrono = crate::domain::millis_to_datetime(ms).to_rfc3339();
            assert_eq!(text, chrono, "{ms}");
        }
    }

    #[test]
    fn date_times_are_rfc3339_with_milliseconds_when_present() {
        let at = |ms: i64| DateTime(chrono::DateTime::from_timestamp_millis(ms).expect("valid"));
        assert_eq!(
            at(1_788_536_599_800).to_value(),
            Value::from("2026-09-04T15:43:19.800+00:00")
        );
        assert_eq!(
            at(1_788_536_599_000).to_value(),
            Value::from("2026-09-04T15:43:19+00:00")
        );
        let parsed = <DateTime as ScalarType>::parse(Value::from("2026-09-04T17:43:19.8+02:00"))
            .expect("an RFC 3339 string");
        assert_eq!(parsed, at(1_788_536_599_800));
    }
}
