//! Resuming from the change log: the changes to one product appended since a time, if the log
//! still holds every one of them, so that a subscription resumed on any server (another one
//! behind the load balancer, one started since) is given the edits and deletions it missed.
//!
//! **Whether the log holds them.** `XINFO STREAM` tells how many entries were ever added and
//! how many are left: equal, nothing was trimmed and the log holds every change since it was
//! created; else trimming (`XADD MAXLEN ~`, `--change-log-max-len`) dropped the oldest, and the
//! log holds every change since a time only if its first entry is older than that. Redis 7.0
//! leaves `max-deleted-entry-id` at `0-0` when trimming (it tracks `XDEL` only), hence the
//! counts. The check is made before reading (a log trimmed past that time is not read at all)
//! and again after (a trim during the read may have taken entries before they were read); the
//! first entry only ever moves forward, so a log that still holds the time afterwards held it
//! throughout.
//!
//! **What it costs.** The read is bounded by the log itself: at most its length (about
//! `--change-log-max-len` entries, all products), in pages of [`RANGE_COUNT`], up to the last
//! entry as of the check (later ones reach the subscription live). Only the product's changes
//! are kept, each once (a publisher's repeat after a crash is dropped, as the hub drops it).
//!
//! Entry ids are Redis's clock (`<ms>-<seq>` of `XADD`), compared with the cursor comment's
//! time: servers and Redis are assumed to keep their clocks in step, as the hub's own times are.
//! An empty or missing log holds nothing: a Redis that lost its data lost the log with it.

use std::collections::HashSet;

use redis::Value;

use super::{RedisLog, bad_reply, change_of, entries};
use crate::domain::{ChangeEvent, Sku};
use crate::redis::CallError;

/// Entries one `XRANGE` returns while resuming.
const RANGE_COUNT: usize = super::READ_COUNT;

/// One change the log holds, with the time it was appended.
#[derive(Clone, Debug, PartialEq)]
pub struct Logged {
    /// The change, as the index applied it.
    pub change: ChangeEvent,
    /// When it was appended: the millisecond part of its entry id (Redis's clock).
    pub appended_ms: u64,
}

/// What `XINFO STREAM` says of the log.
#[derive(Debug)]
struct Held {
    /// Entries ever added, and left.
    added: u64,
    length: u64,
    /// The first entry's time; `None` when empty.
    first_ms: Option<u64>,
    /// The last entry's id.
    last_id: String,
}

impl Held {
    /// Whether the log holds every change appended at or after `since_ms`.
    fn holds_since(&self, since_ms: u64) -> bool {
        self.length > 0
            && (self.added == self.length || self.first_ms.is_some_and(|first| first < since_ms))
    }
}

impl RedisLog {
    /// The changes to `sku` appended at or after `since_ms`, oldest first, each once; `None`
    /// when the log no longer holds all of them (trimmed past that time, empty or missing).
    pub async fn since(&self, sku: &Sku, since_ms: u64) -> Result<Option<Vec<Logged>>, CallError> {
        let Some(held) = self.held().await?.filter(|h| h.holds_since(since_ms)) else {
            return Ok(None);
        };
        let mut found = Vec::new();
        let mut seen = HashSet::new();
        let mut start = format!("{since_ms}-0");
        loop {
            let mut xrange = redis::cmd("XRANGE");
            xrange
                .arg(&self.key)
                .arg(&start)
                .arg(&held.last_id)
                .arg("COUNT")
                .arg(RANGE_COUNT);
            let reply: Value = self.redis.query(&xrange).await?;
            let page = entries(&reply).ok_or_else(|| bad_reply(&reply))?;
            for (id, fields) in &page {
                let change = change_of(fields).ok_or_else(|| {
                    CallError::Internal(format!("change log entry {id} is not a change").into())
                })?;
                if &change.entry().sku != sku || !seen.insert(identity(&change)) {
                    continue;
                }
                found.push(Logged {
                    change,
                    appended_ms: millis_of(id).ok_or_else(|| bad_reply(&reply))?,
                });
            }
            match page.last() {
                Some((id, _)) if page.len() == RANGE_COUNT => start = format!("({id}"),
                _ => break,
            }
        }
        let still = self.held().await?;
        Ok(still
            .is_some_and(|h| h.holds_since(since_ms))
            .then_some(found))
    }

    /// What the log holds; `None` when it is empty or missing.
    async fn held(&self) -> Result<Option<Held>, CallError> {
        // `XINFO STREAM` fails on a missing key; `XLEN` answers 0.
        let length: u64 = self.redis.query(redis::cmd("XLEN").arg(&self.key)).await?;
        if length == 0 {
            return Ok(None);
        }
        let reply: Value = self
            .redis
            .query(redis::cmd("XINFO").arg("STREAM").arg(&self.key))
            .await?;
        held_of(&reply).map(Some).ok_or_else(|| bad_reply(&reply))
    }
}

/// `(comment, version, deletion)`: what makes a change the same change.
fn identity(change: &ChangeEvent) -> (crate::domain::CommentId, u64, bool) {
    (
        change.entry().key.id(),
        change.version(),
        matches!(change, ChangeEvent::Remove { .. }),
    )
}

/// The millisecond part of an entry id (`<ms>-<seq>`).
fn millis_of(id: &str) -> Option<u64> {
    id.split_once('-')?.0.parse().ok()
}

/// `XINFO STREAM`'s reply (name, value pairs: a flat array in RESP2, a map in RESP3).
fn held_of(reply: &Value) -> Option<Held> {
    let pairs: Vec<(&Value, &Value)> = match reply {
        Value::Array(flat) => flat
            .chunks(2)
            .filter_map(|kv| Some((kv.first()?, kv.get(1)?)))
            .collect(),
        Value::Map(map) => map.iter().map(|(k, v)| (k, v)).collect(),
        _ => return None,
    };
    let field = |name: &str| {
        pairs
            .iter()
            .find(|(k, _)| {
                matches!(k, Value::BulkString(b) if b == name.as_bytes())
                    || matches!(k, Value::SimpleString(s) if s == name)
            })
            .map(|(_, v)| *v)
    };
    let number = |name: &str| match field(name)? {
        Value::Int(n) => u64::try_from(*n).ok(),
        _ => None,
    };
    let text = |value: &Value| match value {
        Value::BulkString(b) => String::from_utf8(b.clone()).ok(),
        Value::SimpleString(s) => Some(s.clone()),
        _ => None,
    };
    let first_ms = match field("first-entry")? {
        Value::Nil => None,
        Value::Array(entry) => Some(millis_of(&text(entry.first()?)?)?),
        _ => return None,
    };
    Some(Held {
        added: number("entries-added")?,
        length: number("length")?,
        first_ms,
        last_id: text(field("last-generated-id")?)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bulk(text: &str) -> Value {
        Value::BulkString(text.as_bytes().to_vec())
    }

    #[test]
    fn a_log_holds_a_time_if_never_trimmed_or_if_its_first_entry_is_older() {
        let reply = Value::Array(vec![
            bulk("length"),
            Value::Int(128),
            bulk("last-generated-id"),
            bulk("1795648225202-0"),
            bulk("entries-added"),
            Value::Int(300),
            bulk("first-entry"),
            Value::Array(vec![bulk("1795648223571-3"), Value::Array(vec![])]),
        ]);
        let held = held_of(&reply).expect("parsed");
        assert_eq!(
            (
                held.added,
                held.length,
                held.first_ms,
                held.last_id.as_str()
            ),
            (300, 128, Some(1_795_648_223_571), "1795648225202-0")
        );
        // Trimmed: only times after its first entry's are held whole.
        assert!(held.holds_since(1_795_648_223_572));
        assert!(!held.holds_since(1_795_648_223_571));
        assert!(!held.holds_since(1_000));
        // Never trimmed: every time is.
        let whole = Held { added: 128, ..held };
        assert!(whole.holds_since(1_000));
        let empty = Held {
            length: 0,
            added: 0,
            first_ms: None,
            last_id: "0-0".into(),
        };
        assert!(!empty.holds_since(1_000));
        assert!(held_of(&Value::Nil).is_none());
    }
}
