//! The moderation log in the comments' table (`docs/operations/table-layout.md`): each entry is
//! two items, one in the shop's log and one in its product's (GSI `byLog`, partition key
//! `logList`: `!` for the shop, the SKU for a product; sort key `logKey`, the entry's id), and
//! each log has a counter item (`logcount#<list>`, attribute `n`) for its exact `totalCount`.
//! All four are written in the `TransactWriteItems` of the decision or reply they record
//! (`moderate`), so a decision is never without its entry. Entries are never changed; deleting
//! a comment leaves them.

use std::collections::HashMap;

use aws_sdk_dynamodb::types::{AttributeValue, Put, TransactWriteItem, Update};

use super::DynamoStore;
use super::batch;
use super::error::{Cancellation, OnConditionFailed, cancellation, internal};
use super::item::{ID, LOG_KEY, LOG_LIST, number_value, string_value};
use super::listing::{self, COUNT, List};
use super::schema::BY_LOG;
use crate::domain::{
    CommentId, CommentStatus, EntryId, LogAction, LogEntry, ModerationReason, Sku,
};
use crate::store::{LogPage, LogQuery, StoreError};

/// The `logList` of the shop's log (no SKU is `!`).
const SHOP: &str = "!";
/// The start of every log item's and counter's `id` (no comment id starts with lower case).
const LOG_PREFIX: &str = "log";

const COMMENT: &str = "entryComment";
const SKU: &str = "entrySku";
const ACTOR: &str = "actor";
const ACTION: &str = "action";
const PREVIOUS: &str = "previousStatus";
const STATUS: &str = "newStatus";
const REASON: &str = "entryReason";
const NOTE: &str = "entryNote";
const AT: &str = "at";

/// Whether an item's `id` is the log's (an entry or a counter) rather than a comment's.
pub fn is_log_id(id: &str) -> bool {
    id.starts_with(LOG_PREFIX)
}

fn list_of(sku: Option<&Sku>) -> &str {
    sku.map_or(SHOP, Sku::as_str)
}

/// The `id` of an entry's item in the shop's log (`log#<entry>`) or its product's
/// (`log#<entry>#p`).
fn item_id(entry: EntryId, shop: bool) -> String {
    if shop {
        format!("{LOG_PREFIX}#{entry}")
    } else {
        format!("{LOG_PREFIX}#{entry}#p")
    }
}

fn counter_id(sku: Option<&Sku>) -> String {
    format!("{LOG_PREFIX}count#{}", list_of(sku))
}

/// The entry's item in the shop's log (`shop`) or its product's.
fn item(entry: &LogEntry, shop: bool) -> HashMap<String, AttributeValue> {
    let list = if shop { SHOP } else { entry.sku.as_str() };
    let mut item = HashMap::from([
        (ID.to_owned(), string_value(item_id(entry.id, shop))),
        (LOG_LIST.to_owned(), string_value(list)),
        (LOG_KEY.to_owned(), string_value(entry.id.to_string())),
        (COMMENT.to_owned(), string_value(entry.comment.to_string())),
        (SKU.to_owned(), string_value(entry.sku.as_str())),
        (ACTOR.to_owned(), string_value(entry.actor.as_str())),
        (ACTION.to_owned(), string_value(entry.action.as_str())),
        (PREVIOUS.to_owned(), string_value(entry.previous.as_str())),
        (STATUS.to_owned(), string_value(entry.status.as_str())),
        (AT.to_owned(), number_value(entry.at_ms)),
    ]);
    if let Some(reason) = entry.reason {
        item.insert(REASON.to_owned(), string_value(reason.as_str()));
    }
    if let Some(note) = &entry.note {
        item.insert(NOTE.to_owned(), string_value(note.as_str()));
    }
    item
}

/// An entry from one of its items.
fn decode(item: &HashMap<String, AttributeValue>) -> Result<LogEntry, StoreError> {
    let text = |name: &str| -> Result<&str, StoreError> {
        item.get(name)
            .and_then(|v| v.as_s().ok())
            .map(String::as_str)
            .ok_or_else(|| internal(format!("a log item without a string `{name}`")))
    };
    let optional = |name: &str| item.get(name).and_then(|v| v.as_s().ok());
    let bad = |what: &str| internal(format!("a log item with a bad `{what}`"));
    Ok(LogEntry {
        id: text(LOG_KEY)?.parse().map_err(|_| bad(LOG_KEY))?,
        comment: text(COMMENT)?
            .parse::<CommentId>()
            .map_err(|_| bad(COMMENT))?,
        sku: Sku::parse(text(SKU)?).map_err(|_| bad(SKU))?,
        actor: text(ACTOR)?.to_owned(),
        action: LogAction::parse(text(ACTION)?).map_err(|_| bad(ACTION))?,
        previous: CommentStatus::parse(text(PREVIOUS)?).map_err(|_| bad(PREVIOUS))?,
        status: CommentStatus::parse(text(STATUS)?).map_err(|_| bad(STATUS))?,
        reason: optional(REASON)
            .map(|r| ModerationReason::parse(r))
            .transpose()
            .map_err(|_| bad(REASON))?,
        note: optional(NOTE).cloned(),
        at_ms: item
            .get(AT)
            .and_then(|v| v.as_n().ok())
            .and_then(|n| n.parse().ok())
            .ok_or_else(|| bad(AT))?,
    })
}

/// An entry of the shop's log met by a scan (its product's copy and the counters are left);
/// `None` for any other log item.
pub(super) fn scanned(
    item: &HashMap<String, AttributeValue>,
) -> Option<Result<LogEntry, StoreError>> {
    let shop = item.get(LOG_LIST).and_then(|v| v.as_s().ok())? == SHOP;
    (shop && item.contains_key(LOG_KEY)).then(|| decode(item))
}

/// The transaction items that write `entries` (of one comment, so of one product): two items
/// each (each only if absent: an entry is written once) and, once per log, its counter moved
/// by their number (a transaction may touch an item only once).
pub(super) fn writes(
    store: &DynamoStore,
    entries: &[LogEntry],
) -> Result<Vec<TransactWriteItem>, StoreError> {
    let build = |e: aws_sdk_dynamodb::error::BuildError| StoreError::Internal(e.into());
    let Some(first) = entries.first() else {
        return Ok(Vec::new());
    };
    let mut out = Vec::with_capacity(2 * entries.len() + 2);
    for entry in entries {
        for shop in [true, false] {
            let put = Put::builder()
                .table_name(store.table.as_ref())
                .set_item(Some(item(entry, shop)))
                .condition_expression("attribute_not_exists(#id)")
                .expression_attribute_names("#id", ID)
                .build()
                .map_err(build)?;
            out.push(TransactWriteItem::builder().put(put).build());
        }
    }
    for sku in [None, Some(&first.sku)] {
        let update = Update::builder()
            .table_name(store.table.as_ref())
            .key(ID, string_value(counter_id(sku)))
            .update_expression("ADD #n :added")
            .expression_attribute_names("#n", COUNT)
            .expression_attribute_values(":added", number_value(entries.len()))
            .build()
            .map_err(build)?;
        out.push(TransactWriteItem::builder().update(update).build());
    }
    Ok(out)
}

/// One `Query` of GSI `byLog` (see [`LogQuery`]).
pub(super) async fn query(store: &DynamoStore, query: &LogQuery) -> Result<LogPage, StoreError> {
    if query.limit == 0 {
        return Ok(LogPage::default());
    }
    let list = List {
        index: BY_LOG,
        partition: (LOG_LIST, list_of(query.sku.as_ref()).to_owned()),
        key: LOG_KEY,
        operation: "moderation_log",
    };
    let (items, last_evaluated) =
        listing::query(store, &list, query.order, query.after, query.limit).await?;
    Ok(LogPage {
        entries: items.iter().map(decode).collect::<Result<_, _>>()?,
        last_evaluated,
    })
}

/// The count a log's counter holds (0 before its first entry), read consistently.
pub(super) async fn count(store: &DynamoStore, sku: Option<&Sku>) -> Result<u64, StoreError> {
    listing::count(store, counter_id(sku)).await
}

/// Entries by id (their shop items, `BatchGetItem`, strongly consistent).
pub(super) async fn get_many(
    store: &DynamoStore,
    ids: &[EntryId],
) -> Result<Vec<Option<LogEntry>>, StoreError> {
    let keys = ids.iter().map(|id| item_id(*id, true)).collect();
    let found = batch::get_by_ids(&store.client, &store.table, keys, false).await?;
    let mut by_id = HashMap::new();
    for item in &found {
        let entry = decode(item)?;
        by_id.insert(entry.id, entry);
    }
    Ok(ids.iter().map(|id| by_id.get(id).cloned()).collect())
}

/// Writes entries as they are (`import`): each entry's items and counters in one transaction,
/// skipped whole when its entry is held already.
pub(super) async fn put(store: &DynamoStore, entries: &[LogEntry]) -> Result<(), StoreError> {
    for entry in entries {
        let sent = store
            .client
            .transact_write_items()
            .set_transact_items(Some(writes(store, std::slice::from_ref(entry))?))
            // Not the entry's id alone: that is the token of the decision that wrote it, and
            // DynamoDB refuses a token again with other items for ten minutes.
            .client_request_token(format!("import-{}", entry.id))
            .send()
            .await;
        if let Err(err) = sent {
            // An entry already there (a condition failed): imported before, kept as it is.
            let held = matches!(cancellation(&err), Some(Cancellation::ConditionFailed(_)));
            if !held {
                return Err(store.classify(err, OnConditionFailed::Unexpected));
            }
        }
    }
    Ok(())
}
