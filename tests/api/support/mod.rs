//! Launchers for the real backends the tests run against (and `backends`, a fresh DynamoDB
//! Local table and Redis prefix with the flags that name them), what the contract suites share,
//! and the doubles of the stream consumer's tests (a scripted stream, a recording index,
//! counters).
//!
//! Each launcher starts its own server on a free port (or uses the URL given in the
//! environment) and stops it when the tests end; `services` starts the processes themselves,
//! and is the one file that the benches and the bench tool include to start theirs.

pub mod backends;
#[macro_use]
pub mod contract;
pub mod counters;
pub mod data;
pub mod dynamodb_local;
pub mod fault_proxy;
pub mod jwks;
pub mod recording_index;
pub mod redis_cluster;
pub mod redis_server;
pub mod redis_tls;
#[allow(
    dead_code,
    reason = "shared with the benches and the bench tool, which use what the tests do not"
)]
pub mod services;
pub mod sqlite;
pub mod stream_source;
