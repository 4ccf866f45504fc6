//! Keeping the index true (`src/sync`): the stream consumer, `sync`, `reindex`, `verify` and
//! `lambda-sync` over DynamoDB Local's stream and a real Redis.

pub(crate) mod commands;
pub(crate) mod lambda;
mod reindex_live;
mod stream_consumer;
