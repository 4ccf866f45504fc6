//! The integration tests: one binary, a module per feature (STYLE 10). Real backends only:
//! `support` starts DynamoDB Local and `redis-server` on free ports; `helpers` starts the real
//! server on port 0.

mod browser;
mod clients;
mod codegen;
mod cors;
mod engine_oracle;
mod errors;
mod helpers;
mod http;
mod index_contract;
mod mutations;
mod playground;
mod store_contract;
mod support;
mod walks;
