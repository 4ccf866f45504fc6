//! `extensions.cost`, the part of every `/graphql` response that tells a client what its request
//! cost and what is left of its budget, in the shape Shopify's clients already read.

use async_graphql::indexmap::IndexMap;
use async_graphql::{Name, Value};

use crate::pagination::PageStats;
use crate::ratelimit::Throttle;

/// `extensions.cost`: the budget in Shopify's shape (`requestedQueryCost`: the complexity, null
/// when the request failed before it was priced; `actualQueryCost`: what it took from the
/// budget, the same number, null when it did not run; `throttleStatus`: the budget after it,
/// null when cost is not limited), beside what the request read.
pub(crate) fn extension(
    requested: Option<u64>,
    actual: Option<u64>,
    throttle: Option<Throttle>,
    read: PageStats,
) -> Value {
    let mut cost = IndexMap::with_capacity(6);
    let number = |n: Option<u64>| n.map_or(Value::Null, Value::from);
    cost.insert(Name::new("requestedQueryCost"), number(requested));
    cost.insert(Name::new("actualQueryCost"), number(actual));
    let throttle = throttle.map_or(Value::Null, |t| {
        let mut status = IndexMap::with_capacity(3);
        status.insert(
            Name::new("maximumAvailable"),
            Value::from(t.maximum_available),
        );
        status.insert(
            Name::new("currentlyAvailable"),
            Value::from(t.currently_available),
        );
        let rate = t.restore_rate;
        let rate = if rate.fract() == 0.0 {
            Value::from(rate as u64)
        } else {
            Value::from(rate)
        };
        status.insert(Name::new("restoreRate"), rate);
        Value::Object(status)
    });
    cost.insert(Name::new("throttleStatus"), throttle);
    cost.insert(Name::new("itemsRead"), Value::from(read.items_read));
    cost.insert(Name::new("storeQueries"), Value::from(read.store_queries));
    cost.insert(Name::new("indexCalls"), Value::from(read.index_calls));
    Value::Object(cost)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_that_ran_shows_its_cost_the_budget_left_and_what_it_read() {
        let throttle = Throttle {
            maximum_available: 1000,
            currently_available: 990,
            restore_rate: 50.0,
        };
        let read = PageStats {
            items_read: 11,
            store_queries: 1,
            index_calls: 2,
        };
        let value = extension(Some(10), Some(10), Some(throttle), read);
        assert_eq!(
            value.into_json().expect("JSON"),
            serde_json::json!({
                "requestedQueryCost": 10,
                "actualQueryCost": 10,
                "throttleStatus": {
                    "maximumAvailable": 1000,
                    "currentlyAvailable": 990,
                    "restoreRate": 50
                },
                "itemsRead": 11,
                "storeQueries": 1,
                "indexCalls": 2
            })
        );
    }

    #[test]
    fn what_was_not_priced_run_or_limited_is_null_and_a_fractional_rate_stays_one() {
        let throttle = Throttle {
            maximum_available: 10,
            currently_available: 0,
            restore_rate: 0.5,
        };
        let value = extension(Some(20), None, Some(throttle), PageStats::default());
        let json = value.into_json().expect("JSON");
        assert_eq!(json["actualQueryCost"], serde_json::Value::Null);
        assert_eq!(json["throttleStatus"]["restoreRate"], 0.5);
        let unpriced = extension(None, None, None, PageStats::default())
            .into_json()
            .expect("JSON");
        assert_eq!(unpriced["requestedQueryCost"], serde_json::Value::Null);
        assert_eq!(unpriced["throttleStatus"], serde_json::Value::Null);
    }
}
