//! Reproducible test data for the contract suites and the tests beside them: a seeded generator and
//! comments full of timestamp ties, because the order invariant of `docs/architecture.md` is only
//! tested where equal milliseconds must be ordered by id; the changes that index them; and a
//! store's partition read to its end the way the engine reads it.

use std::collections::{BTreeSet, HashSet};
use std::ops::Bound;

use dynapage::domain::{
    ChangeEvent, Comment, CommentId, IndexEntry, Order, Position, Rating, Sku, SortKey,
};
use dynapage::generate::CommentGenerator;
use dynapage::store::{CommentStore, KeyQuery, Partition};

/// The millisecond the generated comments start at.
pub const BASE_MILLIS: u64 = 1_700_000_000_000;

/// A seeded SplitMix64: reproducible data without a dependency.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    /// A generator whose sequence depends on `name` (e.g. a SKU), so two products' data never
    /// share an id.
    pub fn named(name: &str) -> Self {
        let mut rng = Self(0);
        for byte in name.bytes() {
            rng.0 = rng.step() ^ u64::from(byte);
        }
        rng
    }

    pub fn next(&mut self) -> u128 {
        u128::from(self.step()) << 64 | u128::from(self.step())
    }

    /// Uniform-ish in `0..n` (and 0 for `n` = 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.step() % n.max(1)
    }

    pub fn step(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut x = self.0;
        x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        x ^ (x >> 31)
    }
}

/// `n` comments of `sku`, in random order, spread over `spread` distinct milliseconds from
/// [`BASE_MILLIS`] (so with `n` above `spread` many tie), with random ratings and distinct
/// ids whose time part is their `createdAt`.
pub fn comments(rng: &mut Rng, sku: &Sku, n: usize, spread: u64) -> Vec<Comment> {
    let mut seen = BTreeSet::new();
    let mut out = Vec::with_capacity(n);
    while out.len() < n {
        let millis = BASE_MILLIS + rng.below(spread);
        let id = CommentId::from_parts(millis, rng.next());
        if !seen.insert(id) {
            continue;
        }
        let i = out.len();
        out.push(Comment {
            purchase: None,
            id,
            sku: sku.clone(),
            author: format!("author {i}"),
            author_sub: None,
            body: format!("body of comment {i}"),
            rating: Rating::ALL[rng.below(5) as usize],
            created_at_ms: millis,
            updated_at_ms: None,
            version: 1,
            helpful_count: 0,
            moderation: Default::default(),
            reply: None,
            reporters: Vec::new(),
        });
    }
    out
}

/// Whether two of `comments` share a millisecond.
pub fn has_ties(comments: &[Comment]) -> bool {
    let millis: BTreeSet<u64> = comments.iter().map(|c| c.created_at_ms).collect();
    millis.len() < comments.len()
}

/// A sort key at `millis` with an id made of `random` (a comment that need not exist).
pub fn key(millis: u64, random: u128) -> SortKey {
    SortKey::new(millis, CommentId::from_parts(millis, random)).expect("millis in range")
}

pub fn sku(name: &str) -> Sku {
    Sku::parse(name).expect("valid sku")
}

pub fn rating(value: i64) -> Rating {
    Rating::new(value).expect("valid rating")
}

/// Each entry as a creation, as the index is given a new comment.
pub fn upserts(entries: &[IndexEntry]) -> Vec<ChangeEvent> {
    entries
        .iter()
        .map(|e| ChangeEvent::Upsert {
            old: None,
            new: e.clone(),
        })
        .collect()
}

/// `count` comments of `sku_name` as `seed` makes them, the newest now: what `dynapage seed`
/// writes.
pub fn generated(sku_name: &str, seed: u64, count: usize) -> Vec<Comment> {
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock after 1970")
        .as_millis() as u64;
    CommentGenerator::new(sku(sku_name), seed, now_ms)
        .take(count)
        .collect()
}

/// `count` comments of `sku_name`, about three per millisecond, ratings spread over 1..5
/// independently of time; the same for the same arguments, and never sharing an id with
/// another product's.
pub fn dataset(sku_name: &str, count: usize) -> Vec<Comment> {
    let spread = (count as u64 / 3).max(1);
    comments(&mut Rng::named(sku_name), &sku(sku_name), count, spread)
}

/// The comments' sort keys as the given order reads them.
pub fn sorted_keys<'a>(
    comments: impl IntoIterator<Item = &'a Comment>,
    order: Order,
) -> Vec<SortKey> {
    let mut keys: Vec<SortKey> = comments.into_iter().map(Comment::sort_key).collect();
    keys.sort();
    if order == Order::NewestFirst {
        keys.reverse();
    }
    keys
}

/// The comments' sort keys, in their order.
pub fn keys_of(comments: &[Comment]) -> Vec<SortKey> {
    comments.iter().map(Comment::sort_key).collect()
}

/// The partition of every comment of `sku_name`.
pub fn product(sku_name: &str) -> Partition {
    Partition::Product(sku(sku_name))
}

/// Reads a partition to its end the way the engine does: one query, then another from the
/// last evaluated key, until none comes back. Checks each page keeps the contract on the way.
pub async fn read_all<S: CommentStore>(
    store: &S,
    partition: Partition,
    order: Order,
    from: Bound<SortKey>,
    limit: usize,
) -> Vec<Comment> {
    read_all_from(store, partition, order, from.map(Position::flat), limit).await
}

/// [`read_all`] from a position in the partition's order (a count and a sort key, in a
/// partition by helpful votes).
pub async fn read_all_from<S: CommentStore>(
    store: &S,
    partition: Partition,
    order: Order,
    from: Bound<Position>,
    limit: usize,
) -> Vec<Comment> {
    let mut query = KeyQuery {
        partition: partition.clone(),
        order,
        from,
        limit,
    };
    let mut all: Vec<Comment> = Vec::new();
    for _ in 0..10_000 {
        let page = store.query(&query).await.expect("query");
        assert!(
            page.items.len() <= limit,
            "a page holds at most `limit` items"
        );
        for item in &page.items {
            assert!(
                query.admits(&partition.position_of(item)),
                "{:?} violates {:?}",
                item.sort_key(),
                query.from
            );
        }
        all.extend(page.items.iter().cloned());
        match page.last_evaluated {
            Some(key) => {
                if let Some(last) = page.items.last() {
                    assert_eq!(
                        key,
                        partition.position_of(last),
                        "last_evaluated is the last item's key"
                    );
                }
                query.from = Bound::Excluded(key);
            }
            None => {
                let ids: HashSet<CommentId> = all.iter().map(|c| c.id).collect();
                assert_eq!(ids.len(), all.len(), "no comment is read twice");
                return all;
            }
        }
    }
    panic!("the partition never ended");
}
