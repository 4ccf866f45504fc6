//! The integration tests: one binary, a module per feature (STYLE 10). Real backends only:
//! `support` starts DynamoDB Local and `redis-server` on free ports; `helpers` starts the real
//! server on port 0. The one exception is `stream_consumer`, which scripts a stream to produce
//! what DynamoDB Local cannot (shard splits, expired iterators, trimmed records).

// First, so the contract suites can use its `contract_suite!` macro.
#[macro_use]
mod support;

mod auth;
mod batched_lookups;
mod body_limits;
mod browser;
mod cache_encodings;
mod cache_epochs;
mod cache_outages;
mod cache_purges;
mod caching;
mod clients;
mod codegen;
mod cohorts;
mod compose;
mod concurrent_walks;
mod connections;
mod cors;
mod cursor_fuzz;
mod degradation;
mod demo;
mod demo_pages;
mod docs;
mod dynamodb_api;
mod dynamodb_store;
mod dynamodb_votes;
mod encodings;
mod engine_oracle;
mod errors;
mod faults;
mod field_errors;
mod hardening;
mod helpers;
mod helpful_votes;
mod hostile;
mod http;
mod iam;
mod import_checks;
mod index_contract;
mod index_view;
mod lambda;
mod live_clients;
mod live_resume;
mod metrics;
mod mutations;
mod one_box;
mod one_box_crash;
mod one_box_files;
mod orders;
mod page_numbers;
mod paying;
mod persisted;
mod playground;
mod pricing;
mod ratelimit;
mod rating_summaries;
mod ratings;
mod redis_acl;
mod redis_cluster;
mod redis_index;
mod redis_tls;
mod reindex_live;
mod request_checks;
mod response_cache;
mod store_contract;
mod stream_consumer;
mod subscriptions;
mod sync;
mod transfer;
mod transport;
mod varnish;
mod version_ceiling;
mod vote_contract;
mod walks;
mod ws_attacks;
mod ws_send_buffer;
mod ws_soak;
mod ws_sockets;
