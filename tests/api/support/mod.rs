//! Launchers for the real backends the tests run against. Each starts its own server on a free
//! port (or uses the URL given in the environment) and stops it when the tests end.

pub mod dynamodb_local;
pub mod fault_proxy;
pub mod redis_server;
