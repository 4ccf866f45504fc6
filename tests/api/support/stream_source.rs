//! A scripted change stream for the stream consumer's tests: shards and records held in memory
//! and changed by the test while the consumer runs, producing what DynamoDB Local cannot: a
//! shard that splits while it is still open, closed shards, an expired iterator, trimmed
//! records. Every call the consumer makes is logged, so a test can say in which order it read.
//!
//! It behaves as DynamoDB Streams documents: sequence numbers grow across the stream, an
//! iterator names a shard and the next sequence to read, reading before the oldest kept record
//! is `TrimmedData`, and a closed shard's last read has no next iterator.

use std::sync::{Arc, Mutex, MutexGuard};

use dynapage::domain::ChangeEvent;
use dynapage::store::change_source::{Batch, ChangeSource, ShardInfo, SourceError, StartAt};

/// A call the consumer made, in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Call {
    Shards,
    Iterator {
        shard: String,
        at: StartAt,
    },
    /// A read of `shard` that returned the records of these sequence numbers; `last` when it
    /// had no next iterator (the shard was drained).
    Read {
        shard: String,
        sequences: Vec<u64>,
        last: bool,
    },
    /// A read that failed with the injected or scripted error.
    Failed {
        shard: String,
        error: String,
    },
}

#[derive(Debug)]
struct Shard {
    id: String,
    parent: Option<String>,
    closed: bool,
    records: Vec<(u64, ChangeEvent)>,
    /// The oldest sequence number still kept: older records were trimmed.
    horizon: u64,
    listed: bool,
}

#[derive(Debug, Default)]
struct Script {
    shards: Vec<Shard>,
    last_sequence: u64,
    per_read: usize,
    expire_next_read: bool,
    calls: Vec<Call>,
}

impl Script {
    fn shard(&mut self, id: &str) -> Option<&mut Shard> {
        self.shards.iter_mut().find(|s| s.id == id && s.listed)
    }
}

/// The stream; clones share it, so the test keeps one and the consumer reads the other.
#[derive(Clone, Debug, Default)]
pub struct ScriptedSource {
    script: Arc<Mutex<Script>>,
}

impl ScriptedSource {
    /// An empty stream whose reads return at most `per_read` records.
    pub fn new(per_read: usize) -> Self {
        let source = Self::default();
        source.lock().per_read = per_read;
        source
    }

    fn lock(&self) -> MutexGuard<'_, Script> {
        self.script.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Adds an open shard, listed from now on.
    pub fn add_shard(&self, id: &str, parent: Option<&str>) {
        self.lock().shards.push(Shard {
            id: id.to_owned(),
            parent: parent.map(str::to_owned),
            closed: false,
            records: Vec::new(),
            horizon: 0,
            listed: true,
        });
    }

    /// Appends a change to an open shard; returns its sequence number.
    pub fn push(&self, shard: &str, event: ChangeEvent) -> u64 {
        let mut script = self.lock();
        script.last_sequence += 1;
        let sequence = script.last_sequence;
        let shard = script.shard(shard).expect("a listed shard");
        assert!(!shard.closed, "{} is closed", shard.id);
        shard.records.push((sequence, event));
        sequence
    }

    /// Closes a shard: no record will be added, and its last read ends it.
    pub fn close(&self, shard: &str) {
        self.lock().shard(shard).expect("a listed shard").closed = true;
    }

    /// Drops the records of `shard` older than `horizon`, as the stream does after 24 hours.
    pub fn trim(&self, shard: &str, horizon: u64) {
        self.lock().shard(shard).expect("a listed shard").horizon = horizon;
    }

    /// The next read, whichever shard it is for, fails with `ExpiredIterator`.
    pub fn expire_next_read(&self) {
        self.lock().expire_next_read = true;
    }

    pub fn calls(&self) -> Vec<Call> {
        self.lock().calls.clone()
    }

    /// The calls about `shard`, in order.
    pub fn calls_on(&self, shard: &str) -> Vec<Call> {
        self.calls()
            .into_iter()
            .filter(|call| match call {
                Call::Shards => false,
                Call::Iterator { shard: s, .. }
                | Call::Read { shard: s, .. }
                | Call::Failed { shard: s, .. } => s == shard,
            })
            .collect()
    }
}

fn parse(iterator: &str) -> Result<(&str, u64), SourceError> {
    iterator
        .split_once('@')
        .and_then(|(shard, next)| Some((shard, next.parse().ok()?)))
        .ok_or_else(|| SourceError::Failed(format!("not an iterator: {iterator}").into()))
}

impl ChangeSource for ScriptedSource {
    fn name(&self) -> &str {
        "scripted"
    }

    async fn open(&self) -> Result<String, SourceError> {
        Ok("scripted-stream".to_owned())
    }

    async fn shards(&self) -> Result<Vec<ShardInfo>, SourceError> {
        let mut script = self.lock();
        script.calls.push(Call::Shards);
        Ok(script
            .shards
            .iter()
            .filter(|s| s.listed)
            .map(|s| ShardInfo {
                id: s.id.clone(),
                parent: s.parent.clone(),
                closed: s.closed,
            })
            .collect())
    }

    async fn iterator(&self, shard: &str, at: &StartAt) -> Result<String, SourceError> {
        let mut script = self.lock();
        script.calls.push(Call::Iterator {
            shard: shard.to_owned(),
            at: at.clone(),
        });
        let found = script.shard(shard).ok_or(SourceError::ShardGone)?;
        let next = match at {
            StartAt::TrimHorizon => found.horizon,
            StartAt::After(sequence) => {
                let after: u64 = sequence
                    .parse()
                    .map_err(|_| SourceError::Failed("not a sequence number".into()))?;
                if after + 1 < found.horizon {
                    return Err(SourceError::TrimmedData);
                }
                after + 1
            }
        };
        Ok(format!("{shard}@{next}"))
    }

    async fn read(&self, iterator: &str) -> Result<Batch, SourceError> {
        let (shard, next) = parse(iterator)?;
        let mut script = self.lock();
        let failure = if std::mem::take(&mut script.expire_next_read) {
            Some(SourceError::ExpiredIterator)
        } else {
            match script.shard(shard) {
                None => Some(SourceError::ShardGone),
                Some(found) if next < found.horizon => Some(SourceError::TrimmedData),
                Some(_) => None,
            }
        };
        if let Some(error) = failure {
            script.calls.push(Call::Failed {
                shard: shard.to_owned(),
                error: error.to_string(),
            });
            return Err(error);
        }
        let per_read = script.per_read;
        let found = script.shard(shard).ok_or(SourceError::ShardGone)?;
        let records: Vec<(u64, ChangeEvent)> = found
            .records
            .iter()
            .filter(|(sequence, _)| *sequence >= next)
            .take(per_read)
            .cloned()
            .collect();
        let last_read = records.last().map(|(sequence, _)| *sequence);
        let remaining = found
            .records
            .iter()
            .any(|(sequence, _)| *sequence > last_read.unwrap_or(next.saturating_sub(1)));
        let drained = found.closed && !remaining;
        let next = last_read.map_or(next, |last| last + 1);
        script.calls.push(Call::Read {
            shard: shard.to_owned(),
            sequences: records.iter().map(|(sequence, _)| *sequence).collect(),
            last: drained,
        });
        Ok(Batch {
            last_sequence: last_read.map(|last| last.to_string()),
            read: records.len(),
            last_written_ms: None,
            records: records
                .into_iter()
                .map(|(sequence, event)| (sequence.to_string(), event))
                .collect(),
            next: (!drained).then(|| format!("{shard}@{next}")),
        })
    }
}
