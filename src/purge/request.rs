//! The purge request of each CDN, by tag:
//!
//! - **Varnish** with vmod xkey (`deploy/varnish/default.vcl`): `PURGE <url>` with the tags,
//!   space-separated, in `xkey-purge` (<https://github.com/varnish/varnish-modules/blob/master/src/vmod_xkey.vcc>).
//! - **Fastly**: `POST https://api.fastly.com/service/<id>/purge` with the keys in
//!   `Surrogate-Key` and the API token in `Fastly-Key`
//!   (<https://www.fastly.com/documentation/reference/api/purging/#bulk-purge-tag>).
//! - **Cloudflare**: `POST https://api.cloudflare.com/client/v4/zones/<zone>/purge_cache` with
//!   `{"tags": [...]}` and `Authorization: Bearer <token>`
//!   (<https://developers.cloudflare.com/api/resources/cache/methods/purge/>).

use std::time::Duration;

use axum::body::Bytes;
use axum::http::{HeaderValue, Method, Request};
use http_body_util::Full;
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::Client as HyperClient;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;

use crate::error::BoxError;

/// A purge request that has not answered within this is a failure (and retried).
const TIMEOUT: Duration = Duration::from_secs(5);

/// How `--purge-url` is spoken to: `Varnish` with vmod xkey (`PURGE` with the tags in
/// `xkey-purge`), `Fastly`'s bulk purge by surrogate key, or `Cloudflare`'s purge by cache tag.
// clap prints a variant's doc comment in `--help` (and switches the help to the long layout),
// so the variants are described above instead.
#[allow(missing_docs)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum PurgeFormat {
    Varnish,
    Fastly,
    Cloudflare,
}

/// Where purges go (`--purge-url`, `--purge-format`, `--purge-token`).
#[derive(Clone, Debug)]
pub struct PurgeTarget {
    /// Where purge requests are sent (`--purge-url`).
    pub url: String,
    /// How they are written (`--purge-format`).
    pub format: PurgeFormat,
    /// Fastly's API token or Cloudflare's; unused by Varnish.
    pub token: Option<String>,
}

pub(super) struct Client {
    target: PurgeTarget,
    http: HyperClient<HttpsConnector<HttpConnector>, Full<Bytes>>,
}

impl Client {
    pub(super) fn new(target: PurgeTarget) -> anyhow::Result<Self> {
        let connector = crate::auth::jwks::https_connector()
            .map_err(|e| anyhow::anyhow!("building the purge client: {e}"))?;
        Ok(Self {
            target,
            http: HyperClient::builder(TokioExecutor::new()).build(connector),
        })
    }

    /// Purges `tags`; `Err` unless the CDN answered 2xx.
    pub(super) async fn send(&self, tags: &[String]) -> Result<(), BoxError> {
        let request = build(&self.target, tags)?;
        let response = tokio::time::timeout(TIMEOUT, self.http.request(request))
            .await
            .map_err(|_| format!("no answer within {TIMEOUT:?}"))??;
        let status = response.status();
        if status.is_success() {
            Ok(())
        } else {
            Err(format!("the purge answered {status}").into())
        }
    }
}

/// The request that purges `tags` at `target`.
fn build(target: &PurgeTarget, tags: &[String]) -> Result<Request<Full<Bytes>>, BoxError> {
    let token = || -> Result<HeaderValue, BoxError> {
        let token = target
            .token
            .as_deref()
            .ok_or("this purge format needs --purge-token")?;
        Ok(HeaderValue::from_str(token)?)
    };
    let request = match target.format {
        PurgeFormat::Varnish => Request::builder()
            .method(Method::from_bytes(b"PURGE")?)
            .uri(&target.url)
            .header("xkey-purge", tags.join(" "))
            .body(Full::default())?,
        PurgeFormat::Fastly => Request::post(&target.url)
            .header("fastly-key", token()?)
            .header("surrogate-key", tags.join(" "))
            .body(Full::default())?,
        PurgeFormat::Cloudflare => {
            let mut bearer = HeaderValue::from_str(&format!("Bearer {}", token()?.to_str()?))?;
            bearer.set_sensitive(true);
            Request::post(&target.url)
                .header("authorization", bearer)
                .header("content-type", "application/json")
                .body(Full::new(Bytes::from(serde_json::to_vec(
                    &serde_json::json!({ "tags": tags }),
                )?)))?
        }
    };
    Ok(request)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(format: PurgeFormat) -> PurgeTarget {
        PurgeTarget {
            url: "http://cdn.example/purge".into(),
            format,
            token: Some("t0k".into()),
        }
    }

    #[test]
    fn each_cdn_gets_its_own_request() {
        let tags = ["sku-A".to_owned(), "sku-B".to_owned()];
        let varnish = build(&target(PurgeFormat::Varnish), &tags).expect("a request");
        assert_eq!(varnish.method().as_str(), "PURGE");
        assert_eq!(varnish.headers()["xkey-purge"], "sku-A sku-B");
        let fastly = build(&target(PurgeFormat::Fastly), &tags).expect("a request");
        assert_eq!(fastly.method(), Method::POST);
        assert_eq!(fastly.headers()["surrogate-key"], "sku-A sku-B");
        assert_eq!(fastly.headers()["fastly-key"], "t0k");
        let cloudflare = build(&target(PurgeFormat::Cloudflare), &tags).expect("a request");
        assert_eq!(cloudflare.headers()["authorization"], "Bearer t0k");
        let no_token = PurgeTarget {
            token: None,
            ..target(PurgeFormat::Fastly)
        };
        assert!(build(&no_token, &tags).is_err());
    }
}
