//! The vocabulary of the product: comments, their ids, the total order they are paged in, and
//! the change events that keep the page index in step with the store, and helpful votes.
//!
//! Nothing here knows about DynamoDB, Redis or GraphQL; every other layer speaks these types.

mod audit;
mod author;
mod change;
mod comment;
mod ids;
mod invalid;
mod moderation;
mod order;
mod order_hash;
mod page_numbers;
mod person;
mod purchase;
mod queue;
mod report;
mod report_log;
mod sort_key;
pub mod text;
mod verdict;
mod vote;

pub use audit::{EntryId, LogAction, LogEntry};
pub use author::AuthorList;
pub use change::{ChangeEvent, IndexEntry};
pub use comment::{
    Access, Comment, CommentDraft, CommentPatch, MAX_AUTHOR_CHARS, MAX_AUTHOR_SUB_BYTES,
    MAX_BODY_CHARS, MAX_VERSION, VersionCeiling, millis_to_datetime, version_is_valid,
};
pub(crate) use ids::splitmix;
pub use ids::{CommentId, Rating, RatingSet, Sku};
pub use invalid::InvalidInput;
pub use moderation::{
    CommentStatus, DecisionRefused, MAX_NOTE_CHARS, Moderation, ModerationDecision,
    ModerationReason, Reply, Verdict, reply_text,
};
pub use order::{CommentOrder, Grouping, Listing, Position, helpful_group};
pub use order_hash::{OrderHash, OrderKey};
pub use page_numbers::{AnchorRank, Numbering, PageLayout, PageLinks, Pager};
pub use person::{ErasureMode, ErasureReceipt, FORMER_CUSTOMER, Forget};
pub use purchase::{is_verified_list, verified_list, verified_product};
pub use queue::{Queue, QueueList, list_name};
pub use report::{
    MAX_DETAILS_CHARS, MAX_OPEN_REPORTS, REPORT_THRESHOLD_ACTOR, Report, ReportDraft, ReportReason,
    ReportRefused, ReportStatus, decode_reporters, encode_reporters,
};
pub use sort_key::{Order, SortKey};
pub use verdict::VerdictRefused;
pub use vote::{BadVoterId, Voted, Voter, VoterId};
