//! The HTTP front (`src/http`): GraphQL over HTTP on the raw bytes, endpoints, body limits,
//! content codings, CORS, sockets that wait, hardening, and `/metrics`.

mod body_limits;
mod connections;
mod cors;
mod encodings;
mod endpoints;
mod hardening;
mod metrics;
mod transport;
