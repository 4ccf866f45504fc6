//! The integration tests: one binary, in a folder per subject that follows `src/` (STYLE 10),
//! each folder's `mod.rs` saying what it holds. Real backends only: `support` starts DynamoDB
//! Local and `redis-server` on free ports (and holds what the contract suites share); `helpers`
//! starts the real server on port 0 and talks to it as clients do (GraphQL anonymous or signed,
//! raw HTTP, WebSockets, `/metrics`, child processes). What several folders use lives in those
//! two; a module lends its helpers only to its folder, and a scenario only where it is run again
//! on another backend. The one exception to real backends is `sync::stream_consumer`, which
//! scripts a stream to produce what DynamoDB Local cannot (shard splits, expired iterators,
//! trimmed records).

// First, so the contract suites can use its `contract_suite!` macro.
#[macro_use]
mod support;

mod helpers;

mod admission;
mod auth;
mod backends;
mod caching;
mod clients;
mod contracts;
mod deploy;
/// README.md, BENCHMARKS.md and the book: their examples run as the text says.
mod docs;
mod federation;
mod graphql;
mod http;
mod live;
mod moderation;
mod one_box;
mod paging;
mod storefront;
mod sync;
mod transfer;
