//! What the cache holds for one request and how it is named: the key (a hash of everything
//! the answer depends on besides the data), the body and its encodings, the products it read
//! with their versions, and the validators derived from them (`ETag`, the CDN tags).

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};

use axum::body::Bytes;
use axum::http::HeaderValue;
use sha2::{Digest, Sha256};
use tokio::sync::OnceCell;

use super::super::compression::Coding;
use super::super::transport::MediaType;
use super::tags::Tags;
use crate::domain::Sku;
use crate::index::ProductVersion;
use crate::pagination::PageStats;
use crate::telemetry::metric;

/// A request's key: SHA-256 of its document, operation name, variables and media type. A hash,
/// so a key costs 32 bytes whatever the request's size, and two different requests never share
/// an entry (no poisoning by a crafted collision).
pub(super) type Key = [u8; 32];

/// The key of `request` answered in `media`. Each part is length-prefixed, so no two different
/// requests hash the same bytes.
pub(super) fn key(request: &async_graphql::Request, media: MediaType) -> Key {
    let mut hash = Sha256::new();
    let mut part = |bytes: &[u8]| {
        hash.update((bytes.len() as u64).to_be_bytes());
        hash.update(bytes);
    };
    part(&[media as u8]);
    part(request.query.as_bytes());
    part(
        request
            .operation_name
            .as_deref()
            .unwrap_or_default()
            .as_bytes(),
    );
    // Variables serialize in the order they came: the same variables in another order are only
    // another key (a miss), never a wrong answer.
    part(&serde_json::to_vec(&request.variables).unwrap_or_default());
    hash.finalize().into()
}

/// One cached answer.
#[derive(Debug)]
pub(super) struct Entry {
    /// The body as computed (identity), in an allocation of exactly its length.
    pub body: Bytes,
    pub media: MediaType,
    /// The products the answer read, sorted.
    pub products: Vec<Sku>,
    /// Their versions when the answer was computed; `None` when they were not read before it
    /// ran (its first run): such an entry is run again, never served (see `mod.rs`).
    pub versions: Option<Vec<ProductVersion>>,
    /// The strong validator of the identity body: `None` until the versions are known.
    pub etag: Option<HeaderValue>,
    /// The CDN tags (`--cache-tag-header`), or why there are none.
    pub tags: Tags,
    /// What computing the answer read: what `Dynapage-Cost` says of it, hit or not.
    pub computed: PageStats,
    /// The body in each coding, made on first need.
    pub encoded: Encoded,
}

impl Entry {
    pub(super) fn new(
        body: &[u8],
        media: MediaType,
        products: Vec<Sku>,
        versions: Option<Vec<ProductVersion>>,
        etag: Option<HeaderValue>,
        tags: Tags,
        computed: PageStats,
    ) -> Self {
        Self {
            // A copy, so the allocation is the body's length and nothing more: the serialiser's
            // buffer grows by doubling, and the cache's bound counts what is really held.
            body: Bytes::copy_from_slice(body),
            media,
            products,
            versions,
            etag,
            tags,
            computed,
            encoded: Encoded::default(),
        }
    }

    /// The body in `coding`, encoded on first need and kept: `(bytes, their coding, newly
    /// made)`. Hits that arrive while it is being made wait for that one encoding instead of
    /// making their own. An encoder that fails (it cannot on a `Vec`, but its task can be
    /// cancelled at shutdown) leaves the identity body, said as such.
    pub(super) async fn in_coding(&self, coding: Coding) -> (Bytes, Coding, bool) {
        let Some(cell) = self.encoded.cell(coding) else {
            return (self.body.clone(), Coding::Identity, false);
        };
        let made = AtomicBool::new(false);
        let bytes = cell
            .get_or_init(|| async {
                made.store(true, Ordering::Relaxed);
                self.encoded.runs.fetch_add(1, Ordering::Relaxed);
                metric::RESPONSE_CACHE_ENCODINGS
                    .counter(&[("coding", coding.token())])
                    .increment(1);
                let body = self.body.clone();
                // A large body takes milliseconds to encode: off the request threads.
                let encoded =
                    tokio::task::spawn_blocking(move || coding.encode(&body).map(Bytes::from))
                        .await;
                match encoded {
                    Ok(Ok(bytes)) => Some(bytes),
                    _ => None,
                }
            })
            .await;
        match bytes {
            Some(bytes) => (bytes.clone(), coding, made.load(Ordering::Relaxed)),
            None => (self.body.clone(), Coding::Identity, false),
        }
    }

    /// The strong `ETag` of the body in `coding`: the identity one, suffixed `-gzip`, `-br` or
    /// `-zstd` for an encoding.
    ///
    /// Why one strong `ETag` per coding and not one weak `ETag` for all: a strong validator
    /// names one sequence of bytes (RFC 9110 §8.8.1), and a gzip body is not the identity body.
    /// A weak `ETag` shared by every coding would be allowed (they are the same page), but a
    /// cache that keeps several codings of one URL and revalidates them with one
    /// `If-None-Match` learns from the `304`'s `ETag` which of them it may serve (RFC 9111
    /// §4.3.4): with a shared weak validator it cannot tell them apart and picks the most
    /// recent, maybe a coding this client did not ask for. Suffixes keep each coding's
    /// validator its own and still strong. (The bytes of an encoding are the same for the same
    /// body as long as the encoders' versions and qualities are: they are fixed in this build.)
    pub(super) fn etag_in(&self, coding: Coding) -> Option<HeaderValue> {
        let etag = self.etag.as_ref()?;
        if coding == Coding::Identity {
            return Some(etag.clone());
        }
        let inner = etag.to_str().ok()?.trim_end_matches('"');
        HeaderValue::from_str(&format!("{inner}-{}\"", coding.token())).ok()
    }

    /// The bytes it holds, for the cache's bound: every allocation it owns (the body and its
    /// encodings, the products, versions, validators and tags, the entry itself behind its
    /// `Arc`), each rounded up as the allocator rounds it ([`allocation`]). The map slots that
    /// hold it are the store's to count.
    pub(super) fn size(&self) -> usize {
        let bytes = |b: &Bytes| {
            // A `Bytes` made from a buffer gets a shared header (32 bytes) on its first clone,
            // which every hit makes.
            allocation(b.len()) + allocation(32)
        };
        let header = |h: &HeaderValue| allocation(h.len()) + allocation(32);
        let products = allocation(self.products.capacity() * std::mem::size_of::<Sku>())
            + self
                .products
                .iter()
                .map(|s| allocation(16 + s.as_str().len()))
                .sum::<usize>();
        let versions = self.versions.as_ref().map_or(0, |v| {
            allocation(v.capacity() * std::mem::size_of::<ProductVersion>())
        });
        allocation(16 + std::mem::size_of::<Self>())
            + bytes(&self.body)
            + self.encoded.made().map(bytes).sum::<usize>()
            + products
            + versions
            + self.etag.as_ref().map_or(0, header)
            + self.tags.value().map_or(0, header)
    }
}

/// What an allocation of `n` bytes takes from the allocator: mimalloc (the binary's) serves
/// small sizes from size classes 8 or 16 bytes apart and larger ones from classes at most
/// 12.5 % apart, with no header per block; this rounds to 16 bytes and adds 1/16 above 1 KiB,
/// which the size test holds against a counting allocator.
pub(super) fn allocation(n: usize) -> usize {
    match n {
        0 => 0,
        1..=1024 => n.next_multiple_of(16),
        _ => (n + n / 16).next_multiple_of(16),
    }
}

/// An entry's body in each encoding, made on first need ([`Entry::in_coding`]).
#[derive(Debug, Default)]
pub(super) struct Encoded {
    gzip: OnceCell<Option<Bytes>>,
    brotli: OnceCell<Option<Bytes>>,
    zstd: OnceCell<Option<Bytes>>,
    /// How many times an encoder ran for this entry (at most once per coding).
    runs: AtomicU32,
}

impl Encoded {
    fn cell(&self, coding: Coding) -> Option<&OnceCell<Option<Bytes>>> {
        match coding {
            Coding::Identity => None,
            Coding::Gzip => Some(&self.gzip),
            Coding::Brotli => Some(&self.brotli),
            Coding::Zstd => Some(&self.zstd),
        }
    }

    /// The encodings made so far.
    fn made(&self) -> impl Iterator<Item = &Bytes> {
        [&self.gzip, &self.brotli, &self.zstd]
            .into_iter()
            .filter_map(|cell| cell.get().and_then(Option::as_ref))
    }

    #[cfg(test)]
    pub(super) fn set_for_tests(&self, coding: Coding, bytes: Vec<u8>) {
        if let Some(cell) = self.cell(coding) {
            let _ = cell.set(Some(Bytes::from(bytes)));
        }
    }

    #[cfg(test)]
    pub(super) fn clone_all_for_tests(&self) -> Vec<Bytes> {
        self.made().cloned().collect()
    }

    /// How many times an encoder ran for this entry.
    #[cfg(test)]
    pub(super) fn runs(&self) -> u32 {
        self.runs.load(Ordering::Relaxed)
    }
}

/// The strong `ETag` of the answer under `key` computed at `versions`: the same bytes for the
/// same key and versions (epochs included), so a client's copy is current exactly when the
/// versions are, and a version number that starts over in a new epoch never names an old body.
pub(super) fn etag(key: &Key, versions: &[ProductVersion]) -> HeaderValue {
    let mut hash = Sha256::new();
    hash.update(key);
    for version in versions {
        hash.update(version.epoch.to_be_bytes());
        hash.update(version.number.to_be_bytes());
    }
    let digest = hash.finalize();
    let hex: String = digest[..16].iter().map(|b| format!("{b:02x}")).collect();
    HeaderValue::from_str(&format!("\"{hex}\""))
        .unwrap_or_else(|_| HeaderValue::from_static("\"\""))
}

/// Whether `If-None-Match` (`header`) names `etag` (RFC 9110 §13.1.2: the weak comparison, so
/// `W/"x"` matches `"x"`).
///
/// `*` matches nothing here. RFC 9110 has `*` match any current representation, and every
/// GraphQL query has one (the server can always compute it), so read literally every `GET`
/// with `If-None-Match: *` would be a `304`, whether or not anyone asked it before; answering
/// `304` only when an entry is kept, as this cache once did, told any client whether someone
/// else had asked the same query lately. `*` is meant for unsafe methods ("do not overwrite");
/// on a query it is treated as if it were not sent: the answer is the one an unconditional
/// request gets, kept or computed.
pub(super) fn none_match(header: &HeaderValue, etag: &HeaderValue) -> bool {
    let Ok(header) = header.to_str() else {
        return false;
    };
    let etag = etag.to_str().unwrap_or_default();
    let etag = etag.strip_prefix("W/").unwrap_or(etag);
    header
        .split(',')
        .map(str::trim)
        .any(|candidate| candidate.strip_prefix("W/").unwrap_or(candidate) == etag)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(query: &str, variables: serde_json::Value) -> async_graphql::Request {
        async_graphql::Request::new(query).variables(async_graphql::Variables::from_json(variables))
    }

    fn version(epoch: u64, number: u64) -> ProductVersion {
        ProductVersion { epoch, number }
    }

    #[test]
    fn the_key_changes_with_every_part_of_the_request() {
        let base = key(&request("{a}", serde_json::json!({})), MediaType::Json);
        assert_eq!(
            base,
            key(&request("{a}", serde_json::json!({})), MediaType::Json)
        );
        assert_ne!(
            base,
            key(&request("{b}", serde_json::json!({})), MediaType::Json)
        );
        assert_ne!(
            base,
            key(
                &request("{a}", serde_json::json!({"x": 1})),
                MediaType::Json
            )
        );
        assert_ne!(
            base,
            key(
                &request("{a}", serde_json::json!({})),
                MediaType::GraphQlResponse
            )
        );
        let named = request("{a}", serde_json::json!({})).operation_name("A");
        assert_ne!(base, key(&named, MediaType::Json));
    }

    #[test]
    fn the_etag_follows_the_versions_and_their_epochs() {
        let tag = etag(&[1; 32], &[version(7, 3), version(7, 4)]);
        assert_eq!(tag, etag(&[1; 32], &[version(7, 3), version(7, 4)]));
        assert_ne!(tag, etag(&[1; 32], &[version(7, 3), version(7, 5)]));
        assert_ne!(
            tag,
            etag(&[1; 32], &[version(8, 3), version(7, 4)]),
            "the same numbers in another epoch"
        );
    }

    #[test]
    fn if_none_match_compares_weakly_and_star_matches_nothing() {
        let tag = etag(&[1; 32], &[version(1, 3)]);
        let weak = HeaderValue::from_str(&format!("\"zz\", W/{}", tag.to_str().expect("ASCII")))
            .expect("a header");
        assert!(none_match(&weak, &tag));
        assert!(!none_match(&HeaderValue::from_static("*"), &tag));
        assert!(!none_match(&HeaderValue::from_static("\"zz\", *"), &tag));
        assert!(!none_match(&HeaderValue::from_static("\"zz\""), &tag));
    }

    #[test]
    fn each_coding_has_its_own_strong_etag() {
        let mut entry = Entry::new(
            b"{}",
            MediaType::Json,
            Vec::new(),
            None,
            None,
            Tags::None,
            PageStats::default(),
        );
        assert_eq!(entry.etag_in(Coding::Gzip), None, "none before verified");
        entry.etag = Some(HeaderValue::from_static("\"abc\""));
        let tags: Vec<HeaderValue> = [Coding::Identity, Coding::Gzip, Coding::Brotli, Coding::Zstd]
            .into_iter()
            .filter_map(|c| entry.etag_in(c))
            .collect();
        assert_eq!(
            tags,
            ["\"abc\"", "\"abc-gzip\"", "\"abc-br\"", "\"abc-zstd\""]
        );
        assert!(!none_match(&tags[1], &tags[0]), "gzip's is not identity's");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn concurrent_hits_run_each_encoder_once() {
        let body = br#"{"node":{"body":"a comment, repeated"}}"#.repeat(500);
        let entry = std::sync::Arc::new(Entry::new(
            &body,
            MediaType::Json,
            Vec::new(),
            None,
            None,
            Tags::None,
            PageStats::default(),
        ));
        let before = entry.size();
        let hits = (0..16).map(|_| {
            let entry = entry.clone();
            tokio::spawn(async move { entry.in_coding(Coding::Gzip).await })
        });
        let answers = futures::future::try_join_all(hits).await.expect("no panic");
        assert_eq!(answers.iter().filter(|(_, _, made)| *made).count(), 1);
        assert!(
            answers
                .iter()
                .all(|(bytes, coding, _)| { *bytes == answers[0].0 && *coding == Coding::Gzip })
        );
        assert!(answers[0].0.len() < body.len() / 4);
        assert_eq!(entry.encoded.runs(), 1);
        let (_, _, made) = entry.in_coding(Coding::Brotli).await;
        assert!(made);
        assert_eq!(entry.encoded.runs(), 2);
        let (plain, coding, made) = entry.in_coding(Coding::Identity).await;
        assert!(!made && plain == body[..] && coding == Coding::Identity);
        assert!(entry.size() > before, "encodings count in its size");
    }
}
