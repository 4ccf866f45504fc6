//! DynamoDB Streams records as AWS Lambda delivers them (`aws_lambda_events`): the same records
//! as the Streams API's, in Lambda's JSON, turned into change events by the same
//! [`change_from_images`] and [`comment_from_item`](super::item::comment_from_item) the store
//! and `sync` use. Nothing here knows batches, retries or Redis (`crate::sync::lambda` does).

use std::collections::HashMap;

use aws_lambda_events::event::dynamodb::EventRecord;

use super::attribute::ItemAttribute;
use super::change::{RecordDecodeError, RecordKind, change_from_images};
use crate::domain::ChangeEvent;

impl ItemAttribute for serde_dynamo::AttributeValue {
    fn as_string(&self) -> Option<&str> {
        match self {
            serde_dynamo::AttributeValue::S(s) => Some(s),
            _ => None,
        }
    }

    fn as_number(&self) -> Option<&str> {
        match self {
            serde_dynamo::AttributeValue::N(n) => Some(n),
            _ => None,
        }
    }
}

/// The record's sequence number: what Lambda's partial batch response names a record by.
pub fn lambda_sequence_number(record: &EventRecord) -> Option<&str> {
    record.change.sequence_number.as_deref()
}

/// An image, or `None` where Lambda's JSON has an empty map (the Streams API has no image).
fn image(item: &serde_dynamo::Item) -> Option<&HashMap<String, serde_dynamo::AttributeValue>> {
    let map: &HashMap<String, serde_dynamo::AttributeValue> = item.as_ref();
    (!map.is_empty()).then_some(map)
}

/// The change a Lambda-delivered record stands for; `Ok(None)` for a vote item's record and
/// for an event name this version does not know, which the caller skips.
pub fn change_from_lambda_record(
    record: &EventRecord,
) -> Result<Option<ChangeEvent>, RecordDecodeError> {
    let kind = match record.event_name.as_str() {
        "INSERT" => RecordKind::Insert,
        "MODIFY" => RecordKind::Modify,
        "REMOVE" => RecordKind::Remove,
        _ => return Ok(None),
    };
    let (old, new) = (
        image(&record.change.old_image),
        image(&record.change.new_image),
    );
    change_from_images(kind, old, new)
}
