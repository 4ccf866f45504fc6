//! dynapage: Relay cursor connections over DynamoDB, with totalCount and page jumps answered by
//! a Redis sorted-set index.
//!
//! The layers, each a module, in the direction data flows (DESIGN §2):
//! `http` → `graphql` → `pagination` → `store` / `index`; `sync` keeps `index` in step with
//! `store`. `domain` is the vocabulary they share.

pub mod domain;
pub mod index;
pub mod pagination;
pub mod store;
