//! Keeping the index true (`src/sync`): the stream consumer, `sync`, `reindex`, `verify` and
//! `lambda-sync` over DynamoDB Local's stream and a real Redis.

mod commands;
mod lambda;
mod reindex_live;
mod stream_consumer;
