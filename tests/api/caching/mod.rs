//! Who may keep an answer and for how long (`src/http/response_cache`, `src/purge`): caching
//! headers, the response cache and its validators, coded copies, epochs and outages, and the
//! CDN purges a write sends, through a real Varnish.

mod encodings;
mod epochs;
mod headers;
mod outages;
pub(crate) mod purges;
mod response_cache;
mod varnish;
