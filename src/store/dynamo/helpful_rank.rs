//! The sort key of the GSIs by helpful votes (`helpfulRank`): one number per comment that
//! orders like its [`Position`] in the list by helpful votes, and names that position back.
//! Pure arithmetic on domain types: the item codec (`super::item`) writes and reads the
//! attribute, the votes transaction moves it by [`RANK_COUNT`] per vote.

#![deny(
    clippy::cast_possible_truncation,
    clippy::cast_possible_wrap,
    clippy::cast_sign_loss
)]

use crate::domain::{CommentId, Position, SortKey, helpful_group};

/// The place of a comment in the GSIs by helpful votes (`byProductHelpful`,
/// `byProductRatingHelpful`), one number that orders like [`Position`] in the list by helpful
/// votes: `count · 10^28 + createdAt · 10^15 + r`, where `r` is the first 49 of the id's 80
/// random bits (below 10^15). A number, not a string, so that a vote moves it with `ADD` in the
/// same transaction as the count, without reading the comment first: one vote is `± 10^28`.
/// At most 38 digits (a count up to `u32::MAX`, `createdAt` below 10^13), DynamoDB's precision.
///
/// Ids one server makes in one millisecond never share their first 49 random bits
/// (`CommentId::new`). Two comments of one product created in the same millisecond on two
/// servers whose ids share them (one chance in 5.6·10^14 for such a pair) get one number;
/// DynamoDB then orders them arbitrarily, and a page boundary between them may repeat or skip
/// one in this order.
/// The same holds, in a rarer case, for ids whose time part is not their `createdAt` (written
/// by another tool): within one millisecond they order here by their random bits, where the
/// sort key orders them by the whole id.
pub(super) fn helpful_rank(count: u64, key: &SortKey) -> u128 {
    let random = u128::from_be_bytes(key.id().to_bytes()) & ((1 << 80) - 1);
    u128::from(helpful_group(count)) * RANK_COUNT
        + u128::from(key.millis()) * RANK_MILLIS
        + (random >> 31)
}

/// One helpful vote in [`helpful_rank`].
pub(super) const RANK_COUNT: u128 = 10u128.pow(28);
const RANK_MILLIS: u128 = 10u128.pow(15);

/// The position a [`helpful_rank`] and the comment's id name (from a `LastEvaluatedKey`), or
/// what is wrong with the rank (the item codec names the attribute).
pub(super) fn position_of_rank(rank: u128, id: CommentId) -> Result<Position, &'static str> {
    let group = u32::try_from(rank / RANK_COUNT).map_err(|_| "is too large")?;
    let millis = u64::try_from(rank % RANK_COUNT / RANK_MILLIS).map_err(|_| "is out of range")?;
    let key = SortKey::new(millis, id).map_err(|_| "is out of range")?;
    Ok(Position { group, key })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_helpful_rank_orders_like_the_position_and_names_it_back() {
        let mut seed = 7u64;
        let mut next = || {
            seed = crate::domain::splitmix(seed);
            seed
        };
        let mut keyed: Vec<(Position, u128)> = (0..2_000)
            .map(|_| {
                // Few counts and few milliseconds, so ties on both are common.
                let count = [0, 1, 2, 3, 1_000, u64::from(u32::MAX), u64::MAX]
                    [usize::try_from(next() % 7).expect("below 7")];
                let millis = 1_700_000_000_000 + next() % 4;
                let random = u128::from(next()) << 16 | u128::from(next() & 0xffff);
                let key = SortKey::new(millis, CommentId::from_parts(millis, random))
                    .expect("a sort key");
                let rank = helpful_rank(count, &key);
                assert!(rank < 10u128.pow(38), "38 digits at most");
                let position = Position {
                    group: helpful_group(count),
                    key,
                };
                assert_eq!(position_of_rank(rank, key.id()), Ok(position));
                (position, rank)
            })
            .collect();
        keyed.sort();
        assert!(keyed.windows(2).all(|w| w[0].1 <= w[1].1));
    }
}
