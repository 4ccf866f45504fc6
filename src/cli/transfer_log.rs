//! The moderation log's lines in an export ([`super::transfer`]): after every comment line, one
//! line per entry, in entry-id order, told from a comment's line by its `entry` field (a
//! comment's line has `id`). Every field of the entry is carried, and checked when read back:
//! a log is a record, so an import writes each entry as it was, once.

use serde::{Deserialize, Serialize};

use crate::domain::{
    CommentId, CommentStatus, EntryId, LogAction, LogEntry, MAX_AUTHOR_SUB_BYTES, MAX_NOTE_CHARS,
    ModerationReason, Sku, SortKey,
};

/// One entry's line.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct LogLine {
    entry: String,
    comment: String,
    sku: String,
    actor: String,
    action: String,
    previous_status: String,
    status: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    note: Option<String>,
    at_ms: u64,
}

/// The entry's line as JSON, without its newline.
pub(super) fn encode(entry: &LogEntry) -> String {
    let line = LogLine {
        entry: entry.id.to_string(),
        comment: entry.comment.to_string(),
        sku: entry.sku.to_string(),
        actor: entry.actor.clone(),
        action: entry.action.as_str().to_owned(),
        previous_status: entry.previous.as_str().to_owned(),
        status: entry.status.as_str().to_owned(),
        reason: entry.reason.map(|r| r.as_str().to_owned()),
        note: entry.note.clone(),
        at_ms: entry.at_ms,
    };
    serde_json::to_string(&line).unwrap_or_else(|_| unreachable!("plain data"))
}

/// Whether `text` is an entry's line rather than a comment's (its first key is `entry`).
pub(super) fn is_log_line(text: &str) -> bool {
    text.starts_with("{\"entry\":")
}

/// A line read back into an entry, every field checked.
pub(super) fn decode(text: &str) -> Result<LogEntry, String> {
    let line: LogLine = serde_json::from_str(text).map_err(|e| e.to_string())?;
    let status = |name: &str, value: &str| {
        CommentStatus::parse(value).map_err(|_| format!("{name} is not a comment status"))
    };
    if line.actor.is_empty() || line.actor.len() > MAX_AUTHOR_SUB_BYTES {
        return Err(format!("actor must be 1 to {MAX_AUTHOR_SUB_BYTES} bytes"));
    }
    if line
        .note
        .as_ref()
        .is_some_and(|n| n.chars().count() > MAX_NOTE_CHARS)
    {
        return Err(format!("note is over {MAX_NOTE_CHARS} characters"));
    }
    if line.at_ms > SortKey::MAX_MILLIS {
        return Err("atMs is out of range".to_owned());
    }
    Ok(LogEntry {
        id: line
            .entry
            .parse::<EntryId>()
            .map_err(|e| format!("entry: {e}"))?,
        comment: line
            .comment
            .parse::<CommentId>()
            .map_err(|e| format!("comment: {e}"))?,
        sku: Sku::parse(&line.sku).map_err(|e| e.to_string())?,
        actor: line.actor,
        action: LogAction::parse(&line.action).map_err(|e| e.to_string())?,
        previous: status("previousStatus", &line.previous_status)?,
        status: status("status", &line.status)?,
        reason: line
            .reason
            .map(|r| ModerationReason::parse(&r))
            .transpose()
            .map_err(|_| "reason is not a moderation reason".to_owned())?,
        note: line.note,
        at_ms: line.at_ms,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_round_trips_and_a_bad_one_is_refused() {
        let entry = LogEntry {
            id: EntryId::from_bytes([1; 16]),
            comment: CommentId::from_parts(1_767_225_600_000, 7),
            sku: Sku::parse("TEE").expect("sku"),
            actor: "auth0|carol".to_owned(),
            action: LogAction::Hide,
            previous: CommentStatus::Published,
            status: CommentStatus::Hidden,
            reason: Some(ModerationReason::Spam),
            note: Some("rule 3".to_owned()),
            at_ms: 1_767_225_600_500,
        };
        let line = encode(&entry);
        assert!(is_log_line(&line), "{line}");
        assert_eq!(decode(&line), Ok(entry));
        for bad in [
            line.replace("HIDE", "ERASE"),
            line.replace("\"TEE\"", "\"a{b}\""),
            line.replace("auth0|carol", ""),
            line.replace("}", ",\"extra\":1}"),
        ] {
            assert!(decode(&bad).is_err(), "{bad}");
        }
    }
}
