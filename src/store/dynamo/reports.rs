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
use super::error::OnConditionFailed;
use super::item::{ID, REPORT_KEY, REPORTER, string_value};
use super::listing::{self, List};
use super::report_item::{build, count_item, counter_id, decode, item, item_id, put_item};
use super::schema::BY_REPORTER;
use super::{DynamoStore, moderate, reads};
use crate::domain::{CommentId, LogEntry, Report, ReportDraft};
use crate::store::{ReportPage, ReportQuery, StoreError};

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
    let list = List {
        index: BY_REPORTER,
        partition: (REPORTER, query.reporter.clone()),
        key: REPORT_KEY,
        operation: "reports",
    };
    let (items, last_evaluated) =
        listing::query(store, &list, query.order, query.after, query.limit).await?;
    Ok(ReportPage {
        reports: items.iter().map(decode).collect::<Result<_, _>>()?,
        last_evaluated,
    })
}

/// How many reports `reporter` filed (their counter, read consistently; 0 before the first).
pub(super) async fn count(store: &DynamoStore, reporter: &str) -> Result<u64, StoreError> {
    listing::count(store, counter_id(reporter)).await
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
