//! The API's answers (`src/graphql`): writes and what pages show of them, helpful votes,
//! refusals and their codes, field errors as the specification places them, and lookups that
//! batch their reads.

pub(crate) mod batched_lookups;
mod errors;
mod field_errors;
mod field_order;
mod helpful_votes;
mod mutations;
mod plain_pages;
mod rating_summaries;
