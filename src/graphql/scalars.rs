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
        rfc3339(&self.0)
    }
}

/// `to_rfc3339()`'s text, written without a formatter for the instants dynapage stores (years
/// 0 to 9999, whole milliseconds: two on every comment of a page); chrono writes any other.
fn rfc3339(at: &chrono::DateTime<Utc>) -> String {
    use chrono::{Datelike as _, Timelike as _};
    let (year, nanos) = (at.year(), at.nanosecond());
    let Ok(year) = u32::try_from(year) else {
        return at.to_rfc3339();
    };
    if year > 9999 || nanos % 1_000_000 != 0 || nanos >= 1_000_000_000 {
        return at.to_rfc3339();
    }
    let mut text = [0u8; 29];
    let mut at_index = 0;
    let mut put = |digits: usize, value: u32, after: Option<u8>| {
        let mut rest = value;
        for i in (0..digits).rev() {
            text[at_index + i] = b'0' + (rest % 10) as u8;
            rest /= 10;
        }
        at_index += digits;
        if let Some(separator) = after {
            text[at_index] = separator;
            at_index += 1;
        }
    };
    put(4, year, Some(b'-'));
    put(2, at.month(), Some(b'-'));
    put(2, at.day(), Some(b'T'));
    put(2, at.hour(), Some(b':'));
    put(2, at.minute(), Some(b':'));
    if nanos == 0 {
        put(2, at.second(), None);
    } else {
        put(2, at.second(), Some(b'.'));
        put(3, nanos / 1_000_000, None);
    }
    let mut out = String::with_capacity(at_index + 6);
    out.push_str(std::str::from_utf8(&text[..at_index]).expect("ASCII digits"));
    out.push_str("+00:00");
    out
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
            assert_eq!(rfc3339(&at), at.to_rfc3339(), "{at:?}");
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
