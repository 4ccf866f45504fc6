//! The page index's Redis key names and member encoding (`docs/operations/table-layout.md`): the
//! only place that spells them.
//!
//! # The layout
//!
//! | key | type | holds |
//! |---|---|---|
//! | `<prefix>idx:{<sku>}:r<1..5>` | sorted set | one per rating, the comments nobody marked
//! helpful: member = the comment id, compacted ([`member`]), score = `createdAt` in epoch
//! milliseconds |
//! | `<prefix>idx:{<sku>}:w<1..5>` | sorted set | one per rating, the comments with helpful votes,
//! by time: member and score as in `r` |
//! | `<prefix>idx:{<sku>}:h<1..5>` | sorted set | the same comments by helpful votes: member =
//! `createdAt` in 6 big-endian bytes then the member ([`by_count`]), score = `count × 2^31 +
//! createdAt / 1024` (the count, then the second: `by_count.lua`) |
//! | `<prefix>idx:{<sku>}:v` | hash | member -> version, for the comments at version 2 or more (the
//! others are at version 1) |
//! | `<prefix>idx:{<sku>}:n` | string | the product's version: replaced by every applied change
//! (`apply.lua`), read by the response cache |
//! | `<prefix>idx:{<sku>}:e` | string | the epoch of that version: a random number made (`SET NX`)
//! by the first reader that finds none, so a version number that comes back after a flush, a
//! restored snapshot or a rebuilt index comes back in another epoch
//! (`crate::index::ProductVersion`) |
//! | `<prefix>idx:{<sku>}:d:<id>` | string | a deleted comment's tombstone: the deletion's version;
//! expires after the tombstone lifetime |
//!
//! The other namespaces under the prefix (the change log, the sync checkpoints, the rate
//! limits: `crate::redis`'s `KeyPrefix`) belong to their owners, who spell their keys
//! themselves; nothing here reads or scans them. The change log names a comment by its
//! [`member`], so that its entries and the index agree on what a member is.
//!
//! **Only the rating sets.** A comment is in exactly one set by time: `r<k>` if nobody marked
//! it helpful, `w<k>` if someone did (and then also in `h<k>`). The product's whole list by
//! time is the union of the ten: its count is the sum of their `ZCARD`s, and the member at
//! rank `k` is found inside Redis by the same O(log n) union search the `ratings` filter uses
//! (`read.lua`, which leaves empty sets out). The list by helpful votes is the union of the
//! `r` sets (count 0, by time) followed by the union of the `h` sets (`helpful.lua`). So a
//! comment nobody voted for costs one member, as before votes moved lists; one with votes
//! costs two. An earlier layout also kept a sixth set with every comment of the product,
//! which doubled the memory for an unfiltered rank (BENCHMARKS.md, "Redis index").
//!
//! **Compact members.** A member is the comment id in 11 bytes, not its 26-character string:
//! a tag byte `1`, then the ULID's 10 random bytes, for every id whose time part is its
//! `createdAt` (every id this service creates). The score already holds those milliseconds, so
//! repeating them would only cost memory. An id whose time part differs from its `createdAt`
//! (written by another tool) is spelled in full: tag `0` (time part earlier) or `2` (later), then
//! its 16 bytes. Within one score, bytewise order of members is then exactly id order (tags
//! order the three groups as their time parts do, and within a group the bytes compare like the
//! ULID), so Redis's order of equal scores is still [`SortKey`](crate::domain::SortKey) order:
//! the order invariant holds. An 11-byte member fits Redis's 16-byte allocation class; the
//! 26-byte string took a 32-byte one (BENCHMARKS.md, "Redis index").
//!
//! **Versions where they carry information** (`crate::index`, "Versions"). A comment never
//! edited is at version 1 and needs no record: its membership says it all. An edited one has a
//! field in the product's version hash, and a deleted one a tombstone key, with a TTL so that
//! Redis itself drops it when no older change can arrive any more.
//!
//! **Hash tags.** Every key of one product carries the SKU as a hash tag (`{sku}`), so its sets,
//! its versions, its tombstones and everything one script reads hash to the same Redis Cluster
//! slot. SKUs
//! cannot contain `{`, `}` or glob characters (`Sku::parse`), so a tag is never ambiguous.
//!
//! **Upgrading from the earlier layout** (`<prefix>comments:{<sku>}` and
//! `<prefix>comments:{<sku>}:r<k>`, string members): the names differ, so the two never mix; a
//! `dynapage reindex` fills the new keys and the old ones can then be deleted
//! (docs/operations/table-layout.md, "Upgrading").

use std::cmp::Ordering;

use crate::domain::{CommentId, Rating, Sku, SortKey};
use crate::redis::KeyPrefix;

/// Builds and parses the key names under one prefix.
#[derive(Clone, Debug)]
pub(super) struct Keys {
    prefix: KeyPrefix,
}

impl Keys {
    pub(super) fn new(prefix: &KeyPrefix) -> Self {
        Self {
            prefix: prefix.clone(),
        }
    }

    /// `<prefix>idx:{<sku>}`: the stem every key of the product starts with.
    fn product(&self, sku: &Sku) -> String {
        self.prefix.key(format_args!("idx:{{{sku}}}"))
    }

    /// `<prefix>idx:{<sku>}:r<rating>`: the product's comments with one rating.
    pub(super) fn rating(&self, sku: &Sku, rating: Rating) -> String {
        format!("{}:r{}", self.product(sku), rating.get())
    }

    /// The five rating sets of `sku`, rating 1 first.
    pub(super) fn ratings(&self, sku: &Sku) -> [String; 5] {
        Rating::ALL.map(|rating| self.rating(sku, rating))
    }

    /// `<prefix>idx:{<sku>}:w<rating>`: the product's comments with one rating and helpful
    /// votes, by time.
    pub(super) fn voted(&self, sku: &Sku, rating: Rating) -> String {
        format!("{}:w{}", self.product(sku), rating.get())
    }

    /// `<prefix>idx:{<sku>}:h<rating>`: the same comments by helpful count.
    pub(super) fn by_count(&self, sku: &Sku, rating: Rating) -> String {
        format!("{}:h{}", self.product(sku), rating.get())
    }

    /// The fifteen sets `apply.lua` writes, in its KEYS order: by time without votes, by time
    /// with votes, by count, each rating 1 first.
    pub(super) fn all_sets(&self, sku: &Sku) -> Vec<String> {
        let mut sets = self.ratings(sku).to_vec();
        sets.extend(Rating::ALL.map(|rating| self.voted(sku, rating)));
        sets.extend(Rating::ALL.map(|rating| self.by_count(sku, rating)));
        sets
    }

    /// `<prefix>idx:{<sku>}:v`: the versions of the product's edited comments.
    pub(super) fn versions(&self, sku: &Sku) -> String {
        format!("{}:v", self.product(sku))
    }

    /// `<prefix>idx:{<sku>}:n`: the product's version.
    pub(super) fn product_version(&self, sku: &Sku) -> String {
        format!("{}:n", self.product(sku))
    }

    /// `<prefix>idx:{<sku>}:e`: the epoch of the product's version (`ProductVersion`).
    pub(super) fn version_epoch(&self, sku: &Sku) -> String {
        format!("{}:e", self.product(sku))
    }

    /// `<prefix>idx:{<sku>}:d:<id>`: the tombstone of a deleted comment.
    pub(super) fn tombstone(&self, sku: &Sku, id: CommentId) -> String {
        format!("{}:d:{}", self.product(sku), id)
    }

    /// The `SCAN MATCH` pattern that finds the sets by time (and any foreign key that happens
    /// to match, which [`Keys::sku_of_rating_key`] then sets aside).
    pub(super) fn rating_pattern(&self) -> String {
        self.prefix.pattern("idx:{*}:[rw][1-5]")
    }

    /// The SKU (or a moderation queue's name, `crate::domain::QueueList`) of a set by time's
    /// key, `None` for any other key.
    pub(super) fn sku_of_rating_key(&self, key: &str) -> Option<Sku> {
        let tagged = self.prefix.strip(key)?.strip_prefix("idx:{")?;
        let (sku, set) = tagged.rsplit_once("}:")?;
        if !matches!(
            set,
            "r1" | "r2" | "r3" | "r4" | "r5" | "w1" | "w2" | "w3" | "w4" | "w5"
        ) {
            return None;
        }
        crate::domain::list_name(sku)
    }
}

/// The sorted-set member of the comment at `key` (see "Compact members" above).
pub(crate) fn member(key: &SortKey) -> Vec<u8> {
    let bytes = key.id().to_bytes();
    let mut member = Vec::with_capacity(17);
    match id_millis(&bytes).cmp(&key.millis()) {
        Ordering::Equal => {
            member.push(1);
            member.extend_from_slice(&bytes[6..]);
        }
        earlier_or_later => {
            member.push(if earlier_or_later == Ordering::Less {
                0
            } else {
                2
            });
            member.extend_from_slice(&bytes);
        }
    }
    member
}

/// The member of the comment at `key` in a set by count: its `createdAt` in 6 big-endian
/// bytes, then its [`member`], so that equal counts order by time (`apply.lua` builds it).
#[cfg(test)]
fn by_count(key: &SortKey) -> Vec<u8> {
    let mut out = key.millis().to_be_bytes()[2..].to_vec();
    out.extend(member(key));
    out
}

/// The sort key a member of a set by count stands for.
pub(crate) fn sort_key_of_by_count(member: &[u8]) -> Option<SortKey> {
    let (millis, rest) = member.split_at_checked(6)?;
    let millis = millis
        .iter()
        .fold(0, |millis, byte| millis << 8 | u64::from(*byte));
    sort_key_of(rest, millis)
}

/// The sort key a member with score `millis` stands for; `None` for a malformed member (or
/// a full-length one whose tag contradicts its time part).
pub(crate) fn sort_key_of(member: &[u8], millis: u64) -> Option<SortKey> {
    let bytes: [u8; 16] = match member {
        [1, random @ ..] if random.len() == 10 => {
            let mut bytes = [0; 16];
            bytes[..6].copy_from_slice(&millis.to_be_bytes()[2..]);
            bytes[6..].copy_from_slice(random);
            bytes
        }
        [tag @ (0 | 2), full @ ..] => {
            let bytes = <[u8; 16]>::try_from(full).ok()?;
            let expected = if *tag == 0 {
                Ordering::Less
            } else {
                Ordering::Greater
            };
            (id_millis(&bytes).cmp(&millis) == expected).then_some(bytes)?
        }
        _ => return None,
    };
    SortKey::new(millis, CommentId::from_bytes(bytes)).ok()
}

/// The time part of a ULID's bytes: its first 48 bits, big-endian.
fn id_millis(bytes: &[u8; 16]) -> u64 {
    bytes[..6]
        .iter()
        .fold(0, |millis, byte| millis << 8 | u64::from(*byte))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sku(s: &str) -> Sku {
        Sku::parse(s).expect("valid sku")
    }

    #[test]
    fn keys_share_the_product_hash_tag() {
        let keys = Keys::new(&KeyPrefix::new("p:"));
        let r3 = Rating::new(3).expect("valid rating");
        assert_eq!(keys.rating(&sku("A-1"), r3), "p:idx:{A-1}:r3");
        assert_eq!(keys.ratings(&sku("A-1"))[4], "p:idx:{A-1}:r5");
        assert_eq!(keys.versions(&sku("A-1")), "p:idx:{A-1}:v");
        assert_eq!(keys.version_epoch(&sku("A-1")), "p:idx:{A-1}:e");
        let id = CommentId::from_parts(0, 0);
        assert_eq!(
            keys.tombstone(&sku("A-1"), id),
            format!("p:idx:{{A-1}}:d:{id}")
        );
    }

    #[test]
    fn only_live_rating_keys_name_a_product() {
        let keys = Keys::new(&KeyPrefix::new("p:"));
        assert_eq!(keys.sku_of_rating_key("p:idx:{A-1}:r3"), Some(sku("A-1")));
        assert_eq!(keys.sku_of_rating_key("p:idx:{A-1}:r6"), None);
        assert_eq!(keys.sku_of_rating_key("p:idx:{A-1}:w2"), Some(sku("A-1")));
        assert_eq!(keys.sku_of_rating_key("p:idx:{A-1}:h2"), None);
        assert_eq!(keys.sku_of_rating_key("p:idx:{A-1}:rebuild:x:r3"), None);
        assert_eq!(keys.sku_of_rating_key("q:idx:{A-1}:r3"), None);
        assert_eq!(keys.sku_of_rating_key("p:idx:{}:r3"), None);
        assert_eq!(keys.sku_of_rating_key("p:comments:{A-1}:r3"), None);
    }

    #[test]
    fn the_scan_pattern_escapes_glob_characters_of_the_prefix() {
        assert_eq!(
            Keys::new(&KeyPrefix::new("t[1]*:")).rating_pattern(),
            "t\\[1\\]\\*:idx:{*}:[rw][1-5]"
        );
    }

    #[test]
    fn members_sort_bytewise_like_the_ids_they_stand_for_within_a_score() {
        let millis = 1_767_225_600_000;
        let ids = [
            CommentId::from_parts(millis - 1, u128::MAX),
            CommentId::from_parts(millis, 0),
            CommentId::from_parts(millis, 1),
            CommentId::from_parts(millis, u128::MAX >> 48),
            CommentId::from_parts(millis + 1, 7),
        ];
        let keys = ids.map(|id| SortKey::new(millis, id).expect("valid key"));
        for pair in keys.windows(2) {
            assert!(pair[0] < pair[1]);
            assert!(member(&pair[0]) < member(&pair[1]), "{pair:?}");
        }
        for key in keys {
            assert_eq!(sort_key_of(&member(&key), millis), Some(key));
            assert_eq!(sort_key_of_by_count(&by_count(&key)), Some(key));
        }
        assert_eq!(member(&keys[1]).len(), 11, "the usual case is compact");
        assert_eq!(member(&keys[0]).len(), 17);
        assert_eq!(sort_key_of(b"short", millis), None);
        // A full-length member whose tag says "earlier" for an id that is not earlier.
        let mut lying = member(&keys[4]);
        lying[0] = 0;
        assert_eq!(sort_key_of(&lying, millis), None);
    }
}
