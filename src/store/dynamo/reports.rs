//! Reports in the comments' table (`docs/operations/table-layout.md`): one item per comment
//! and reporter (`id` `report#<comment>#<reporter>`, so a second report of the pair is a failed
//! condition, not a second item), in GSI `byReporter` (partition key `reporter`, sort key
//! `reportKey`, the report's id) for a reader's reports newest first, and a counter item per
//! reporter (`reportcount#<reporter>`, attribute `n`) for their exact `totalCount`.
//!
//! A report is one `TransactWriteItems` with the comment's update (its open reporters, its next
//! version, the `REPORTED` queues' keys; `moderate::write`), the report's item (only if absent)
//! and the counter; a decision closes the open reports in its own transaction, one `Update` per
//! open report (at most `MAX_OPEN_REPORTS`, so a decision stays far below DynamoDB's 100 items).
//! Deleting a comment leaves its reports (a reader keeps what they filed).

use std::collections::HashMap;
use std::num::NonZeroU32;

use aws_sdk_dynamodb::types::{Put, TransactWriteItem};

use super::batch::{self, RETRY};
use super::error::{OnConditionFailed, internal};
use super::item::{ID, REPORT_KEY, REPORTER, string_value};
use super::report_item::{COUNT, build, count_item, counter_id, decode, item, item_id, put_item};
use super::schema::BY_REPORTER;
use super::{DynamoStore, moderate, reads};
use crate::domain::{CommentId, LogEntry, Order, Report, ReportDraft};
use crate::store::{ReportPage, ReportQuery, StoreError};
use crate::telemetry::metric;

/// Attempts while other writes keep changing the comment.
const ATTEMPTS: u32 = 8;

/// The report `reporter` filed on `comment`, read consistently.
async fn get(
    store: &DynamoStore,
    comment: CommentId,
    reporter: &str,
) -> Result<Option<Report>, StoreError> {
    let output = store
        .client
        .get_item()
        .table_name(store.table.as_ref())
        .key(ID, string_value(item_id(comment, reporter)))
        .consistent_read(true)
        .send()
        .await
        .map_err(|err| store.classify(err, OnConditionFailed::Unexpected))?;
    output.item().map(decode).transpose()
}

/// See `CommentStore::report`.
pub(super) async fn report(
    store: &DynamoStore,
    id: CommentId,
    reporter: &str,
    draft: &ReportDraft,
    hide_threshold: Option<NonZeroU32>,
    now_ms: u64,
) -> Result<Report, StoreError> {
    for attempt in 0..ATTEMPTS {
        if attempt > 0 {
            tokio::time::sleep(RETRY.pause(attempt)).await;
        }
        if let Some(existing) = get(store, id, reporter).await? {
            return Ok(existing);
        }
        let old = reads::get(store, id)
            .await?
            .ok_or(StoreError::NotFound(id))?;
        let new = old.after_report(reporter, hide_threshold, now_ms)?;
        let report = draft.clone().into_report(&old, reporter, now_ms);
        let entries = LogEntry::of_report(&old, &new, now_ms);
        let extra = vec![put_item(store, &report)?, count_item(store, reporter)?];
        let token = report.id.to_string();
        if moderate::write(store, &old, &new, &entries, extra, token).await? {
            return Ok(report);
        }
        tracing::debug!(table = %store.table, comment_id = %id, attempt, "a report met another write, trying again");
    }
    Err(StoreError::Unavailable(
        format!("comment {id} kept changing during {ATTEMPTS} report attempts").into(),
    ))
}

/// One `Query` of GSI `byReporter` (see [`ReportQuery`]).
pub(super) async fn query(
    store: &DynamoStore,
    query: &ReportQuery,
) -> Result<ReportPage, StoreError> {
    if query.limit == 0 {
        return Ok(ReportPage::default());
    }
    let mut request = store
        .client
        .query()
        .table_name(store.table.as_ref())
        .index_name(BY_REPORTER)
        .expression_attribute_names("#reporter", REPORTER)
        .expression_attribute_values(":reporter", string_value(query.reporter.as_str()))
        .scan_index_forward(query.order == Order::OldestFirst)
        .limit(i32::try_from(query.limit).unwrap_or(i32::MAX));
    let mut condition = "#reporter = :reporter".to_owned();
    if let Some(after) = query.after {
        let op = match query.order {
            Order::NewestFirst => "<",
            Order::OldestFirst => ">",
        };
        condition.push_str(&format!(" AND #key {op} :after"));
        request = request
            .expression_attribute_names("#key", REPORT_KEY)
            .expression_attribute_values(":after", string_value(after.to_string()));
    }
    let output = request
        .key_condition_expression(condition)
        .send()
        .await
        .map_err(|err| store.classify(err, OnConditionFailed::Unexpected))?;
    let reports = output
        .items()
        .iter()
        .map(decode)
        .collect::<Result<Vec<_>, _>>()?;
    metric::STORE_ITEMS_READ
        .counter(&[("operation", "reports")])
        .increment(reports.len() as u64);
    let last_evaluated = match output.last_evaluated_key() {
        None => None,
        Some(key) => Some(
            key.get(REPORT_KEY)
                .and_then(|v| v.as_s().ok())
                .and_then(|s| s.parse().ok())
                .ok_or_else(|| {
                    internal("a reports query's LastEvaluatedKey without `reportKey`")
                })?,
        ),
    };
    Ok(ReportPage {
        reports,
        last_evaluated,
    })
}

/// How many reports `reporter` filed (their counter, read consistently; 0 before the first).
pub(super) async fn count(store: &DynamoStore, reporter: &str) -> Result<u64, StoreError> {
    let output = store
        .client
        .get_item()
        .table_name(store.table.as_ref())
        .key(ID, string_value(counter_id(reporter)))
        .consistent_read(true)
        .send()
        .await
        .map_err(|err| store.classify(err, OnConditionFailed::Unexpected))?;
    Ok(output
        .item()
        .and_then(|item| item.get(COUNT))
        .and_then(|v| v.as_n().ok())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0))
}

/// Reports by comment and reporter (`BatchGetItem`, strongly consistent).
pub(super) async fn get_many(
    store: &DynamoStore,
    keys: &[(CommentId, String)],
) -> Result<Vec<Option<Report>>, StoreError> {
    let ids = keys.iter().map(|(c, r)| item_id(*c, r)).collect();
    let found = batch::get_by_ids(&store.client, &store.table, ids, false).await?;
    let mut by_pair = HashMap::new();
    for item in &found {
        let report = decode(item)?;
        by_pair.insert((report.comment, report.reporter.clone()), report);
    }
    Ok(keys.iter().map(|key| by_pair.get(key).cloned()).collect())
}

/// Writes reports as they are (`import`): a new pair's item with its reporter's count in one
/// transaction; a pair already held has its item replaced (counted once).
pub(super) async fn put(store: &DynamoStore, reports: &[Report]) -> Result<(), StoreError> {
    for report in reports {
        let sent = store
            .client
            .transact_write_items()
            .transact_items(put_item(store, report)?)
            .transact_items(count_item(store, &report.reporter)?)
            .send()
            .await;
        let Err(err) = sent else { continue };
        let held = matches!(
            super::error::cancellation(&err),
            Some(super::error::Cancellation::ConditionFailed(_))
        );
        if !held {
            return Err(store.classify(err, OnConditionFailed::Unexpected));
        }
        // Replaced in a transaction of its own (not `PutItem`): `import` needs no action
        // beyond those it has (docs/operations/iam.md).
        let put = Put::builder()
            .table_name(store.table.as_ref())
            .set_item(Some(item(report)))
            .build()
            .map_err(build)?;
        store
            .client
            .transact_write_items()
            .transact_items(TransactWriteItem::builder().put(put).build())
            .send()
            .await
            .map_err(|err| store.classify(err, OnConditionFailed::Unexpected))?;
    }
    Ok(())
}
