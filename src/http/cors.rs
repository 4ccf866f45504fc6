//! Which browser origins may call the API (CORS). None by default: browsers then refuse
//! cross-origin calls, and same-origin pages (GraphiQL at `/`) and non-browser clients are
//! unaffected. No credentials are allowed, so `*` is safe to offer.

use std::time::Duration;

use axum::http::{HeaderName, HeaderValue, Method};
use tower_http::cors::{AllowHeaders, AllowOrigin, CorsLayer};

/// The allowed origins, checked at start-up.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum CorsOrigins {
    /// No cross-origin browser calls.
    #[default]
    None,
    /// These exact origins (`scheme://host[:port]`).
    List(Vec<HeaderValue>),
    /// Any origin (`*`).
    Any,
}

impl CorsOrigins {
    /// Parses `--cors-origin` values: origins like `https://shop.example.com` or
    /// `http://localhost:3000`, or `*`.
    pub fn parse(values: &[String]) -> Result<Self, String> {
        let values: Vec<&str> = values
            .iter()
            .map(|v| v.trim())
            .filter(|v| !v.is_empty())
            .collect();
        if values.is_empty() {
            return Ok(Self::None);
        }
        if values.contains(&"*") {
            return Ok(Self::Any);
        }
        values
            .into_iter()
            .map(|value| {
                let host = value
                    .strip_prefix("https://")
                    .or_else(|| value.strip_prefix("http://"))
                    .ok_or_else(|| format!("{value:?} is not an origin: it must start with http:// or https://"))?;
                if host.is_empty() || host.contains('/') {
                    return Err(format!(
                        "{value:?} is not an origin: scheme, host and port only, no path or trailing slash"
                    ));
                }
                HeaderValue::from_str(value).map_err(|_| format!("{value:?} is not an origin"))
            })
            .collect::<Result<_, _>>()
            .map(Self::List)
    }

    /// The layer answering preflights and adding CORS headers; `None` when no origin is allowed.
    pub(super) fn layer(&self, expose: [HeaderName; 6]) -> Option<CorsLayer> {
        let origins = match self {
            Self::None => return None,
            Self::List(origins) => AllowOrigin::list(origins.clone()),
            Self::Any => AllowOrigin::any(),
        };
        Some(
            CorsLayer::new()
                .allow_origin(origins)
                .allow_methods([Method::GET, Method::POST])
                // Clients add their own headers (Apollo's `apollographql-client-name`, tracing
                // headers); none of them grants anything, so whatever is asked for is allowed.
                .allow_headers(AllowHeaders::mirror_request())
                .expose_headers(expose)
                .max_age(Duration::from_secs(600)),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(values: &[&str]) -> Result<CorsOrigins, String> {
        CorsOrigins::parse(&values.iter().map(|v| v.to_string()).collect::<Vec<_>>())
    }

    #[test]
    fn origins_are_exact_scheme_host_port_or_a_star() {
        assert_eq!(parse(&[]), Ok(CorsOrigins::None));
        assert_eq!(parse(&["*"]), Ok(CorsOrigins::Any));
        assert_eq!(
            parse(&["https://shop.example.com", " http://localhost:3000 "]),
            Ok(CorsOrigins::List(vec![
                HeaderValue::from_static("https://shop.example.com"),
                HeaderValue::from_static("http://localhost:3000"),
            ]))
        );
        for bad in [
            "shop.example.com",
            "https://shop.example.com/",
            "https://",
            "ftp://x",
        ] {
            assert!(parse(&[bad]).is_err(), "{bad}");
        }
    }
}
