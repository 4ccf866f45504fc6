//! The change log: a Redis Stream, `<prefix>{changes}`, of every change a process applied to
//! the index ([`RedisLog::append`], through `Publishing`), read by every server to feed its
//! subscriptions ([`LogReader`], the hub's `Source::Redis`).
//!
//! **Why a Stream and not Pub/Sub.** Pub/Sub delivers to whoever is connected at that instant:
//! a server that reconnects (a network blip, a Redis failover) silently loses what was published
//! meanwhile, and nothing is kept for a subscriber that resumes. A Stream keeps the last
//! `--change-log-max-len` changes ([`DEFAULT_MAX_LEN`]; trimmed approximately by `XADD MAXLEN
//! ~`), so a server reads on from the last entry it saw after any reconnection, each server still
//! reads the log once, however many clients it has, and a subscription resumed on any server is
//! given the edits and deletions it missed from the log ([`RedisLog::since`], in [`resume`]).
//! Entries are small (the change's index entry, not the comment: about 62 bytes of Redis memory
//! each, measured); each server reads the comments of a batch from the store once.
//!
//! While Redis is away, a reader retries with capped exponential backoff and jitter, and warns
//! once per outage rather than once per retry ([`outage`]).
//!
//! The log is one key, so on a Cluster it lives on one node: every server reads from that node.
//! That is one blocking `XREAD` per server and one `XADD` per applied change, well within one
//! node's means at comment rates.
//!
//! An entry names its comment by the page index's member encoding (`index::redis::member`), so
//! the log and the index agree on it. This module owns the log's key and commands (and declares
//! them for the start-up check: [`needs_to_append`], [`needs_to_read`]); it reaches Redis through
//! `crate::redis` and knows nothing of the index's keys or scripts.

pub mod outage;
pub mod resume;

use redis::Value;
use tokio_util::sync::CancellationToken;

use crate::domain::{ChangeEvent, CommentStatus, IndexEntry, Rating, Sku};
use crate::index::redis::{member, sort_key_of};
use crate::redis::{CallError, KeyPrefix, Need, RedisHandle};
use crate::telemetry::metric;

/// About how many changes the log keeps unless `--change-log-max-len` says otherwise.
pub const DEFAULT_MAX_LEN: usize = 100_000;
/// How long one `XREAD` waits for new entries, in milliseconds: below the response timeout, so
/// a wait is never mistaken for a dead connection.
const BLOCK_MS: u64 = 1_000;
/// Most entries one `XREAD` returns.
const READ_COUNT: usize = 1_000;

/// `<prefix>{changes}`: the log's one key.
fn log_key(prefix: &KeyPrefix) -> String {
    prefix.key("{changes}")
}

/// The change log of one Redis, for appending. Cloning shares the connection.
#[derive(Clone, Debug)]
pub struct RedisLog {
    redis: RedisHandle,
    key: String,
    /// About how many entries appending keeps (`XADD MAXLEN ~`).
    max_len: usize,
}

impl RedisLog {
    /// The log under `redis`'s prefix, on its (shared) connection, keeping about `max_len`
    /// changes when appended to (`--change-log-max-len`; at least one).
    pub fn new(redis: &RedisHandle, max_len: usize) -> Self {
        Self {
            key: log_key(redis.prefix()),
            redis: redis.clone(),
            max_len: max_len.max(1),
        }
    }

    /// Appends `events` to the change log, in order, in one pipeline.
    pub async fn append(&self, events: &[ChangeEvent]) -> Result<(), CallError> {
        if events.is_empty() {
            return Ok(());
        }
        let mut pipe = redis::pipe();
        for event in events {
            pipe.cmd("XADD")
                .arg(&self.key)
                .arg("MAXLEN")
                .arg("~")
                .arg(self.max_len)
                .arg("*");
            for (field, value) in fields_of(event) {
                pipe.arg(field).arg(value);
            }
            pipe.ignore();
        }
        self.redis.query_pipeline::<()>(&pipe).await
    }

    /// A reader of the change log from its end as of its first read, on a connection of its
    /// own (its `XREAD` blocks, which would hold up every other request on a shared
    /// connection). Fails only on a bad configuration; Redis is first asked by [`LogReader::next`].
    pub fn reader(&self) -> Result<LogReader, CallError> {
        Ok(LogReader {
            redis: self.redis.dedicated()?,
            key: self.key.clone(),
            last: None,
            outage: outage::Outage::default(),
        })
    }
}

/// What appending sends: one `XADD` per applied change.
pub fn needs_to_append(prefix: &KeyPrefix) -> Vec<Need> {
    let (key, length) = (log_key(prefix), DEFAULT_MAX_LEN.to_string());
    vec![Need::new(
        "the change log of live comments, appended to for each applied change",
        [
            "XADD",
            key.as_str(),
            "MAXLEN",
            "~",
            length.as_str(),
            "*",
            "t",
            "u",
        ],
    )]
}

/// What reading sends: `XREVRANGE` for the log's end, then blocking `XREAD`s; and resuming a
/// subscription ([`resume`]): `XLEN` and `XINFO STREAM` for what the log still holds, `XRANGE`
/// for the changes since a time.
pub fn needs_to_read(prefix: &KeyPrefix) -> Vec<Need> {
    let (key, count, block) = (
        log_key(prefix),
        READ_COUNT.to_string(),
        BLOCK_MS.to_string(),
    );
    let feature = "live comments, read from the change log";
    let resume = "resumed subscriptions, given what they missed from the change log";
    vec![
        Need::new(feature, ["XREVRANGE", key.as_str(), "+", "-", "COUNT", "1"]),
        Need::new(
            feature,
            [
                "XREAD",
                "COUNT",
                count.as_str(),
                "BLOCK",
                block.as_str(),
                "STREAMS",
                key.as_str(),
                "0-0",
            ],
        ),
        Need::new(resume, ["XLEN", key.as_str()]),
        Need::new(resume, ["XINFO", "STREAM", key.as_str()]),
        Need::new(
            resume,
            ["XRANGE", key.as_str(), "0-0", "+", "COUNT", count.as_str()],
        ),
    ]
}

/// Reads the change log in order, each entry once.
#[derive(Debug)]
pub struct LogReader {
    redis: RedisHandle,
    key: String,
    /// The id of the last entry read; `None` before the first read.
    last: Option<String>,
    /// When to try again after failed reads, and whether to say so.
    outage: outage::Outage,
}

impl LogReader {
    /// The next changes appended to the log, as soon as there are some; `None` once `shutdown`
    /// fires. A failed read is retried from the same place after a wait that grows while Redis
    /// stays away ([`outage`]).
    pub async fn next_batch(&mut self, shutdown: &CancellationToken) -> Option<Vec<ChangeEvent>> {
        loop {
            let read = tokio::select! {
                read = self.next() => read,
                () = shutdown.cancelled() => return None,
            };
            match read {
                Ok(batch) => {
                    self.outage.succeeded();
                    if !batch.is_empty() {
                        return Some(batch);
                    }
                }
                Err(error) => {
                    metric::LIVE_FEED_ERRORS.counter(&[]).increment(1);
                    let wait = self.outage.failed(&error);
                    tokio::select! {
                        () = tokio::time::sleep(wait) => {}
                        () = shutdown.cancelled() => return None,
                    }
                }
            }
        }
    }

    /// The next changes appended to the log, waiting up to a second for some (an empty batch
    /// when none came). After an error, the next call reads on from the same place.
    pub async fn next(&mut self) -> Result<Vec<ChangeEvent>, CallError> {
        if self.last.is_none() {
            // The last entry now, so that nothing appended from here on is missed (`$` would
            // skip what arrives between two reads).
            let mut xrevrange = redis::cmd("XREVRANGE");
            xrevrange
                .arg(&self.key)
                .arg("+")
                .arg("-")
                .arg("COUNT")
                .arg(1);
            let last: Value = self.redis.query(&xrevrange).await?;
            self.last = Some(
                entries(&last)
                    .and_then(|entries| entries.last().map(|(id, _)| id.clone()))
                    .unwrap_or_else(|| "0-0".to_owned()),
            );
        }
        let last = self.last.clone().unwrap_or_default();
        let mut xread = redis::cmd("XREAD");
        xread
            .arg("COUNT")
            .arg(READ_COUNT)
            .arg("BLOCK")
            .arg(BLOCK_MS)
            .arg("STREAMS")
            .arg(&self.key)
            .arg(&last);
        let reply: Value = self.redis.query(&xread).await?;
        // Nil when the wait ended empty; else [[key, [entry, …]]].
        let entries = match &reply {
            Value::Nil => return Ok(Vec::new()),
            Value::Array(streams) => streams
                .first()
                .and_then(|stream| match stream {
                    Value::Array(pair) => pair.get(1).and_then(entries),
                    _ => None,
                })
                .ok_or_else(|| bad_reply(&reply))?,
            other => return Err(bad_reply(other)),
        };
        let mut changes = Vec::with_capacity(entries.len());
        for (id, fields) in &entries {
            changes.push(change_of(fields).ok_or_else(|| {
                CallError::Internal(format!("change log entry {id} is not a change").into())
            })?);
            self.last = Some(id.clone());
        }
        Ok(changes)
    }
}

/// A change as the fields of its log entry: kind (`u`, `d`), product, member, score, rating,
/// the previous rating of an edit (0: none), version, helpful count (`h`; absent from entries
/// written before votes moved lists, and read as 0), and `a` when the entry is not published,
/// `b` when the previous image of an edit was not, each the first letter of the status (`P`,
/// `H`, `R`; `0` from the release before, read as hidden). Both are written only then:
/// an entry without them (every change of a published comment, and every entry written before
/// moderation) reads as published, so the common entry keeps its size (BENCHMARKS.md, "Redis
/// change log").
fn fields_of(event: &ChangeEvent) -> Vec<(&'static str, Vec<u8>)> {
    let (kind, entry, old_rating, old_status, version) = match event {
        ChangeEvent::Upsert { old, new } => (
            "u",
            new,
            old.as_ref().map_or(0, |o| o.rating.get()),
            old.as_ref().map_or(CommentStatus::Published, |o| o.status),
            new.version,
        ),
        ChangeEvent::Remove { old, version } => ("d", old, old.rating.get(), old.status, *version),
    };
    let mut fields = vec![
        ("t", kind.as_bytes().to_vec()),
        ("p", entry.sku.as_str().as_bytes().to_vec()),
        ("m", member(&entry.key)),
        ("s", entry.key.millis().to_string().into_bytes()),
        ("r", entry.rating.get().to_string().into_bytes()),
        ("o", old_rating.to_string().into_bytes()),
        ("v", version.to_string().into_bytes()),
        ("h", entry.helpful.to_string().into_bytes()),
    ];
    // `q`: a verified purchase (never changes), written only then, like the statuses.
    if entry.verified {
        fields.push(("q", b"1".to_vec()));
    }
    let letter = |status: CommentStatus| status.as_str().as_bytes()[..1].to_vec();
    if !entry.status.is_public() {
        fields.push(("a", letter(entry.status)));
    }
    if !old_status.is_public() {
        fields.push(("b", letter(old_status)));
    }
    fields
}

fn bad_reply(reply: &Value) -> CallError {
    CallError::Internal(format!("the change log's command answered {reply:?}").into())
}

/// An entry's fields, as `(name, value)` pairs.
type Fields = Vec<(Vec<u8>, Vec<u8>)>;

/// `[[id, [field, value, …]], …]` as `(id, fields)` pairs.
fn entries(value: &Value) -> Option<Vec<(String, Fields)>> {
    let Value::Array(items) = value else {
        return None;
    };
    items
        .iter()
        .map(|item| {
            let Value::Array(pair) = item else {
                return None;
            };
            let [Value::BulkString(id), Value::Array(flat)] = pair.as_slice() else {
                return None;
            };
            let fields = flat
                .chunks(2)
                .map(|kv| match kv {
                    [Value::BulkString(k), Value::BulkString(v)] => Some((k.clone(), v.clone())),
                    _ => None,
                })
                .collect::<Option<Vec<_>>>()?;
            Some((String::from_utf8(id.clone()).ok()?, fields))
        })
        .collect()
}

/// The change an entry's fields describe.
fn change_of(fields: &[(Vec<u8>, Vec<u8>)]) -> Option<ChangeEvent> {
    let field = |name: &[u8]| {
        fields
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_slice())
    };
    let text = |name: &[u8]| std::str::from_utf8(field(name)?).ok();
    let number = |name: &[u8]| text(name)?.parse::<u64>().ok();
    let rating = |value: u64| Rating::new(i64::try_from(value).ok()?).ok();
    let sku = Sku::parse(text(b"p")?).ok()?;
    let key = sort_key_of(field(b"m")?, number(b"s")?)?;
    let version = number(b"v")?;
    let helpful = if field(b"h").is_some() {
        number(b"h")?
    } else {
        0
    };
    let status = |name: &[u8]| match field(name) {
        None => CommentStatus::Published,
        Some(b"P") => CommentStatus::Pending,
        Some(b"R") => CommentStatus::Rejected,
        Some(_) => CommentStatus::Hidden,
    };
    let entry = |rating: Rating, version: u64, status: CommentStatus| IndexEntry {
        sku: sku.clone(),
        key,
        rating,
        version,
        helpful,
        published: status.is_public(),
        status,
        author: None,
        reported: false,
        verified: field(b"q").is_some(),
    };
    match text(b"t")? {
        "u" => {
            let old = match number(b"o")? {
                0 => None,
                r => Some(entry(rating(r)?, version.saturating_sub(1), status(b"b"))),
            };
            Some(ChangeEvent::Upsert {
                old,
                new: entry(rating(number(b"r")?)?, version, status(b"a")),
            })
        }
        "d" => Some(ChangeEvent::Remove {
            old: entry(
                rating(number(b"r")?)?,
                version.saturating_sub(1),
                status(b"a"),
            ),
            version,
        }),
        _ => None,
    }
}

#[cfg(test)]
#[path = "redis_log_tests.rs"]
mod tests;
