//! dynapage: Relay cursor connections over DynamoDB, with `totalCount` and page jumps answered
//! by a Redis sorted-set index.
//!
//! The layers, in the direction data flows (`docs/architecture.md` draws them): [`http`] →
//! [`graphql`] → [`pagination`] → [`store`] / [`index`]; [`sync`] keeps the index in step with
//! the store; [`live`] fans the changes the index applied out to subscriptions; [`ratelimit`]
//! keeps each client within its budgets. [`redis`] is the one connection layer under every
//! Redis user (the index, the change log, the checkpoints, the rate limits), and imports none of
//! them. [`domain`] is the vocabulary they share, over [`clock`] and [`backoff`]; [`auth`] says
//! who writes; [`storefront`] is a shop's pages drawn from the API in process, above [`http`];
//! [`cli`], [`config`] and [`startup`] assemble the program.

// Everything the library exports is documented, and nothing is `pub` that no one outside can
// reach (`pub(crate)` says so).
#![warn(missing_docs, unreachable_pub)]

pub mod auth;
pub mod backoff;
pub mod base64url;
pub mod cli;
pub mod clock;
pub mod config;
pub mod domain;
pub mod error;
pub mod generate;
pub mod graphql;
pub mod http;
pub mod index;
pub mod live;
pub mod pagination;
pub mod persisted;
pub mod privacy;
pub mod purge;
pub mod ratelimit;
pub mod redis;
pub mod startup;
pub mod store;
pub mod storefront;
pub mod sync;
pub mod telemetry;
