//! Stream records as change events: how a DynamoDB Streams record (its event name and its old
//! and new images) says what the index must learn.
//!
//! The images are decoded by the same [`comment_from_item`] the store reads items with, so the
//! table and its stream are read in one format. This file knows nothing of shards, iterators
//! or checkpoints (`crate::sync::stream` owns those) and nothing of Redis.

use std::collections::HashMap;

use aws_sdk_dynamodbstreams::types::{OperationType, Record};

use super::attribute::ItemAttribute;
use super::audit::is_log_id;
use super::item::{ID, ItemDecodeError, comment_from_item};
use super::vote_key::is_vote_id;
use crate::domain::{ChangeEvent, IndexEntry};

/// Why a record could not become a change event.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RecordDecodeError {
    /// The record has no `dynamodb` section, so no key or image.
    #[error("stream record has no `dynamodb` section")]
    NoStreamRecord,
    /// The record lacks the image its kind needs: holds the kind (`INSERT`, `MODIFY`,
    /// `REMOVE`) and the image (`new`, `old`).
    #[error(
        "stream record of kind {0} lacks its {1} image (the stream must be NEW_AND_OLD_IMAGES)"
    )]
    MissingImage(&'static str, &'static str),
    /// An image is not a well-formed comment item.
    #[error("stream record image is not a comment")]
    Image(#[from] ItemDecodeError),
}

/// The change a record stands for; `Ok(None)` for a vote item's record (the comment's own
/// `MODIFY` in the same transaction carries the new count) and for an event kind this version
/// does not know (a future SDK variant), which the caller skips.
///
/// INSERT and MODIFY are upserts carrying the new image's version (with the old image when
/// there is one); REMOVE is the deletion of what the old image was, one version after it.
pub fn change_from_record(record: &Record) -> Result<Option<ChangeEvent>, RecordDecodeError> {
    let stream_record = record.dynamodb().ok_or(RecordDecodeError::NoStreamRecord)?;
    let kind = match record.event_name() {
        Some(OperationType::Insert) => RecordKind::Insert,
        Some(OperationType::Modify) => RecordKind::Modify,
        Some(OperationType::Remove) => RecordKind::Remove,
        _ => return Ok(None),
    };
    change_from_images(kind, stream_record.old_image(), stream_record.new_image())
}

/// What a stream record says happened to its item.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum RecordKind {
    Insert,
    Modify,
    Remove,
}

/// The change a record of `kind` with these images stands for, whichever client delivered it
/// (the Streams API here, AWS Lambda in `lambda.rs`); `None` for a vote item's record or the
/// moderation log's.
pub(super) fn change_from_images<A: ItemAttribute>(
    kind: RecordKind,
    old: Option<&HashMap<String, A>>,
    new: Option<&HashMap<String, A>>,
) -> Result<Option<ChangeEvent>, RecordDecodeError> {
    let vote = |image: Option<&HashMap<String, A>>| {
        image
            .and_then(|item| item.get(ID))
            .and_then(ItemAttribute::as_string)
            .is_some_and(|id| {
                is_vote_id(id)
                    || is_log_id(id)
                    || super::report_item::is_report_id(id)
                    || super::purchase::is_purchase_id(id)
            })
    };
    if vote(old) || vote(new) {
        return Ok(None);
    }
    let entry = |image: Option<&HashMap<String, A>>| {
        image
            .map(|item| comment_from_item(item).map(|c| IndexEntry::from(&c)))
            .transpose()
    };
    let old = entry(old)?;
    let new = entry(new)?;
    match kind {
        RecordKind::Insert | RecordKind::Modify => {
            let kind = if old.is_some() { "MODIFY" } else { "INSERT" };
            let new = new.ok_or(RecordDecodeError::MissingImage(kind, "new"))?;
            Ok(Some(ChangeEvent::Upsert { old, new }))
        }
        RecordKind::Remove => {
            let old = old.ok_or(RecordDecodeError::MissingImage("REMOVE", "old"))?;
            Ok(Some(ChangeEvent::removal(old)))
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use aws_sdk_dynamodb::types::AttributeValue;
    use aws_sdk_dynamodbstreams::types::{AttributeValue as StreamValue, StreamRecord};

    use super::*;
    use crate::domain::{Comment, CommentId, Rating, Sku};
    use crate::store::dynamo::item::item_from_comment;

    fn comment(rating: i64) -> Comment {
        Comment {
            purchase: None,
            id: CommentId::from_parts(1_700_000_000_000, 7),
            sku: Sku::parse("SKU-1").expect("valid sku"),
            author: "ann".to_owned(),
            author_sub: None,
            body: "fine".to_owned(),
            rating: Rating::new(rating).expect("valid rating"),
            created_at_ms: 1_700_000_000_000,
            updated_at_ms: None,
            version: 1,
            helpful_count: 0,
            moderation: Default::default(),
            reply: None,
            reporters: Vec::new(),
        }
    }

    fn image(comment: &Comment) -> HashMap<String, StreamValue> {
        item_from_comment(comment)
            .into_iter()
            .map(|(name, value)| {
                let value = match value {
                    AttributeValue::N(n) => StreamValue::N(n),
                    AttributeValue::S(s) => StreamValue::S(s),
                    other => panic!("unexpected attribute {other:?}"),
                };
                (name, value)
            })
            .collect()
    }

    fn record(kind: OperationType, old: Option<&Comment>, new: Option<&Comment>) -> Record {
        let stream_record = StreamRecord::builder()
            .sequence_number("100")
            .set_old_image(old.map(image))
            .set_new_image(new.map(image))
            .build();
        Record::builder()
            .event_name(kind)
            .dynamodb(stream_record)
            .build()
    }

    #[test]
    fn insert_modify_and_remove_become_upserts_and_removes() {
        let three = comment(3);
        let five = Comment {
            version: 2,
            ..comment(5)
        };
        assert_eq!(
            change_from_record(&record(OperationType::Insert, None, Some(&three))),
            Ok(Some(ChangeEvent::Upsert {
                old: None,
                new: IndexEntry::from(&three)
            }))
        );
        assert_eq!(
            change_from_record(&record(OperationType::Modify, Some(&three), Some(&five))),
            Ok(Some(ChangeEvent::Upsert {
                old: Some(IndexEntry::from(&three)),
                new: IndexEntry::from(&five)
            }))
        );
        assert_eq!(
            change_from_record(&record(OperationType::Remove, Some(&five), None)),
            Ok(Some(ChangeEvent::Remove {
                old: IndexEntry::from(&five),
                version: 3
            }))
        );
    }

    #[test]
    fn a_vote_item_s_records_are_skipped_and_the_comment_s_modify_carries_the_count() {
        let vote = HashMap::from([
            (
                "id".to_owned(),
                StreamValue::S(format!("vote#{}#AAAAAAAAAAAAAAAAAAAAAA", comment(3).id)),
            ),
            ("votedAt".to_owned(), StreamValue::N("1".to_owned())),
        ]);
        let record = |kind, old: Option<_>, new: Option<_>| {
            let stream_record = StreamRecord::builder()
                .set_old_image(old)
                .set_new_image(new)
                .build();
            Record::builder()
                .event_name(kind)
                .dynamodb(stream_record)
                .build()
        };
        for (kind, old, new) in [
            (OperationType::Insert, None, Some(vote.clone())),
            (OperationType::Remove, Some(vote.clone()), None),
        ] {
            assert_eq!(change_from_record(&record(kind, old, new)), Ok(None));
        }
        let voted = comment(3).after_vote(true).expect("far from the ceiling");
        assert_eq!(
            change_from_record(&record(
                OperationType::Modify,
                Some(image(&comment(3))),
                Some(image(&voted))
            )),
            Ok(Some(ChangeEvent::Upsert {
                old: Some(IndexEntry::from(&comment(3))),
                new: IndexEntry::from(&voted)
            }))
        );
    }

    #[test]
    fn a_record_without_the_image_it_needs_is_refused() {
        assert_eq!(
            change_from_record(&record(OperationType::Remove, None, None)),
            Err(RecordDecodeError::MissingImage("REMOVE", "old"))
        );
        assert!(matches!(
            change_from_record(&Record::builder().build()),
            Err(RecordDecodeError::NoStreamRecord)
        ));
    }
}
