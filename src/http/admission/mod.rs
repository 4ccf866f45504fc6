//! Admission: what a GraphQL request must pass before anything runs, over either transport
//! (POST and GET in `graphql`, a `subscribe` in `websocket`). The persisted document a request
//! names is looked up (`persisted`); its text is parsed once per text (`documents`) and checked
//! (`check`: the operation kinds a transport may run, depth in `limits`, aliases and fields in
//! `selections`, a subscription's shape in `subscription_shape`, required variables); who pays
//! is decided (`payer`), and what a refused or failed request costs and how much of its failure
//! a client is told (`failures`); `cost` spells the `extensions.cost` every answer carries.
//! `offline_check` runs the whole check without a server, for the fuzz target.
//!
//! What is not here: the concurrency limit, timeouts and the response (`graphql`), the socket
//! protocol (`websocket`), and how a request is read off the wire (`transport`).

pub(super) mod check;
pub(super) mod cost;
pub(super) mod documents;
pub(super) mod failures;
mod limits;
pub(super) mod offline_check;
pub(super) mod payer;
pub(super) mod persisted;
mod selections;
mod subscription_shape;
