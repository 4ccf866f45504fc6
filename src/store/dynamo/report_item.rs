//! A report as items of the comments' table (`super::reports` writes and reads them): its item
//! (`id` `report#<comment>#<reporter>`), its reader's counter (`reportcount#<reporter>`), and
//! the transaction items that file and close reports.

use std::collections::HashMap;

use aws_sdk_dynamodb::types::{AttributeValue, Put, TransactWriteItem, Update};

use super::DynamoStore;
use super::error::internal;
use super::item::{ID, REPORT_KEY, REPORTER, number_value, string_value};
use super::listing::COUNT;
use crate::domain::{Comment, CommentId, Report, ReportReason, ReportStatus, Sku};
use crate::store::StoreError;

/// The start of every report item's and counter's `id` (no comment id starts with lower case).
const PREFIX: &str = "report";

const COMMENT: &str = "reportComment";
const SKU: &str = "reportSku";
const REASON: &str = "reportReason";
const DETAILS: &str = "reportDetails";
const STATUS: &str = "reportStatus";
const CREATED_AT: &str = "reportedAt";
const DECIDED_AT: &str = "reportDecidedAt";

/// Whether an item's `id` is a report's (an item or a counter) rather than a comment's.
pub fn is_report_id(id: &str) -> bool {
    id.starts_with(PREFIX)
}

pub(super) fn item_id(comment: CommentId, reporter: &str) -> String {
    format!("{PREFIX}#{comment}#{reporter}")
}

pub(super) fn counter_id(reporter: &str) -> String {
    format!("{PREFIX}count#{reporter}")
}

pub(super) fn item(report: &Report) -> HashMap<String, AttributeValue> {
    let mut item = HashMap::from([
        (
            ID.to_owned(),
            string_value(item_id(report.comment, &report.reporter)),
        ),
        (REPORTER.to_owned(), string_value(report.reporter.as_str())),
        (REPORT_KEY.to_owned(), string_value(report.id.to_string())),
        (COMMENT.to_owned(), string_value(report.comment.to_string())),
        (SKU.to_owned(), string_value(report.sku.as_str())),
        (REASON.to_owned(), string_value(report.reason.as_str())),
        (STATUS.to_owned(), string_value(report.status.as_str())),
        (CREATED_AT.to_owned(), number_value(report.created_at_ms)),
    ]);
    if let Some(details) = &report.details {
        item.insert(DETAILS.to_owned(), string_value(details.as_str()));
    }
    if let Some(decided) = report.decided_at_ms {
        item.insert(DECIDED_AT.to_owned(), number_value(decided));
    }
    item
}

pub(super) fn decode(item: &HashMap<String, AttributeValue>) -> Result<Report, StoreError> {
    let bad = |what: &str| internal(format!("a report item with a bad `{what}`"));
    let text = |name: &'static str| -> Result<&str, StoreError> {
        item.get(name)
            .and_then(|v| v.as_s().ok())
            .map(String::as_str)
            .ok_or_else(|| bad(name))
    };
    let number = |name: &'static str| -> Result<Option<u64>, StoreError> {
        item.get(name)
            .map(|v| {
                v.as_n()
                    .ok()
                    .and_then(|n| n.parse().ok())
                    .ok_or_else(|| bad(name))
            })
            .transpose()
    };
    let report = Report {
        id: text(REPORT_KEY)?.parse().map_err(|_| bad(REPORT_KEY))?,
        comment: text(COMMENT)?.parse().map_err(|_| bad(COMMENT))?,
        sku: Sku::parse(text(SKU)?).map_err(|_| bad(SKU))?,
        reporter: text(REPORTER)?.to_owned(),
        reason: ReportReason::parse(text(REASON)?).map_err(|_| bad(REASON))?,
        details: item.get(DETAILS).and_then(|v| v.as_s().ok()).cloned(),
        status: ReportStatus::parse(text(STATUS)?).map_err(|_| bad(STATUS))?,
        created_at_ms: number(CREATED_AT)?.ok_or_else(|| bad(CREATED_AT))?,
        decided_at_ms: number(DECIDED_AT)?,
    };
    if report.is_well_formed() {
        Ok(report)
    } else {
        Err(bad(STATUS))
    }
}

/// A report met by a scan; `None` for a counter.
pub(super) fn scanned(
    item: &HashMap<String, AttributeValue>,
) -> Option<Result<Report, StoreError>> {
    item.contains_key(REPORT_KEY).then(|| decode(item))
}

pub(super) fn build(e: aws_sdk_dynamodb::error::BuildError) -> StoreError {
    StoreError::Internal(e.into())
}

/// The transaction item that adds `added` to `reporter`'s counter.
pub(super) fn count_item(
    store: &DynamoStore,
    reporter: &str,
) -> Result<TransactWriteItem, StoreError> {
    let update = Update::builder()
        .table_name(store.table.as_ref())
        .key(ID, string_value(counter_id(reporter)))
        .update_expression("ADD #n :one")
        .expression_attribute_names("#n", COUNT)
        .expression_attribute_values(":one", number_value(1))
        .build()
        .map_err(build)?;
    Ok(TransactWriteItem::builder().update(update).build())
}

/// The transaction item that writes `report` only if its pair has none.
pub(super) fn put_item(
    store: &DynamoStore,
    report: &Report,
) -> Result<TransactWriteItem, StoreError> {
    let put = Put::builder()
        .table_name(store.table.as_ref())
        .set_item(Some(item(report)))
        .condition_expression("attribute_not_exists(#id)")
        .expression_attribute_names("#id", ID)
        .build()
        .map_err(build)?;
    Ok(TransactWriteItem::builder().put(put).build())
}

/// The transaction items that close `old`'s open reports as `outcome` at `now_ms` (each only
/// while it is there and open).
pub(super) fn closings(
    store: &DynamoStore,
    old: &Comment,
    outcome: ReportStatus,
    now_ms: u64,
) -> Result<Vec<TransactWriteItem>, StoreError> {
    old.reporters
        .iter()
        .map(|reporter| {
            let update = Update::builder()
                .table_name(store.table.as_ref())
                .key(ID, string_value(item_id(old.id, reporter)))
                .condition_expression("attribute_exists(#id) AND #status = :open")
                .update_expression("SET #status = :outcome, #decided = :now")
                .expression_attribute_names("#id", ID)
                .expression_attribute_names("#status", STATUS)
                .expression_attribute_names("#decided", DECIDED_AT)
                .expression_attribute_values(":open", string_value(ReportStatus::Open.as_str()))
                .expression_attribute_values(":outcome", string_value(outcome.as_str()))
                .expression_attribute_values(":now", number_value(now_ms))
                .build()
                .map_err(build)?;
            Ok(TransactWriteItem::builder().update(update).build())
        })
        .collect()
}
