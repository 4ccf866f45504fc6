//! The integration tests: one binary, a module per feature (STYLE 10). Real backends only:
//! `support` starts DynamoDB Local and `redis-server` on free ports.

mod engine_oracle;
mod index_contract;
mod store_contract;
mod support;
