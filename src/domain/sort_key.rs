//! The total order comments are paged in.
//!
//! **The order invariant** (`docs/architecture.md`). Newest first is descending `(createdAtMillis,
//! id)`. DynamoDB orders the `sortKey` string bytewise; Redis orders equal scores by member
//! bytewise. With a fixed-width (13 digit) millisecond prefix and the same id bytes in both, a
//! descending DynamoDB query and `ZREVRANGE` give the same sequence, ties on the timestamp
//! included. The derived `Ord` below (millis, then id) is that same order, and the tests prove the
//! string form sorts identically.

use std::fmt;
use std::str::FromStr;

use super::ids::CommentId;
use super::invalid::InvalidInput;

/// A comment's position: `createdAt` in epoch milliseconds, then its id as the tie-breaker.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SortKey {
    millis: u64,
    id: CommentId,
}

/// The direction a store or index is read in.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Hash)]
pub enum Order {
    /// Descending sort key: the connection's own order.
    NewestFirst,
    /// Ascending sort key: used for `last`/`before` and for boundary checks.
    OldestFirst,
}

impl Order {
    /// The other direction.
    pub fn reverse(self) -> Self {
        match self {
            Order::NewestFirst => Order::OldestFirst,
            Order::OldestFirst => Order::NewestFirst,
        }
    }

    /// The key one step from `key` in this order: as the exclusive start of a read in the
    /// other order, it starts that read at `key` itself. `None` at the end of the key space.
    pub fn step(self, key: &SortKey) -> Option<SortKey> {
        match self {
            Order::NewestFirst => key.predecessor(),
            Order::OldestFirst => key.successor(),
        }
    }

    /// Whether `a` comes strictly before `b` when reading in this order (sort keys, or
    /// positions in a list: `domain::Position`).
    pub fn precedes<K: Ord>(self, a: &K, b: &K) -> bool {
        match self {
            Order::NewestFirst => a > b,
            Order::OldestFirst => a < b,
        }
    }
}

impl SortKey {
    /// Largest millisecond value that fits the 13-digit prefix (year 2286).
    pub const MAX_MILLIS: u64 = 9_999_999_999_999;

    /// The key of comment `id` created at `millis` (epoch milliseconds); refused past
    /// [`SortKey::MAX_MILLIS`].
    pub fn new(millis: u64, id: CommentId) -> Result<Self, InvalidInput> {
        if millis > Self::MAX_MILLIS {
            return Err(InvalidInput::new("createdAt", "is beyond the year 2286"));
        }
        Ok(Self { millis, id })
    }

    /// The smallest key above this one: as the exclusive start of a newest-first read, it
    /// starts the read at this key itself. `None` for the largest key there is.
    pub fn successor(&self) -> Option<SortKey> {
        let id = u128::from_be_bytes(self.id.to_bytes());
        match id.checked_add(1) {
            Some(next) => Some(Self {
                millis: self.millis,
                id: CommentId::from_bytes(next.to_be_bytes()),
            }),
            None if self.millis < Self::MAX_MILLIS => Some(Self {
                millis: self.millis + 1,
                id: CommentId::from_bytes([0; 16]),
            }),
            None => None,
        }
    }

    /// The largest key below this one: as the exclusive start of an oldest-first read, it
    /// starts the read at this key itself. `None` for the smallest key there is.
    pub fn predecessor(&self) -> Option<SortKey> {
        let id = u128::from_be_bytes(self.id.to_bytes());
        match id.checked_sub(1) {
            Some(previous) => Some(Self {
                millis: self.millis,
                id: CommentId::from_bytes(previous.to_be_bytes()),
            }),
            None if self.millis > 0 => Some(Self {
                millis: self.millis - 1,
                id: CommentId::from_bytes([0xff; 16]),
            }),
            None => None,
        }
    }

    /// The comment's `createdAt`, in epoch milliseconds.
    pub fn millis(&self) -> u64 {
        self.millis
    }

    /// The comment's id, the tie-breaker.
    pub fn id(&self) -> CommentId {
        self.id
    }

    /// The compact binary form used inside cursors: 8 bytes of millis, 16 of id, big-endian,
    /// so that byte order equals key order.
    pub fn to_bytes(&self) -> [u8; 24] {
        let mut out = [0u8; 24];
        out[..8].copy_from_slice(&self.millis.to_be_bytes());
        out[8..].copy_from_slice(&self.id.to_bytes());
        out
    }

    /// The key [`SortKey::to_bytes`] wrote; refused when its milliseconds pass
    /// [`SortKey::MAX_MILLIS`].
    pub fn from_bytes(bytes: &[u8; 24]) -> Result<Self, InvalidInput> {
        let mut millis = [0u8; 8];
        millis.copy_from_slice(&bytes[..8]);
        let mut id = [0u8; 16];
        id.copy_from_slice(&bytes[8..]);
        Self::new(u64::from_be_bytes(millis), CommentId::from_bytes(id))
    }
}

/// The DynamoDB `sortKey` attribute: `0001700000000000#01HF...`.
impl fmt::Display for SortKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:013}#{}", self.millis, self.id)
    }
}

impl fmt::Debug for SortKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SortKey({self})")
    }
}

impl FromStr for SortKey {
    type Err = InvalidInput;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || InvalidInput::new("sortKey", "is not `<13 digits>#<ULID>`");
        let (millis, id) = s.split_once('#').ok_or_else(bad)?;
        if millis.len() != 13 || !millis.bytes().all(|b| b.is_ascii_digit()) {
            return Err(bad());
        }
        let millis = millis.parse().map_err(|_| bad())?;
        Self::new(millis, id.parse().map_err(|_| bad())?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn key(millis: u64, random: u128) -> SortKey {
        SortKey::new(millis, CommentId::from_parts(millis % 1000, random)).expect("valid")
    }

    #[test]
    fn the_successor_is_the_next_key_up_and_nothing_lies_between() {
        let k = key(5, 7);
        let next = k.successor().expect("a successor");
        assert!(next > k);
        assert_eq!(next, key(5, 8), "the next id at the same millisecond");
        let last_id = SortKey::new(5, CommentId::from_bytes([0xff; 16])).expect("valid");
        assert_eq!(
            last_id.successor(),
            Some(SortKey::new(6, CommentId::from_bytes([0; 16])).expect("valid"))
        );
        let max =
            SortKey::new(SortKey::MAX_MILLIS, CommentId::from_bytes([0xff; 16])).expect("valid");
        assert_eq!(max.successor(), None);
    }

    #[test]
    fn the_predecessor_is_the_next_key_down_and_step_follows_the_order() {
        let k = key(5, 7);
        assert_eq!(k.predecessor(), Some(key(5, 6)));
        let first_id = SortKey::new(6, CommentId::from_bytes([0; 16])).expect("valid");
        assert_eq!(
            first_id.predecessor(),
            Some(SortKey::new(5, CommentId::from_bytes([0xff; 16])).expect("valid"))
        );
        let min = SortKey::new(0, CommentId::from_bytes([0; 16])).expect("valid");
        assert_eq!(min.predecessor(), None);
        assert_eq!(Order::NewestFirst.step(&k), k.predecessor());
        assert_eq!(Order::OldestFirst.step(&k), k.successor());
    }

    proptest! {
        #[test]
        fn string_order_equals_key_order(
            a in (0..SortKey::MAX_MILLIS, any::<u128>()),
            b in (0..SortKey::MAX_MILLIS, any::<u128>()),
            tie in any::<bool>(),
        ) {
            let ka = key(a.0, a.1);
            let kb = key(if tie { a.0 } else { b.0 }, b.1);
            prop_assert_eq!(ka.cmp(&kb), ka.to_string().cmp(&kb.to_string()));
            prop_assert_eq!(ka.to_bytes().cmp(&kb.to_bytes()), ka.cmp(&kb));
            prop_assert_eq!(ka.to_string().parse::<SortKey>().ok(), Some(ka));
            prop_assert_eq!(SortKey::from_bytes(&ka.to_bytes()).ok(), Some(ka));
        }
    }

    #[test]
    fn refuses_malformed_strings() {
        for bad in [
            "",
            "#",
            "123#01ARZ3NDEKTSV4RRFFQ69G5FAV",
            "00000000000x1#01ARZ3NDEKTSV4RRFFQ69G5FAV",
        ] {
            assert!(bad.parse::<SortKey>().is_err(), "{bad:?}");
        }
    }
}
