//! The integration tests: one binary, in folders that follow `src/` (STYLE 10). Real backends
//! only: `support` starts DynamoDB Local and `redis-server` on free ports; `helpers` starts the
//! real server on port 0 and talks to it (GraphQL, raw HTTP, WebSockets, `/metrics`). The one
//! exception is `sync::stream_consumer`, which scripts a stream to produce what DynamoDB Local
//! cannot (shard splits, expired iterators, trimmed records).

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
// `docs`: README.md, BENCHMARKS.md and the book's examples, run as the text says.
mod graphql;
mod http;
mod live;
mod one_box;
mod paging;
mod storefront;
mod sync;
mod transfer;
