//! The integration tests: one binary, a module per feature (STYLE 10). Real backends only:
//! `support` starts DynamoDB Local and `redis-server` on free ports; `helpers` starts the real
//! server on port 0.

mod browser;
mod clients;
mod codegen;
mod compose;
mod cors;
mod cursor_fuzz;
mod degradation;
mod dynamodb_api;
mod engine_oracle;
mod errors;
mod faults;
mod helpers;
mod http;
mod index_contract;
mod mutations;
mod playground;
mod ratings;
mod store_contract;
mod support;
mod sync;
mod walks;
