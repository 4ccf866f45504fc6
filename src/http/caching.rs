//! The caching headers of a `/graphql` response, decided in one place: who may keep it
//! (`Cache-Control`), what it varies with (`Vary`), and the client's cost budget as the IETF
//! `RateLimit-Policy` and `RateLimit` fields (draft-ietf-httpapi-ratelimit-headers-10).
//!
//! A shared cache (a CDN) may keep a response only when it is the same for every client
//! (RFC 9111 §3.5). Two things make a response one client's own: the request carried
//! `Authorization` (a verified viewer decides `viewerCanUpdate`, `viewerCanDelete` and
//! `viewerFoundHelpful`, and under `--auth jwt` the viewer is the only thing that does, so a
//! request without the header gets the same answer as every other anonymous one) or, under
//! `--auth off`, asked `viewerFoundHelpful` (the client's address is the voter: the handler
//! counts it as `authorization`), and the body shows the client's `throttleStatus`. So an error-free anonymous GET is answered `public` *without*
//! `throttleStatus` in its body (the budget is in its headers instead); a GET with
//! `Authorization` keeps `throttleStatus` and is `private`: a browser may keep it, a CDN never.
//! POST responses and responses with errors stay `no-store` and keep `throttleStatus`. A GET
//! that read more products than the CDN tags header can name is `private` too: a shared cache
//! could never be told to purge it (`response_cache::tags`).

use axum::http::{HeaderMap, HeaderName, HeaderValue, header};

use crate::ratelimit::Throttle;

/// `Cache-Control` of an error-free anonymous query over GET, with no per-client figure, under
/// the default `--cache-max-age` and `--cache-stale-while-revalidate` (the server's own value
/// replaces it: `HttpOptions::public_cache_control`).
pub(super) const PUBLIC: &str = "public, max-age=5, stale-while-revalidate=30";
/// `Cache-Control` of an error-free query over GET that is one client's own.
pub(super) const PRIVATE: &str = "private, max-age=5";
/// `Cache-Control` of everything else: POST, and responses with errors.
pub const NO_STORE: &str = "no-store";

/// The policy field: the budget's name, its size and its window.
pub const RATELIMIT_POLICY: HeaderName = HeaderName::from_static("ratelimit-policy");
/// The remaining budget and the seconds until it is whole again.
pub const RATELIMIT: HeaderName = HeaderName::from_static("ratelimit");

/// What decides a response's caching headers.
#[derive(Clone, Copy, Debug)]
pub(super) struct Cacheability {
    /// The request came over GET (POST is never cached).
    pub over_get: bool,
    /// The response has no errors.
    pub error_free: bool,
    /// The request carried `Authorization` (whether or not the viewer was used).
    pub authorization: bool,
    /// The products it read fit the CDN tags header (`response_cache::tags`): a response
    /// whose products cannot all be named could not be purged, so no shared cache keeps it.
    pub tags_fit: bool,
    /// The client's cost budget, shown in the body as `throttleStatus`; `None` when cost is
    /// not limited.
    pub throttle: Option<Throttle>,
}

impl Cacheability {
    /// Whether a shared cache may keep the response: then it must hold nothing of one client's.
    pub(super) fn shared(&self) -> bool {
        self.over_get && self.error_free && !self.authorization && self.tags_fit
    }

    /// The `throttleStatus` the body may show: none in a response a shared cache may keep.
    pub(super) fn body_throttle(&self) -> Option<Throttle> {
        self.throttle.filter(|_| !self.shared())
    }

    /// The `Cache-Control` value.
    pub(super) fn cache_control(&self) -> &'static str {
        if !self.over_get || !self.error_free {
            NO_STORE
        } else if self.shared() {
            PUBLIC
        } else {
            PRIVATE
        }
    }

    /// Sets `Cache-Control`, `Vary` and the rate-limit fields on `headers`.
    pub(super) fn apply(&self, headers: &mut HeaderMap) {
        headers.insert(
            header::CACHE_CONTROL,
            HeaderValue::from_static(self.cache_control()),
        );
        // The body's media type follows `Accept` (`transport::negotiate`). `Origin` is added by
        // the CORS layer when the allowed origins are a list, `Accept-Encoding` by the
        // compression layer when it compresses.
        headers.append(header::VARY, HeaderValue::from_static("accept"));
        if let Some(throttle) = self.throttle {
            rate_limit_fields(headers, throttle);
        }
    }
}

/// `RateLimit-Policy: "cost";q=<burst>;w=<seconds to refill it>` and
/// `RateLimit: "cost";r=<points left>;t=<seconds until whole again>`: the token bucket said in
/// the draft's quota-and-window terms.
fn rate_limit_fields(headers: &mut HeaderMap, throttle: Throttle) {
    let seconds = |points: u64| -> u64 {
        if throttle.restore_rate <= 0.0 {
            0
        } else {
            (points as f64 / throttle.restore_rate).ceil() as u64
        }
    };
    let quota = throttle.maximum_available;
    let remaining = throttle.currently_available.min(quota);
    let policy = format!("\"cost\";q={quota};w={}", seconds(quota).max(1));
    let state = format!("\"cost\";r={remaining};t={}", seconds(quota - remaining));
    for (name, value) in [(RATELIMIT_POLICY, policy), (RATELIMIT, state)] {
        if let Ok(value) = HeaderValue::from_str(&value) {
            headers.insert(name, value);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cacheability(over_get: bool, authorization: bool, throttle: bool) -> Cacheability {
        Cacheability {
            over_get,
            error_free: true,
            authorization,
            tags_fit: true,
            throttle: throttle.then_some(Throttle {
                maximum_available: 100,
                currently_available: 95,
                restore_rate: 10.0,
            }),
        }
    }

    #[test]
    fn only_an_anonymous_get_is_public_and_then_without_throttle_status() {
        assert_eq!(cacheability(true, false, false).cache_control(), PUBLIC);
        assert_eq!(cacheability(true, true, false).cache_control(), PRIVATE);
        let throttled = cacheability(true, false, true);
        assert_eq!(throttled.cache_control(), PUBLIC);
        assert_eq!(throttled.body_throttle(), None);
        let signed_in = cacheability(true, true, true);
        assert_eq!(signed_in.cache_control(), PRIVATE);
        assert!(signed_in.body_throttle().is_some());
        assert!(cacheability(false, false, true).body_throttle().is_some());
        assert_eq!(cacheability(false, false, false).cache_control(), NO_STORE);
        let failed = Cacheability {
            error_free: false,
            ..cacheability(true, false, false)
        };
        assert_eq!(failed.cache_control(), NO_STORE);
        let untaggable = Cacheability {
            tags_fit: false,
            ..cacheability(true, false, true)
        };
        assert_eq!(untaggable.cache_control(), PRIVATE);
        assert!(untaggable.body_throttle().is_some());
    }

    #[test]
    fn the_budget_is_said_in_the_drafts_fields() {
        let mut headers = HeaderMap::new();
        cacheability(true, false, true).apply(&mut headers);
        assert_eq!(headers[RATELIMIT_POLICY], "\"cost\";q=100;w=10");
        assert_eq!(headers[RATELIMIT], "\"cost\";r=95;t=1");
        assert_eq!(headers[header::VARY], "accept");
        let mut unlimited = HeaderMap::new();
        cacheability(true, false, false).apply(&mut unlimited);
        assert!(unlimited.get(RATELIMIT).is_none());
    }
}
