//! Identifiers and small value types, each validated once at the edge so the rest of the code
//! can trust them.

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use super::invalid::InvalidInput;

/// A comment's id: a ULID, so ids are unique, sortable and 26 ASCII characters long.
///
/// The order of the 128-bit value equals the bytewise order of its Crockford base32 string,
/// which is what DynamoDB and Redis compare (the order invariant of `docs/architecture.md`).
///
/// Held as two 64-bit halves, high first, whose derived order is the 128-bit value's: a `u128`
/// (inside `ulid::Ulid`) is aligned to 16 bytes, which padded every sort key to 32 bytes and
/// every position in a list to 48; with 8-byte alignment they take 24 and 32, in each of the
/// embedded store's and index's structures that hold one per comment.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CommentId {
    high: u64,
    low: u64,
}

impl CommentId {
    /// A new id whose time part is `millis`. The ids this process makes in one millisecond
    /// increase in the order they are made (the ULID specification's monotonic mode): a comment
    /// written on this server after another sorts after it, newer, even in the same
    /// millisecond. A subscription resumed from the first one's cursor replays what is newer
    /// than it; with random ties the second comment sorted older in about half of such pairs
    /// and was never replayed (a test caught it). Ids made in one millisecond by two servers
    /// still sort by their random parts.
    pub fn new(millis: u64) -> Self {
        Self::from_ulid(ulid::Ulid::from_parts(millis, next_random(millis)))
    }

    /// An id from its parts; used by generators that must be reproducible.
    pub fn from_parts(millis: u64, random: u128) -> Self {
        Self::from_ulid(ulid::Ulid::from_parts(millis, random))
    }

    /// The ULID's 16 bytes, big-endian, so that byte order is id order.
    pub fn to_bytes(self) -> [u8; 16] {
        self.value().to_be_bytes()
    }

    /// The id whose big-endian bytes are `bytes` ([`CommentId::to_bytes`]).
    pub fn from_bytes(bytes: [u8; 16]) -> Self {
        Self::from_value(u128::from_be_bytes(bytes))
    }

    fn from_ulid(ulid: ulid::Ulid) -> Self {
        Self::from_value(ulid.0)
    }

    fn from_value(value: u128) -> Self {
        Self {
            high: (value >> 64) as u64,
            low: value as u64,
        }
    }

    /// The 128-bit value (the ULID's).
    fn value(self) -> u128 {
        (u128::from(self.high) << 64) | u128::from(self.low)
    }

    fn ulid(self) -> ulid::Ulid {
        ulid::Ulid(self.value())
    }

    /// Its text (what `Display` writes) into `buf`, without a formatter: ids are written 20 to
    /// a page.
    pub fn write_text(self, buf: &mut [u8; ulid::ULID_LEN]) -> &str {
        self.ulid().array_to_str(buf)
    }
}

/// The random part (80 bits) of the next id made at `millis`. For the millisecond of the newest
/// id made: the newest one's first 49 bits plus one, then 31 fresh bits. So it is larger (the
/// later id sorts after), and its first 49 bits are its own: they place the comment in the
/// helpful indexes (`store::dynamo::helpful_rank`), where two ids sharing them would tie.
/// Else 79 fresh bits (below 2^79, so the 49 bits never run out in practice; it is still
/// checked). An id for an older millisecond than the newest (a clock reading overtaken by
/// another request's) gets fresh bits and leaves the newest millisecond's sequence alone.
fn next_random(millis: u64) -> u128 {
    /// The bits below the 49 that count.
    const LOW: u32 = 31;
    const HIGH_MAX: u128 = (1 << 49) - 1;
    static NEWEST: std::sync::Mutex<Option<(u64, u128)>> = std::sync::Mutex::new(None);
    let fresh = || rand_u128() >> 49;
    let mut newest = NEWEST.lock().unwrap_or_else(|p| p.into_inner());
    let random = match *newest {
        Some((at, _)) if millis < at => return fresh(),
        Some((at, previous)) if at == millis && (previous >> LOW) < HIGH_MAX => {
            (((previous >> LOW) + 1) << LOW) | (rand_u128() & ((1 << LOW) - 1))
        }
        _ => fresh(),
    };
    *newest = Some((millis, random));
    random
}

fn rand_u128() -> u128 {
    // ulid's own generator uses `rand`; a clock-seeded SplitMix keeps the dependency tree small
    // and is enough for uniqueness within a millisecond (79 fresh bits for a millisecond's first
    // id, 31 beside its step for each next one; `next_random`).
    use std::sync::atomic::{AtomicU64, Ordering};
    static STATE: AtomicU64 = AtomicU64::new(0);
    let seed = STATE.fetch_add(0x9E37_79B9_7F4A_7C15, Ordering::Relaxed)
        ^ std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or_default();
    let a = splitmix(seed);
    let b = splitmix(a);
    (u128::from(a) << 64) | u128::from(b)
}

/// One step of SplitMix64, a tiny well-mixed generator.
pub(crate) fn splitmix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

impl fmt::Display for CommentId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.ulid())
    }
}

impl fmt::Debug for CommentId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CommentId({})", self.ulid())
    }
}

impl FromStr for CommentId {
    type Err = InvalidInput;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        // Only the canonical upper-case form: the string is compared bytewise by the backends,
        // so a lower-case spelling of the same id would sort differently.
        if s.len() != 26
            || !s
                .bytes()
                .all(|b| b.is_ascii_digit() || b.is_ascii_uppercase())
        {
            return Err(InvalidInput::new("id", "is not a comment id"));
        }
        let id = ulid::Ulid::from_string(s)
            .map_err(|_| InvalidInput::new("id", "is not a comment id"))?;
        Ok(Self::from_ulid(id))
    }
}

/// A product's SKU: 1 to 64 characters from `A-Z a-z 0-9 _ - .`.
///
/// The alphabet keeps SKUs safe inside DynamoDB key strings (`sku#rating`) and Redis hash tags
/// (`{sku}`), where `#`, `{` or `}` would change the meaning of a key.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Sku(Arc<str>);

impl Sku {
    /// The longest SKU, in characters (ASCII, so also in bytes).
    pub const MAX_LEN: usize = 64;

    /// `s` as a SKU, refused unless it is 1 to [`Sku::MAX_LEN`] characters from
    /// `A-Z a-z 0-9 _ - .`.
    pub fn parse(s: &str) -> Result<Self, InvalidInput> {
        let ok_char = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.');
        if s.is_empty() || s.len() > Self::MAX_LEN || !s.chars().all(ok_char) {
            return Err(InvalidInput::new(
                "sku",
                "must be 1 to 64 characters from A-Z, a-z, 0-9, '_', '-' and '.'",
            ));
        }
        Ok(Self(Arc::from(s)))
    }

    /// A list's name that is no product's ([`super::QueueList::index_name`],
    /// [`super::AuthorList::index_name`]): made here, never parsed from a client.
    pub(super) fn list_name(name: String) -> Self {
        Self(Arc::from(name))
    }

    /// Whether this names a list that is no product's: a moderation queue
    /// ([`super::QueueList`]) or an author's list ([`super::AuthorList`]).
    pub fn is_reserved(&self) -> bool {
        self.0.starts_with('!')
    }

    /// The SKU as written.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Sku {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for Sku {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Sku({})", self.0)
    }
}

/// A star rating, 1 to 5.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub struct Rating(u8);

impl Rating {
    /// Every rating, from 1 to 5.
    pub const ALL: [Rating; 5] = [Rating(1), Rating(2), Rating(3), Rating(4), Rating(5)];

    /// The rating `value`, refused unless it is 1 to 5.
    pub fn new(value: i64) -> Result<Self, InvalidInput> {
        match value {
            1..=5 => Ok(Self(value as u8)),
            _ => Err(InvalidInput::new("rating", "must be between 1 and 5")),
        }
    }

    /// The rating as a number, 1 to 5.
    pub fn get(self) -> u8 {
        self.0
    }

    /// Position 0..5, for arrays indexed by rating.
    pub fn index(self) -> usize {
        usize::from(self.0 - 1)
    }
}

/// A non-empty set of ratings: the `ratings` filter. All five means "no filter".
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct RatingSet(u8);

impl RatingSet {
    /// All five ratings: no filter.
    pub const ALL: RatingSet = RatingSet(0b1_1111);

    /// Parses the `ratings` argument: values 1..5, no repeats, not empty; order is irrelevant.
    pub fn parse(values: &[i64]) -> Result<Self, InvalidInput> {
        if values.is_empty() {
            return Err(InvalidInput::new(
                "ratings",
                "must name at least one rating",
            ));
        }
        let mut bits = 0u8;
        for &value in values {
            let rating = Rating::new(value)
                .map_err(|_| InvalidInput::new("ratings", "values must be between 1 and 5"))?;
            let bit = 1 << rating.index();
            if bits & bit != 0 {
                return Err(InvalidInput::new("ratings", "must not repeat a rating"));
            }
            bits |= bit;
        }
        Ok(Self(bits))
    }

    /// The set of `ratings` (repeats are fine; none gives an empty set, which
    /// [`RatingSet::parse`] never makes).
    pub fn from_ratings(ratings: impl IntoIterator<Item = Rating>) -> Self {
        Self(ratings.into_iter().fold(0, |bits, r| bits | 1 << r.index()))
    }

    /// Whether `rating` is in the set.
    pub fn contains(self, rating: Rating) -> bool {
        self.0 & (1 << rating.index()) != 0
    }

    /// Whether the set holds all five ratings, so filters nothing.
    pub fn is_all(self) -> bool {
        self == Self::ALL
    }

    /// The ratings in ascending order.
    pub fn iter(self) -> impl Iterator<Item = Rating> {
        Rating::ALL.into_iter().filter(move |r| self.contains(*r))
    }

    /// The set as one byte (bit `r - 1` for rating `r`), for cursor fingerprints.
    pub fn bits(self) -> u8 {
        self.0
    }

    /// How many comments the set selects from a product's per-rating counts `[ones, …, fives]`
    /// (a `totalCount` read with other products' counts).
    pub fn count_in(self, counts: [u64; 5]) -> u64 {
        self.iter().map(|r| counts[r.index()]).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_set_counts_its_ratings_only() {
        let counts = [1, 20, 300, 4_000, 50_000];
        assert_eq!(RatingSet::ALL.count_in(counts), 54_321);
        let picked = RatingSet::parse(&[5, 2]).expect("a set");
        assert_eq!(picked.count_in(counts), 50_020);
        assert_eq!(RatingSet::parse(&[1]).expect("a set").count_in([0; 5]), 0);
    }

    #[test]
    fn ids_made_for_one_millisecond_increase_in_the_order_they_are_made() {
        // The newest millisecond an id can name: no other test's id overtakes it.
        let millis = (1 << 48) - 1;
        let ids: Vec<CommentId> = (0..1_000).map(|_| CommentId::new(millis)).collect();
        assert!(ids.windows(2).all(|w| w[0] < w[1]), "in the order made");
        // Their first 49 random bits too (the helpful indexes order by them).
        let first_49 = |id: &CommentId| (id.value() & ((1 << 80) - 1)) >> 31;
        assert!(ids.windows(2).all(|w| first_49(&w[0]) < first_49(&w[1])));
        assert!(ids.iter().all(|id| id.ulid().timestamp_ms() == millis));
        // An older millisecond's id is still new, and sorts by its time part.
        let older = CommentId::new(millis - 1);
        assert!(older < ids[0]);
        assert!(CommentId::new(millis) > ids[999]);
    }

    #[test]
    fn comment_id_string_order_equals_value_order() {
        let a = CommentId::from_parts(5, 1);
        let b = CommentId::from_parts(5, 2);
        let c = CommentId::from_parts(6, 0);
        assert!(a < b && b < c);
        assert!(a.to_string() < b.to_string() && b.to_string() < c.to_string());
        assert_eq!(a.to_string().parse::<CommentId>().ok(), Some(a));
    }

    proptest::proptest! {
        #[test]
        fn comment_id_order_bytes_and_string_are_the_128_bit_values(
            a in proptest::prelude::any::<u128>(),
            b in proptest::prelude::any::<u128>(),
            same_high in proptest::prelude::any::<bool>(),
        ) {
            // Half the pairs share their high 64 bits, so the low halves decide.
            let low = u128::from(u64::MAX);
            let b = if same_high { (a & !low) | (b & low) } else { b };
            let (x, y) = (CommentId::from_bytes(a.to_be_bytes()), CommentId::from_bytes(b.to_be_bytes()));
            proptest::prop_assert_eq!(x.cmp(&y), a.cmp(&b));
            proptest::prop_assert_eq!(x.to_string().cmp(&y.to_string()), a.cmp(&b));
            proptest::prop_assert_eq!(x.to_bytes(), a.to_be_bytes());
            proptest::prop_assert_eq!(x.to_string().parse::<CommentId>().ok(), Some(x));
        }
    }

    /// What the embedded store and index hold per comment, several times over: an id aligned
    /// to 16 bytes padded a sort key to 32 bytes and a position to 48.
    #[test]
    fn ids_sort_keys_and_positions_are_not_padded() {
        use crate::domain::{Position, SortKey};
        assert_eq!(std::mem::size_of::<CommentId>(), 16);
        assert_eq!(std::mem::size_of::<SortKey>(), 24);
        assert_eq!(std::mem::size_of::<Position>(), 32);
    }

    #[test]
    fn comment_id_refuses_lower_case_and_garbage() {
        let id = CommentId::from_parts(1_700_000_000_000, u128::MAX >> 48).to_string();
        assert_ne!(
            id,
            id.to_lowercase(),
            "the id must contain letters for this test to mean anything"
        );
        assert!(id.to_lowercase().parse::<CommentId>().is_err());
        assert!("not-an-id".parse::<CommentId>().is_err());
        assert!("".parse::<CommentId>().is_err());
    }

    #[test]
    fn sku_refuses_key_separators() {
        assert!(Sku::parse("DAFT_PUNK_TSHIRT").is_ok());
        for bad in ["", "a#b", "a{b}", "a b", &"x".repeat(65)] {
            assert!(Sku::parse(bad).is_err(), "{bad:?} should be refused");
        }
    }

    #[test]
    fn rating_set_refuses_empty_repeated_and_out_of_range() {
        assert!(RatingSet::parse(&[]).is_err());
        assert!(RatingSet::parse(&[3, 3]).is_err());
        assert!(RatingSet::parse(&[0]).is_err());
        assert!(RatingSet::parse(&[6]).is_err());
        assert_eq!(
            RatingSet::parse(&[5, 3]).ok(),
            RatingSet::parse(&[3, 5]).ok()
        );
        assert!(RatingSet::parse(&[1, 2, 3, 4, 5]).is_ok_and(RatingSet::is_all));
    }
}
