//! The call of `read.lua` for one view (`PageIndex::view`), for a list by time (the union of its
//! rating sets) or by rating (its sets one after another, `concat.lua`), and the positions it is
//! sent and answers: a list by time sends and reads plain scores, a list by rating
//! "group:score", so a position keeps its group on the wire.

use super::keys::{Keys, member};
use crate::domain::{Grouping, Listing, Numbering, Order, PageLinks, Position, Rating, Sku};
use crate::index::{ViewAnchor, ViewRequest};
use crate::redis::ScriptCall;

/// The score argument of `position`: its milliseconds, with its group in a grouped list.
fn score_arg(listing: Listing, position: &Position) -> String {
    match listing.grouping {
        Grouping::Flat => position.key.millis().to_string(),
        _ => format!("{}:{}", position.group, position.key.millis()),
    }
}

/// Which of a rating's sets (`keys`): by time without votes (`r`), by time with votes (`w`),
/// by count (`h`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Set {
    Unvoted,
    Voted,
    ByCount,
}

/// The sets a view reads, in the order the script takes them, with each set's group: a list by
/// time, its ratings' sets by time (their union); a list by rating, each rating's two sets by
/// time, ascending by group (`concat.lua`); the list by helpful votes, its ratings' sets
/// without votes, then their sets by count (`helpful.lua`).
pub(super) fn sets(listing: Listing) -> Vec<(u32, Set, Rating)> {
    let by_time = |(group, rating)| [(group, Set::Unvoted, rating), (group, Set::Voted, rating)];
    match listing.grouping {
        Grouping::Flat => listing
            .ratings
            .iter()
            .map(|r| (0, r))
            .flat_map(by_time)
            .collect(),
        Grouping::HighestFirst | Grouping::LowestFirst => listing
            .ratings_by_group()
            .into_iter()
            .flat_map(by_time)
            .collect(),
        Grouping::MostHelpful => {
            let unvoted = listing.ratings.iter().map(|r| (0, Set::Unvoted, r));
            let by_count = listing.ratings.iter().map(|r| (0, Set::ByCount, r));
            unvoted.chain(by_count).collect()
        }
    }
}

/// The keys `read.lua` reads for `listing` of `sku`, in its order (see [`sets`]).
pub(super) fn keys(keys: &Keys, sku: &Sku, listing: Listing) -> Vec<String> {
    sets(listing)
        .into_iter()
        .map(|(_, set, rating)| match set {
            Set::Unvoted => keys.rating(sku, rating),
            Set::Voted => keys.voted(sku, rating),
            Set::ByCount => keys.by_count(sku, rating),
        })
        .collect()
}

/// Adds `request`'s arguments (ARGV of `read.lua`, and of `concat.lua` for a list by rating)
/// to `call`, whose keys are `sets(listing)`'s.
pub(super) fn add_args(call: &mut ScriptCall<'_>, listing: Listing, request: &ViewRequest) {
    let ViewRequest {
        start,
        bound,
        anchor,
        layout,
    } = request;
    call.arg(match start.order {
        Order::NewestFirst => "desc",
        Order::OldestFirst => "asc",
    });
    match &start.after {
        Some(after) => call.arg(score_arg(listing, after)).arg(member(&after.key)),
        None => call.arg("").arg(""),
    };
    match bound {
        Some(rank) => call.arg(*rank),
        None => call.arg(""),
    };
    match anchor {
        ViewAnchor::None => call.arg("none").arg("").arg(""),
        ViewAnchor::Key(position) => call
            .arg("key")
            .arg(score_arg(listing, position))
            .arg(member(&position.key)),
        ViewAnchor::Rank(rank) => call.arg("rank").arg(*rank).arg(""),
    };
    call.arg(layout.size).arg(match layout.numbering {
        Numbering::FromNewest => "newest",
        Numbering::FromOldest => "oldest",
    });
    call.arg(match layout.links {
        PageLinks::None => "none",
        PageLinks::Current => "current",
    });
    match listing.grouping {
        Grouping::Flat => {}
        Grouping::HighestFirst | Grouping::LowestFirst => {
            let groups: Vec<String> = sets(listing).iter().map(|(g, ..)| g.to_string()).collect();
            call.arg(groups.join(","));
        }
        Grouping::MostHelpful => {
            call.arg(listing.ratings.iter().count());
        }
    }
}
