//! A cursor's plaintext, before sealing and after opening: where a page starts, as bytes.
//!
//! A position is its sort key's 24 bytes and its group's: none in a list by time, one in a list
//! by rating, four (big-endian) in the list by helpful votes. A numbered page's start is the
//! end it counts from as one byte (`n`ewest, `o`ldest) and the offset as eight, big-endian. The
//! two lengths differ in every order, so the length tells the kinds apart. Reading trusts
//! nothing: it runs only on plaintexts whose tag checked, and refuses all the same what our
//! keys never seal.

use super::{BadCursor, CursorAt};
use crate::domain::{Grouping, Numbering, Position, SortKey};

/// A page cursor's plaintext: which end the offset counts from, and the offset.
const PAGE_PLAIN_LEN: usize = 9;

/// A position's bytes: its sort key's 24, and its group's.
fn position_len(grouping: Grouping) -> usize {
    24 + group_len(grouping)
}

fn group_len(grouping: Grouping) -> usize {
    match grouping {
        Grouping::Flat => 0,
        Grouping::HighestFirst | Grouping::LowestFirst => 1,
        Grouping::MostHelpful => 4,
    }
}

/// Whether a plaintext of `len` bytes can be a cursor of a list grouped by `grouping`.
pub(super) fn may_be(grouping: Grouping, len: usize) -> bool {
    [position_len(grouping), PAGE_PLAIN_LEN].contains(&len)
}

/// The plaintext of an edge's cursor at `position`.
pub(super) fn of_position(grouping: Grouping, position: &Position) -> Vec<u8> {
    let mut plain = position.key.to_bytes().to_vec();
    let group = position.group.to_be_bytes();
    plain.extend_from_slice(&group[4 - group_len(grouping)..]);
    plain
}

/// The plaintext of the numbered page's cursor that starts after the first `offset` comments
/// counted from `numbering`'s end.
pub(super) fn of_offset(numbering: Numbering, offset: u64) -> Vec<u8> {
    let mut plain = Vec::with_capacity(PAGE_PLAIN_LEN);
    plain.push(match numbering {
        Numbering::FromNewest => b'n',
        Numbering::FromOldest => b'o',
    });
    plain.extend_from_slice(&offset.to_be_bytes());
    plain
}

/// Where an opened plaintext says its page starts, in a list grouped by `grouping`.
pub(super) fn read(grouping: Grouping, plain: &[u8]) -> Result<CursorAt, BadCursor> {
    if plain.len() == PAGE_PLAIN_LEN {
        let numbering = match plain[0] {
            b'n' => Numbering::FromNewest,
            b'o' => Numbering::FromOldest,
            _ => return Err(BadCursor),
        };
        let offset = u64::from_be_bytes(plain[1..].try_into().map_err(|_| BadCursor)?);
        return Ok(CursorAt::Offset { numbering, offset });
    }
    if plain.len() != position_len(grouping) {
        return Err(BadCursor);
    }
    let key: [u8; 24] = plain[..24].try_into().map_err(|_| BadCursor)?;
    let key = SortKey::from_bytes(&key).map_err(|_| BadCursor)?;
    let group = plain[24..]
        .iter()
        .fold(0u32, |group, byte| group << 8 | u32::from(*byte));
    // Only our keys seal, so a group that names no rating is never met; refuse it all the
    // same rather than trust it.
    if !grouping.admits(group) {
        return Err(BadCursor);
    }
    Ok(CursorAt::Position(Position { group, key }))
}
