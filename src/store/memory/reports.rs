//! The embedded store's reports: each by its comment and reporter (one per pair), and each
//! reporter's in report-id order, so a reader's reports are read newest first without a filter.

use std::collections::{BTreeMap, HashMap};
use std::ops::Bound;

use std::num::NonZeroU32;

use super::MemoryStore;
use crate::domain::{
    ChangeEvent, CommentId, EntryId, IndexEntry, LogEntry, Order, Report, ReportDraft, ReportStatus,
};
use crate::store::{ReportPage, ReportQuery, StoreError};

#[derive(Debug, Default)]
pub(super) struct Reports {
    by_pair: HashMap<(CommentId, String), Report>,
    by_reporter: HashMap<String, BTreeMap<EntryId, CommentId>>,
}

impl Reports {
    /// The report `reporter` filed on `comment`.
    pub(super) fn get(&self, comment: CommentId, reporter: &str) -> Option<&Report> {
        self.by_pair.get(&(comment, reporter.to_owned()))
    }

    /// Holds `report`, replacing the one of its comment and reporter.
    pub(super) fn put(&mut self, report: Report) {
        let pair = (report.comment, report.reporter.clone());
        if let Some(old) = self.by_pair.get(&pair)
            && let Some(ids) = self.by_reporter.get_mut(&report.reporter)
        {
            ids.remove(&old.id);
        }
        self.by_reporter
            .entry(report.reporter.clone())
            .or_default()
            .insert(report.id, report.comment);
        self.by_pair.insert(pair, report);
    }

    /// Drops the report `reporter` filed on `comment`, answering it if there was one.
    pub(super) fn remove(&mut self, comment: CommentId, reporter: &str) -> Option<Report> {
        let report = self.by_pair.remove(&(comment, reporter.to_owned()))?;
        if let Some(ids) = self.by_reporter.get_mut(reporter) {
            ids.remove(&report.id);
            if ids.is_empty() {
                self.by_reporter.remove(reporter);
            }
        }
        Some(report)
    }

    /// Closes the open reports `reporters` filed on `comment` as `outcome` at `now_ms`, and
    /// answers them as closed.
    pub(super) fn close(
        &mut self,
        comment: CommentId,
        reporters: &[String],
        outcome: ReportStatus,
        now_ms: u64,
    ) -> Vec<Report> {
        let mut closed = Vec::new();
        for reporter in reporters {
            if let Some(report) = self.by_pair.get_mut(&(comment, reporter.clone())) {
                *report = report.closed(outcome, now_ms);
                closed.push(report.clone());
            }
        }
        closed
    }

    /// How many reports `reporter` filed.
    pub(super) fn count(&self, reporter: &str) -> u64 {
        self.by_reporter
            .get(reporter)
            .map_or(0, |ids| ids.len() as u64)
    }

    /// Every report, in no order (`scan`).
    pub(super) fn all(&self) -> impl Iterator<Item = &Report> {
        self.by_pair.values()
    }

    /// One page of `query`, at most `cap` reports (a stand-in for DynamoDB's 1 MB cut).
    pub(super) fn query(&self, query: &ReportQuery, cap: Option<usize>) -> ReportPage {
        let Some(ids) = self.by_reporter.get(&query.reporter) else {
            return ReportPage::default();
        };
        let range = match (query.order, query.after) {
            (_, None) => (Bound::Unbounded, Bound::Unbounded),
            (Order::NewestFirst, Some(after)) => (Bound::Unbounded, Bound::Excluded(after)),
            (Order::OldestFirst, Some(after)) => (Bound::Excluded(after), Bound::Unbounded),
        };
        let ids = super::log::ordered(
            ids.range(range).map(|(id, comment)| (*id, *comment)),
            query.order,
        );
        let limit = cap.map_or(query.limit, |cap| cap.min(query.limit));
        let reports: Vec<Report> = ids
            .take(limit)
            .filter_map(|(_, comment)| self.get(comment, &query.reporter).cloned())
            .collect();
        let last_evaluated = (reports.len() == limit && limit > 0)
            .then(|| reports.last().map(|r| r.id))
            .flatten();
        ReportPage {
            reports,
            last_evaluated,
        }
    }
}

impl MemoryStore {
    /// Puts reports as they are (the durable store's writer applying what it committed, and
    /// its load).
    pub(crate) fn put_reports_now(&self, reports: &[Report]) {
        let mut tables = self.write();
        for report in reports {
            tables.reports.put(report.clone());
        }
    }

    /// Files a report in one step under the lock (see [`CommentStore::report`]); the durable
    /// store's writer runs the same rules inside its transaction.
    pub(super) fn report_now(
        &self,
        id: CommentId,
        reporter: &str,
        draft: &ReportDraft,
        hide_threshold: Option<NonZeroU32>,
        now_ms: u64,
    ) -> Result<Report, StoreError> {
        let mut tables = self.write();
        if let Some(existing) = tables.reports.get(id, reporter) {
            return Ok(existing.clone());
        }
        let old = tables
            .comments
            .get(&id)
            .cloned()
            .ok_or(StoreError::NotFound(id))?;
        let new = old.after_report(reporter, hide_threshold, now_ms)?;
        let report = draft.clone().into_report(&old, reporter, now_ms);
        for entry in LogEntry::of_report(&old, &new, now_ms) {
            tables.log.append(entry);
        }
        tables.reports.put(report.clone());
        tables.replace(new.clone());
        self.emit(ChangeEvent::Upsert {
            old: Some(IndexEntry::from(&old)),
            new: IndexEntry::from(&new),
        });
        Ok(report)
    }
}
