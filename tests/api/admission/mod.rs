//! What a request is made to pay and what it is refused before anything runs (`src/http`'s
//! request checks, `src/ratelimit`, `src/persisted`): limits on documents over either
//! transport, prices and the failure floor, rate limits, persisted and trusted documents, and
//! the generated hostile inputs that must never abort the process.

mod hostile;
mod paying;
mod persisted;
mod pricing;
mod ratelimit;
mod request_checks;
