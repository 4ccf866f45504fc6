//! How `export` and `import` show and keep their progress: a log line every few seconds
//! ([`Progress`]), an optional pace ([`Pace`]), and the file beside an export's output that
//! says where an interrupted export stopped ([`Saved`]).

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::Context;
use serde::{Deserialize, Serialize};

use crate::config::BackendArgs;
use crate::store::sqlite::modes;

/// Progress of a long copy: a log line every few seconds.
pub(super) struct Progress {
    what: &'static str,
    done: u64,
    started: Instant,
    next: Instant,
}

impl Progress {
    pub(super) fn new(what: &'static str) -> Self {
        let now = Instant::now();
        Self {
            what,
            done: 0,
            started: now,
            next: now + Duration::from_secs(2),
        }
    }

    pub(super) fn add(&mut self, n: u64) {
        self.done += n;
        if Instant::now() >= self.next {
            self.next += Duration::from_secs(2);
            tracing::info!(
                what = self.what,
                comments = self.done,
                elapsed_ms = self.started.elapsed().as_millis() as u64,
                "progress"
            );
        }
    }
}

/// At most `per_second` comments a second over the whole run (none when `None`): spares a
/// production table's read capacity, or the disk beside a running server.
pub(super) struct Pace {
    per_second: Option<u64>,
    started: Instant,
    done: u64,
}

impl Pace {
    pub(super) fn new(per_second: Option<u64>) -> Self {
        Self {
            per_second,
            started: Instant::now(),
            done: 0,
        }
    }

    /// Counts `n` more comments; returns how long to wait before the next ones (if at all).
    pub(super) fn add(&mut self, n: u64) -> Option<Duration> {
        self.done += n;
        let rate = self.per_second?;
        let due = Duration::from_secs_f64(self.done as f64 / rate as f64);
        due.checked_sub(self.started.elapsed())
            .filter(|ahead| *ahead >= Duration::from_millis(5))
    }
}

/// What `FILE.export-progress` holds while an export of `FILE` is under way. An export resumes
/// only what the same source started; anything else starts over.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(super) struct Saved {
    /// `data-dir:PATH` or `dynamodb:ENDPOINT/TABLE`.
    pub source: String,
    /// Where the DynamoDB scan stands; `None` for the embedded store, whose position is the
    /// last complete line (or frame) of `FILE.partial` itself.
    pub scan: Option<ScanState>,
}

/// How far a DynamoDB export's scan got: the segments are read one after the other, each
/// page appended to `FILE.scan` before this is saved.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(super) struct ScanState {
    pub segments: u32,
    /// The segment being read; `segments` when the scan is complete.
    pub segment: u32,
    /// The key to resume that segment after (DynamoDB's `LastEvaluatedKey`).
    pub resume: Option<String>,
    /// Bytes of `FILE.scan` that hold complete pages; anything after them is cut.
    pub spool_bytes: u64,
    /// Comments in those bytes.
    pub comments: u64,
}

impl Saved {
    /// The saved state at `path` if it belongs to `source`.
    pub(super) fn load(path: &Path, source: &str) -> Option<Self> {
        let text = std::fs::read_to_string(path).ok()?;
        match serde_json::from_str::<Saved>(&text) {
            Ok(saved) if saved.source == source => Some(saved),
            Ok(_) => {
                tracing::warn!(file = %path.display(), "an export progress of another source is ignored");
                None
            }
            Err(_) => {
                tracing::warn!(file = %path.display(), "an unreadable export progress is ignored");
                None
            }
        }
    }

    /// Saves atomically (a temporary file renamed over the old one).
    pub(super) fn save(&self, path: &Path) -> anyhow::Result<()> {
        let temporary = format!("{}.tmp", path.display());
        modes::write_private(Path::new(&temporary), &serde_json::to_vec(self)?)
            .and_then(|()| std::fs::rename(&temporary, path))
            .with_context(|| format!("saving the export progress in {}", path.display()))
    }
}

/// Names a store (`data-dir:PATH` or `dynamodb:ENDPOINT/TABLE`), so a saved progress is only
/// resumed against the store it was saved for.
pub(super) fn store_name(backend: &BackendArgs) -> anyhow::Result<String> {
    Ok(match backend.data_dir()? {
        Some(dir) => format!(
            "data-dir:{}",
            std::fs::canonicalize(dir)
                .unwrap_or_else(|_| dir.to_owned())
                .display()
        ),
        None => format!(
            "dynamodb:{}/{}",
            backend.dynamodb_endpoint.as_deref().unwrap_or("aws"),
            backend.dynamodb_table
        ),
    })
}

/// Removes `path`; one already gone is fine.
pub(super) fn remove_if_there(path: &Path) -> anyhow::Result<()> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            Err(e).with_context(|| format!("removing {}", path.display()))
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pace_asks_to_wait_only_when_ahead_of_its_rate() {
        let mut unpaced = Pace::new(None);
        assert_eq!(unpaced.add(1_000_000), None);
        let mut paced = Pace::new(Some(100));
        let wait = paced
            .add(50)
            .expect("50 comments at 100/s are due at 0.5 s");
        assert!(wait > Duration::from_millis(400) && wait <= Duration::from_millis(500));
    }

    #[test]
    fn a_saved_progress_is_used_only_by_its_own_source() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("e.jsonl.export-progress");
        let saved = Saved {
            source: "dynamodb:local/t".into(),
            scan: Some(ScanState {
                segments: 4,
                segment: 1,
                resume: Some("key".into()),
                spool_bytes: 10,
                comments: 1,
            }),
        };
        saved.save(&path).expect("save");
        assert_eq!(Saved::load(&path, "dynamodb:local/t"), Some(saved));
        assert_eq!(Saved::load(&path, "data-dir:/d"), None);
        std::fs::write(&path, "{").expect("write");
        assert_eq!(Saved::load(&path, "dynamodb:local/t"), None);
    }
}
