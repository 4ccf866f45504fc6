//! The two narrow traits' contracts (STYLE 4): one list of behaviours per trait, run against
//! every backend of `CommentStore` (its votes too) and of `PageIndex`.

mod authors;
mod index;
mod privacy;
mod purchases;
mod reports;
mod statuses;
mod store;
mod votes;
