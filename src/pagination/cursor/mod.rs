//! Opaque, sealed, deterministic cursors (`docs/api/connections.md`).
//!
//! A cursor is `base64url(version ‖ AES-256-GCM-SIV(position; aad = scope))`, 55 characters (56
//! in an order by rating, whose positions carry their group as one more byte; 60 in the order by
//! helpful votes, whose group is the count in four bytes):
//!
//! * **Opaque and tamper-proof**: the position is encrypted and authenticated, so clients cannot
//!   read, forge or edit it; any change fails the tag check.
//! * **Bound to the query**: the scope (product, rating filter and order) is the associated data,
//!   so a cursor from another product, filter or order fails the tag check too, without spending
//!   bytes on it.
//! * **Deterministic**: AES-GCM-SIV derives its IV from the key, plaintext and associated data,
//!   so a fixed nonce is safe (nonce-misuse resistance) and the same position in the same query
//!   always yields the same string; `endCursor` equals the last edge's cursor and caches can
//!   compare cursors. What that reveals, equality of two cursors, is what clients already see.
//! * **Rotatable**: the first key seals; every configured key is tried when opening.
//!
//! A numbered page's cursor (`pageCursors`) holds no comment but the page's start: its offset
//! counted from one end of the list ([`CursorAt::Offset`]: the end as one byte, the offset as
//! eight, big-endian), 35 characters. Its plaintext's length (9 bytes, against 24 to 28 for a
//! position) tells the two kinds apart once the tag has been checked.

use aes_gcm_siv::aead::{Aead, Payload};
use aes_gcm_siv::{Aes256GcmSiv, Key, KeyInit, Nonce};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use sha2::{Digest, Sha256};

use crate::domain::{CommentOrder, Listing, Numbering, Position, RatingSet, Sku};

mod plain;
mod siv;

#[cfg(test)]
mod hostile;

const VERSION: u8 = 1;
/// What the version byte and the tag add to a plaintext.
const SEALING_LEN: usize = 1 + 16;

/// The longest string a cursor can be; anything longer is refused before decoding.
pub const MAX_CURSOR_CHARS: usize = 64;
/// The most bytes a cursor that can be opened holds ([`MAX_CURSOR_CHARS`] of base64url): what
/// fits a sealing buffer on the stack.
const MAX_SEALED_BYTES: usize = MAX_CURSOR_CHARS * 3 / 4;
/// What a comment cursor's associated data starts with.
const COMMENT_AAD: &[u8] = b"dynapage/cursor";
/// Room on the stack for associated data: a comment cursor's for any product's SKU.
const STACK_AAD_BYTES: usize = COMMENT_AAD.len() + 2 + Sku::MAX_LEN;
/// Shortest secret accepted; shorter ones are guessable.
pub const MIN_SECRET_CHARS: usize = 16;
/// The key used when no secret is configured: fine on a laptop, never in production, because
/// anyone can read this source and forge cursors (they still cannot read other products).
const DEVELOPMENT_SECRET: &str = "dynapage-development-cursor-secret";

/// What a cursor is bound to: the product, the rating filter and the order of the connection.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct CursorScope {
    /// The product whose comments the connection lists.
    pub sku: Sku,
    /// The star ratings the connection keeps.
    pub ratings: RatingSet,
    /// The order the connection lists its comments in.
    pub order: CommentOrder,
}

impl CursorScope {
    /// The list the connection pages through.
    pub fn listing(&self) -> Listing {
        Listing {
            ratings: self.ratings,
            grouping: self.order.grouping(),
        }
    }

    /// Calls `f` with the connection's associated data, kept on the stack unless the list's
    /// name is longer than a SKU (an author's list).
    fn with_associated_data<R>(&self, f: impl FnOnce(&[u8]) -> R) -> R {
        let sku = self.sku.as_str().as_bytes();
        // Newest first adds nothing: cursors sealed before orders existed stay valid.
        let tag = self.order.cursor_tag();
        let len = COMMENT_AAD.len() + 1 + usize::from(tag.is_some()) + sku.len();
        let (mut stack, mut heap) = ([0; STACK_AAD_BYTES], Vec::new());
        let aad = scratch(&mut stack, &mut heap, len);
        let (prefix, rest) = aad.split_at_mut(COMMENT_AAD.len());
        prefix.copy_from_slice(COMMENT_AAD);
        rest[0] = self.ratings.bits();
        let rest = match tag {
            Some(tag) => {
                rest[1] = tag;
                &mut rest[2..]
            }
            None => &mut rest[1..],
        };
        rest.copy_from_slice(sku);
        f(aad)
    }
}

/// Where a cursor says a page starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CursorAt {
    /// At a comment's position: an edge's cursor (`pageInfo`'s, `edges { cursor }`), exclusive.
    Position(Position),
    /// After the first `offset` comments counted from `numbering`'s end of the list: where a
    /// numbered page starts (`pageCursors`). Followed like `offset:`, through the index.
    Offset {
        /// The end of the list the offset counts from.
        numbering: Numbering,
        /// How many comments, counted from that end, come before the page.
        offset: u64,
    },
}

/// The cursor could not be opened; deliberately without detail, so probing learns nothing.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("the cursor is not valid for this connection")]
pub struct BadCursor;

/// A configured secret is unusable.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("cursor secrets must be at least {MIN_SECRET_CHARS} characters long")]
pub struct WeakSecret;

/// Seals and opens cursors with the configured keys.
#[derive(Clone)]
pub struct CursorCodec {
    /// Every key, the sealing one first, to open with.
    ciphers: Vec<Aes256GcmSiv>,
    /// The first key's sealer.
    sealer: siv::Sealer,
}

impl std::fmt::Debug for CursorCodec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CursorCodec")
            .field("keys", &self.ciphers.len())
            .finish()
    }
}

impl CursorCodec {
    /// A codec from secrets, the first of which seals. Secrets are stretched to keys with
    /// SHA-256; they should be random (e.g. `openssl rand -base64 32`).
    pub fn new<S: AsRef<str>>(secrets: &[S]) -> Result<Self, WeakSecret> {
        if secrets.is_empty()
            || secrets
                .iter()
                .any(|s| s.as_ref().chars().count() < MIN_SECRET_CHARS)
        {
            return Err(WeakSecret);
        }
        let keys: Vec<[u8; 32]> = secrets
            .iter()
            .map(|secret| {
                Sha256::new()
                    .chain_update(b"dynapage cursor key v1\0")
                    .chain_update(secret.as_ref().as_bytes())
                    .finalize()
                    .into()
            })
            .collect();
        Ok(Self {
            ciphers: keys
                .iter()
                .map(|key| Aes256GcmSiv::new(&Key::<Aes256GcmSiv>::from(*key)))
                .collect(),
            sealer: siv::Sealer::new(&keys[0]),
        })
    }

    /// The codec with the public development key. Callers must warn loudly.
    pub fn development() -> Self {
        Self::new(&[DEVELOPMENT_SECRET])
            .unwrap_or_else(|_| unreachable!("the development secret is long enough"))
    }

    /// The cursor for `position` within `scope`.
    pub fn seal(&self, scope: &CursorScope, position: &Position) -> String {
        self.seal_plain(scope, &plain::of_position(scope.order.grouping(), position))
    }

    /// The cursor of the numbered page that starts after the first `offset` comments counted
    /// from `numbering`'s end, within `scope`.
    pub fn seal_offset(&self, scope: &CursorScope, numbering: Numbering, offset: u64) -> String {
        self.seal_plain(scope, &plain::of_offset(numbering, offset))
    }

    fn seal_plain(&self, scope: &CursorScope, plain: &[u8]) -> String {
        scope.with_associated_data(|aad| self.seal_bytes(aad, plain))
    }

    /// `plain` sealed for `aad` (what the cursor is a cursor of, never in the cursor): only
    /// [`Self::open_bytes`] with the same `aad` and one of our keys gets it back. For cursors of
    /// lists that are not comment connections (the moderation log's); their `aad` must not
    /// start with a comment cursor's (`dynapage/cursor`).
    pub fn seal_bytes(&self, aad: &[u8], plain: &[u8]) -> String {
        let (mut stack, mut heap) = ([0; MAX_SEALED_BYTES], Vec::new());
        let bytes = scratch(&mut stack, &mut heap, SEALING_LEN + plain.len());
        let (version, sealed) = bytes.split_first_mut().expect("a version byte");
        *version = VERSION;
        self.sealer.seal(aad, plain, sealed);
        crate::base64url::encode(bytes)
    }

    /// What [`Self::seal_bytes`] sealed for `aad`, if `cursor` is one of ours for it.
    pub fn open_bytes(&self, aad: &[u8], cursor: &str) -> Result<Vec<u8>, BadCursor> {
        if cursor.len() > MAX_CURSOR_CHARS {
            return Err(BadCursor);
        }
        let bytes = URL_SAFE_NO_PAD.decode(cursor).map_err(|_| BadCursor)?;
        if bytes.len() < SEALING_LEN || bytes[0] != VERSION {
            return Err(BadCursor);
        }
        self.ciphers
            .iter()
            .find_map(|cipher| {
                let payload = Payload {
                    msg: &bytes[1..],
                    aad,
                };
                cipher.decrypt(&Nonce::default(), payload).ok()
            })
            .ok_or(BadCursor)
    }

    /// Where a cursor says its page starts, if it was sealed by one of our keys for this
    /// `scope`.
    pub fn open(&self, scope: &CursorScope, cursor: &str) -> Result<CursorAt, BadCursor> {
        if cursor.len() > MAX_CURSOR_CHARS {
            return Err(BadCursor);
        }
        let grouping = scope.order.grouping();
        let plain_len = URL_SAFE_NO_PAD
            .decode(cursor)
            .map_err(|_| BadCursor)?
            .len()
            .checked_sub(SEALING_LEN)
            .ok_or(BadCursor)?;
        if !plain::may_be(grouping, plain_len) {
            return Err(BadCursor);
        }
        let plain = scope.with_associated_data(|aad| self.open_bytes(aad, cursor))?;
        plain::read(grouping, &plain)
    }
}

/// `len` bytes of `stack` when they fit, else of `heap` grown to them: a page seals 20 or more
/// cursors, and two allocations each were measurable (BENCHMARKS.md, "A cursor's scratch on the
/// stack").
fn scratch<'a, const N: usize>(
    stack: &'a mut [u8; N],
    heap: &'a mut Vec<u8>,
    len: usize,
) -> &'a mut [u8] {
    match stack.get_mut(..len) {
        Some(bytes) => bytes,
        None => {
            heap.resize(len, 0);
            heap
        }
    }
}

#[cfg(test)]
mod tests;
