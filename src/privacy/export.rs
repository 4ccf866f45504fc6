//! A person's export: one JSON document of everything the store keeps about them, written as
//! it is read (a page at a time), so its size costs no memory.
//!
//! ```json
//! {"format":"dynapage-person-export/1","subject":"…","exportedAt":"…",
//!  "comments":[{"id":"…","productSku":"…","author":"…","body":"…","rating":5,
//!               "createdAt":"…","updatedAt":null,"helpfulCount":2,"status":"PUBLISHED",
//!               "moderation":{…}|null,"reply":{…}|null,"verifiedPurchase":false}, …],
//!  "helpfulVotes":[{"commentId":"…"}, …],
//!  "reports":[{"id":"…","commentId":"…","productSku":"…","reason":"SPAM","details":null,
//!              "status":"OPEN","createdAt":"…","decidedAt":null}, …]}
//! ```
//!
//! Comments in every status (pending, hidden and rejected too, with the decision's reason and
//! note), oldest first; votes by comment id; reports oldest first. Times are RFC 3339 in UTC.

use serde::Serialize;
use tokio::io::{AsyncWrite, AsyncWriteExt};

use super::pages;
use crate::domain::{Comment, Report, millis_to_datetime};
use crate::store::{CommentStore, StoreError};

/// The document's `format`: its version, for whoever reads it back.
pub const FORMAT: &str = "dynapage-person-export/1";

/// Why an export stopped.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    /// The store could not be read.
    #[error("reading the store: {0}")]
    Store(#[from] StoreError),
    /// The document could not be written.
    #[error("writing the export: {0}")]
    Write(#[from] std::io::Error),
}

/// How much an export held.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ExportSummary {
    /// Comments written.
    pub comments: u64,
    /// Helpful votes written.
    pub helpful_votes: u64,
    /// Reports written.
    pub reports: u64,
}

fn time(millis: u64) -> String {
    millis_to_datetime(millis).to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct CommentOut<'a> {
    id: String,
    product_sku: &'a str,
    author: &'a str,
    body: &'a str,
    rating: u8,
    created_at: String,
    updated_at: Option<String>,
    helpful_count: u64,
    status: &'a str,
    moderation: Option<ModerationOut<'a>>,
    reply: Option<ReplyOut<'a>>,
    /// A verified purchase (the flag only: never its order hash).
    verified_purchase: bool,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ModerationOut<'a> {
    reason: Option<&'a str>,
    note: Option<&'a str>,
    decided_at: Option<String>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ReplyOut<'a> {
    body: &'a str,
    created_at: String,
    updated_at: Option<String>,
}

impl<'a> CommentOut<'a> {
    fn of(comment: &'a Comment) -> Self {
        let moderation = &comment.moderation;
        let decided = moderation.reason.is_some()
            || moderation.note.is_some()
            || moderation.decided_at_ms.is_some();
        Self {
            id: comment.id.to_string(),
            product_sku: comment.sku.as_str(),
            author: &comment.author,
            body: &comment.body,
            rating: comment.rating.get(),
            created_at: time(comment.created_at_ms),
            updated_at: comment.updated_at_ms.map(time),
            helpful_count: comment.helpful_count,
            status: moderation.status.as_str(),
            moderation: decided.then(|| ModerationOut {
                reason: moderation.reason.map(|r| r.as_str()),
                note: moderation.note.as_deref(),
                decided_at: moderation.decided_at_ms.map(time),
            }),
            verified_purchase: comment.is_verified(),
            reply: comment.reply.as_deref().map(|reply| ReplyOut {
                body: &reply.body,
                created_at: time(reply.created_at_ms),
                updated_at: reply.updated_at_ms.map(time),
            }),
        }
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ReportOut<'a> {
    id: String,
    comment_id: String,
    product_sku: &'a str,
    reason: &'a str,
    details: Option<&'a str>,
    status: &'a str,
    created_at: String,
    decided_at: Option<String>,
}

impl<'a> ReportOut<'a> {
    fn of(report: &'a Report) -> Self {
        Self {
            id: report.id.to_string(),
            comment_id: report.comment.to_string(),
            product_sku: report.sku.as_str(),
            reason: report.reason.as_str(),
            details: report.details.as_deref(),
            status: report.status.as_str(),
            created_at: time(report.created_at_ms),
            decided_at: report.decided_at_ms.map(time),
        }
    }
}

/// Writes the JSON array's elements, a comma before each but the first.
struct Array<'w, W> {
    out: &'w mut W,
    written: u64,
}

impl<'w, W: AsyncWrite + Unpin> Array<'w, W> {
    /// Opens the array `name`, a member after others of the document's object.
    async fn open(out: &'w mut W, name: &str) -> std::io::Result<Self> {
        out.write_all(format!(",\"{name}\":[").as_bytes()).await?;
        Ok(Self { out, written: 0 })
    }

    async fn push(&mut self, value: &impl Serialize) -> std::io::Result<()> {
        let mut bytes = if self.written == 0 {
            Vec::new()
        } else {
            vec![b',']
        };
        serde_json::to_writer(&mut bytes, value).map_err(std::io::Error::other)?;
        self.out.write_all(&bytes).await?;
        self.written += 1;
        Ok(())
    }

    async fn close(self) -> std::io::Result<u64> {
        self.out.write_all(b"]").await?;
        Ok(self.written)
    }
}

/// Writes the `comments` array: `sub`'s comments in every status, oldest first.
async fn write_comments<S: CommentStore, W: AsyncWrite + Unpin>(
    store: &S,
    sub: &str,
    out: &mut W,
) -> Result<u64, ExportError> {
    let mut comments = Array::open(out, "comments").await?;
    let mut pages = pages::Comments::of(sub);
    while let Some(page) = pages.next(store).await? {
        for comment in &page {
            comments.push(&CommentOut::of(comment)).await?;
        }
    }
    Ok(comments.close().await?)
}

/// Writes `sub`'s export, read from `store` at `now_ms`, to `out`, and flushes it.
pub async fn export<S: CommentStore, W: AsyncWrite + Unpin>(
    store: &S,
    sub: &str,
    now_ms: u64,
    out: &mut W,
) -> Result<ExportSummary, ExportError> {
    let head = serde_json::json!({ "format": FORMAT, "subject": sub, "exportedAt": time(now_ms) });
    let head = head.to_string();
    out.write_all(&head.as_bytes()[..head.len() - 1]).await?;
    let mut summary = ExportSummary {
        comments: write_comments(store, sub, out).await?,
        ..ExportSummary::default()
    };

    let mut votes = Array::open(out, "helpfulVotes").await?;
    let mut pages = pages::Votes::of(sub);
    while let Some(page) = pages.next(store).await? {
        for comment in &page {
            votes
                .push(&serde_json::json!({ "commentId": comment.to_string() }))
                .await?;
        }
    }
    summary.helpful_votes = votes.close().await?;

    let mut reports = Array::open(out, "reports").await?;
    let mut pages = pages::Reports::of(sub);
    while let Some(page) = pages.next(store).await? {
        for report in &page {
            reports.push(&ReportOut::of(report)).await?;
        }
    }
    summary.reports = reports.close().await?;
    out.write_all(b"}\n").await?;
    out.flush().await?;
    Ok(summary)
}
