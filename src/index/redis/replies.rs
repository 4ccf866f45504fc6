//! What `apply.lua` and `read.lua` are sent and answer, and the sort keys members and
//! scores stand for: the reading of this adapter's replies, where a reply no key of the index
//! could have produced becomes an internal error.

use super::keys::sort_key_of;
use crate::domain::{AnchorRank, Position, Rating, Sku, SortKey};
use crate::index::{Held, IndexError, Positions, View};

/// One change for `apply.lua`: its kind (`u`, `d`, `r`, `x`), the comment, the version it
/// leaves, and for a repair what the index must still hold.
pub(super) struct Change<'a> {
    pub(super) kind: &'static str,
    pub(super) sku: &'a Sku,
    pub(super) key: SortKey,
    pub(super) rating: Option<Rating>,
    pub(super) version: u64,
    pub(super) expected: Held,
    /// The helpful count the change leaves (0 for a deletion).
    pub(super) helpful: u64,
}

/// `apply.lua`'s spelling of a held state: `n`, `l` or `d`, and its version.
pub(super) fn held_arg(held: Held) -> (&'static str, u64) {
    match held {
        Held::Nothing => ("n", 0),
        Held::Live { version } => ("l", version),
        Held::Deleted { version } => ("d", version),
    }
}

pub(super) fn held_of(state: &str, version: u64) -> Result<Held, IndexError> {
    match state {
        "n" => Ok(Held::Nothing),
        "l" => Ok(Held::Live { version }),
        "d" => Ok(Held::Deleted { version }),
        other => Err(IndexError::Internal(
            format!("apply.lua answered the unknown state `{other}`").into(),
        )),
    }
}

/// `read.lua`'s reply: `{total, newer, older, bound member, bound score, anchor member,
/// anchor score, page bound member, page bound score}`, with `-1` for the ranks of no anchor
/// and nils for an absent bound, anchor or page bound. `None` for any other shape.
pub(super) fn view_of(reply: &[redis::Value]) -> Option<View> {
    let int = |v: &redis::Value| match v {
        redis::Value::Int(i) => Some(*i),
        _ => None,
    };
    let [
        total,
        newer,
        older,
        bound_member,
        bound_score,
        anchor_member,
        anchor_score,
        page_member,
        page_score,
    ] = reply
    else {
        return None;
    };
    let total = u64::try_from(int(total)?).ok()?;
    let anchor = match (int(newer)?, int(older)?) {
        (-1, -1) => None,
        (newer, older) => Some(AnchorRank {
            newer: u64::try_from(newer).ok()?,
            older: u64::try_from(older).ok()?,
        }),
    };
    Some(View {
        bound: optional_key(bound_member, bound_score)?,
        anchor: optional_key(anchor_member, anchor_score)?,
        positions: Positions {
            total,
            anchor,
            page_bound: optional_key(page_member, page_score)?,
        },
    })
}

/// A `(member, score)` pair of a reply: `Some(None)` for two nils, `None` for a bad shape. The
/// score is `group:score` in a list by rating (`concat.lua`), a plain score (group 0) in a list
/// by time.
fn optional_key(member: &redis::Value, score: &redis::Value) -> Option<Option<Position>> {
    match (member, score) {
        (redis::Value::Nil, redis::Value::Nil) => Some(None),
        (redis::Value::BulkString(member), redis::Value::BulkString(score)) => {
            let score = std::str::from_utf8(score).ok()?;
            let (group, score) = match score.split_once(':') {
                Some((group, score)) => (group.parse().ok()?, score),
                None => (0, score),
            };
            let score: f64 = score.parse().ok()?;
            let key = sort_key(member, score).ok()?;
            Some(Some(Position { group, key }))
        }
        _ => None,
    }
}

/// A reply Redis gave that no key this adapter writes could have produced.
#[derive(Debug, thiserror::Error)]
enum WireError {
    #[error("index member `{0:02x?}` is not a comment id")]
    Member(Vec<u8>),
    #[error("index score `{0}` is not a millisecond timestamp")]
    Score(String),
}

/// The sort key a `(member, score)` pair stands for ([`sort_key_of`]). Scores are integer
/// milliseconds below 2^53, so the `f64` Redis keeps them in is exact.
/// The five rating counts of each of `products` products from one pipeline's `ZCARD`s, ten a
/// product in rating order (each rating's set without helpful votes, then its set with them);
/// any other number of replies is an internal error, not a short answer.
pub(super) fn per_product(counts: Vec<u64>, products: usize) -> Result<Vec<[u64; 5]>, IndexError> {
    if counts.len() != 10 * products {
        let message = format!("{} counts for {products} products", counts.len());
        return Err(IndexError::Internal(message.into()));
    }
    // Per product, each rating's two sets by time (without votes, with votes), rating 1 first.
    Ok(counts
        .chunks_exact(10)
        .map(|c| std::array::from_fn(|r| c[2 * r] + c[2 * r + 1]))
        .collect())
}

pub(super) fn sort_key(member: &[u8], score: f64) -> Result<SortKey, IndexError> {
    if !(score.is_finite() && score >= 0.0 && score.fract() == 0.0) {
        return Err(IndexError::Internal(Box::new(WireError::Score(
            score.to_string(),
        ))));
    }
    sort_key_of(member, score as u64)
        .ok_or_else(|| IndexError::Internal(Box::new(WireError::Member(member.to_owned()))))
}
