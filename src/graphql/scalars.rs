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
        Value::String(self.0.to_rfc3339())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
