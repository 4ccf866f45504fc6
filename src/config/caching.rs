//! The response cache, the caching headers a CDN obeys, and the CDN purges that follow the
//! index (`http::response_cache`, `crate::purge`).

use clap::Args;
use tokio_util::sync::CancellationToken;

use crate::purge::{PurgeFormat, PurgeTarget, Purger};

/// The server's response cache and the headers that let a CDN keep responses.
#[derive(Args, Clone, Debug)]
pub struct CacheArgs {
    /// Bytes the response cache may hold, counted as the entries really take them (bodies and
    /// their encodings, keys, maps; 0 turns it off): repeats of an anonymous query are answered
    /// from it while one index read shows the products they read unchanged.
    #[arg(long, env = "DYNAPAGE_RESPONSE_CACHE_BYTES", default_value_t = 64 * 1024 * 1024)]
    pub response_cache_bytes: usize,
    /// `max-age` of responses a shared cache may keep (anonymous GETs), in seconds. Raise it
    /// (e.g. 3600) only with --purge-url: then a change reaches the CDN by purge.
    #[arg(long, env = "DYNAPAGE_CACHE_MAX_AGE", default_value_t = 5)]
    pub cache_max_age: u64,
    /// `stale-while-revalidate` of those responses, in seconds: how long a CDN may answer
    /// with an expired copy while it fetches a fresh one.
    #[arg(
        long,
        env = "DYNAPAGE_CACHE_STALE_WHILE_REVALIDATE",
        default_value_t = 30
    )]
    pub cache_stale_while_revalidate: u64,
    /// The header that names the products a cacheable response read, one tag `sku-<SKU>` each
    /// (`Surrogate-Key` for Varnish xkey and Fastly, `Cache-Tag` for Cloudflare).
    #[arg(long, env = "DYNAPAGE_CACHE_TAG_HEADER", default_value = "Surrogate-Key", value_parser = parse_header_name)]
    pub cache_tag_header: axum::http::HeaderName,
}

fn parse_header_name(name: &str) -> Result<axum::http::HeaderName, String> {
    axum::http::HeaderName::from_bytes(name.as_bytes()).map_err(|e| format!("{name:?}: {e}"))
}

impl CacheArgs {
    /// Sets the caching parts of `options`.
    pub fn apply(&self, options: &mut crate::http::HttpOptions) {
        options.public_cache_control = crate::http::public_cache_control(
            self.cache_max_age,
            self.cache_stale_while_revalidate,
        );
        options.response_cache = crate::http::ResponseCacheOptions {
            max_bytes: self.response_cache_bytes,
            tag_header: self.cache_tag_header.clone(),
        };
    }
}

/// Where the tags of changed products are purged after each applied batch.
#[derive(Args, Clone, Debug)]
pub struct PurgeArgs {
    /// Purge the CDN in front at this URL after each batch the index applies: Varnish's
    /// address (a `PURGE` with `xkey-purge`), `https://api.fastly.com/service/<id>/purge`, or
    /// `https://api.cloudflare.com/client/v4/zones/<zone>/purge_cache`.
    #[arg(long, env = "DYNAPAGE_PURGE_URL")]
    pub purge_url: Option<String>,
    /// How --purge-url is spoken to.
    #[arg(long, env = "DYNAPAGE_PURGE_FORMAT", value_enum, default_value_t = PurgeFormat::Varnish)]
    pub purge_format: PurgeFormat,
    /// The API token of Fastly or Cloudflare.
    #[arg(long, env = "DYNAPAGE_PURGE_TOKEN", hide_env_values = true)]
    pub purge_token: Option<String>,
}

impl PurgeArgs {
    /// The purger these settings ask for, started; `None` without --purge-url.
    pub fn purger(&self, shutdown: &CancellationToken) -> anyhow::Result<Option<Purger>> {
        let Some(url) = &self.purge_url else {
            return Ok(None);
        };
        if self.purge_format != PurgeFormat::Varnish && self.purge_token.is_none() {
            anyhow::bail!(
                "--purge-format {:?} needs --purge-token (DYNAPAGE_PURGE_TOKEN)",
                self.purge_format
            );
        }
        url.parse::<axum::http::Uri>()
            .map_err(|e| anyhow::anyhow!("--purge-url / DYNAPAGE_PURGE_URL: {e}"))?;
        let target = PurgeTarget {
            url: url.clone(),
            format: self.purge_format,
            token: self.purge_token.clone(),
        };
        Ok(Some(Purger::start(target, shutdown.clone())?))
    }
}
