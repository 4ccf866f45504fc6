//! Live comments over WebSockets (`src/live`, `src/graphql/subscription`): events, cohorts,
//! resumes across servers, and the attacks and soaks a socket's budget must bound.

mod coalesce;
mod cohorts;
mod resume;
mod subscriptions;
mod ws_attacks;
mod ws_send_buffer;
mod ws_soak;
mod ws_sockets;
