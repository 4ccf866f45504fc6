//! Moderation (`moderateComment`, `--moderation pre|post`): who may decide, what a decision
//! does to every public surface (lists, counts, summaries, `node`/`nodes`, live events), what
//! authors and moderators see of a comment that is not published, and the refusals that write
//! nothing. Against the real server with tokens from a JWKS the test serves.

mod costs;
mod decisions;
mod log;
mod own;
mod pre;
mod privacy;
pub(crate) mod purchases;
mod queues;
mod replies;
mod reports;
mod seeded;
mod stats;
mod surfaces;
