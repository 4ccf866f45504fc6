//! The cursor's round trips, scopes, orders, rotation and scratch buffers.

use super::*;
use crate::domain::{CommentId, SortKey};

pub(super) fn scope(sku: &str, ratings: &[i64]) -> CursorScope {
    CursorScope {
        sku: Sku::parse(sku).expect("sku"),
        ratings: RatingSet::parse(ratings).expect("ratings"),
        order: CommentOrder::Newest,
    }
}

pub(super) fn position() -> Position {
    Position::flat(
        SortKey::new(
            1_700_000_000_123,
            CommentId::from_parts(1_700_000_000_123, 42),
        )
        .expect("key"),
    )
}

#[test]
fn round_trips_and_is_deterministic_and_short() {
    let codec = CursorCodec::new(&["a-secret-of-sixteen+"]).expect("codec");
    let s = scope("SKU-1", &[1, 2, 3, 4, 5]);
    let cursor = codec.seal(&s, &position());
    assert_eq!(cursor, codec.seal(&s, &position()));
    assert!(cursor.len() <= MAX_CURSOR_CHARS, "{} chars", cursor.len());
    assert_eq!(codec.open(&s, &cursor), Ok(CursorAt::Position(position())));
}

#[test]
fn page_cursors_round_trip_in_their_own_scope_only_and_are_shorter() {
    let codec = CursorCodec::development();
    let s = scope("SKU-1", &[3, 5]);
    for (numbering, offset) in [
        (Numbering::FromNewest, 20),
        (Numbering::FromOldest, 20),
        (Numbering::FromNewest, u64::MAX),
    ] {
        let cursor = codec.seal_offset(&s, numbering, offset);
        assert_eq!(cursor.len(), 35, "{cursor}");
        assert_eq!(cursor, codec.seal_offset(&s, numbering, offset));
        assert_eq!(
            codec.open(&s, &cursor),
            Ok(CursorAt::Offset { numbering, offset })
        );
        assert_eq!(codec.open(&scope("SKU-1", &[3]), &cursor), Err(BadCursor));
        assert_eq!(
            codec.open(&scope("SKU-2", &[3, 5]), &cursor),
            Err(BadCursor)
        );
    }
    assert_ne!(
        codec.seal_offset(&s, Numbering::FromNewest, 20),
        codec.seal_offset(&s, Numbering::FromOldest, 20)
    );
    // A page cursor of a grouped order opens in that order only.
    let highest = CursorScope {
        order: CommentOrder::HighestRated,
        ..s.clone()
    };
    let cursor = codec.seal_offset(&highest, Numbering::FromNewest, 40);
    assert_eq!(codec.open(&s, &cursor), Err(BadCursor));
    assert!(matches!(
        codec.open(&highest, &cursor),
        Ok(CursorAt::Offset { offset: 40, .. })
    ));
}

#[test]
fn refuses_cursors_of_another_order_and_keeps_newest_first_cursors_as_they_were() {
    let codec = CursorCodec::development();
    let newest = scope("SKU-1", &[1, 2, 3, 4, 5]);
    let oldest = CursorScope {
        order: CommentOrder::Oldest,
        ..newest.clone()
    };
    let cursor = codec.seal(&oldest, &position());
    assert_eq!(
        codec.open(&oldest, &cursor),
        Ok(CursorAt::Position(position()))
    );
    assert_eq!(codec.open(&newest, &cursor), Err(BadCursor));
    assert_eq!(
        codec.open(&oldest, &codec.seal(&newest, &position())),
        Err(BadCursor)
    );
    // The cursor the development key sealed for this position before orders existed
    // (computed outside this code base, from the format in the module paragraph).
    let before_orders = "AW-_wTKqSesJAffAi516u6raeHz9g7-SG_I6BLMrCDcVPnIpWWDMhlQ";
    assert_eq!(codec.seal(&newest, &position()), before_orders);
}

#[test]
fn a_cursor_of_an_order_by_rating_carries_its_group() {
    let codec = CursorCodec::development();
    let highest = CursorScope {
        order: CommentOrder::HighestRated,
        ..scope("SKU-1", &[1, 2, 3, 4, 5])
    };
    let lowest = CursorScope {
        order: CommentOrder::LowestRated,
        ..highest.clone()
    };
    let at = Position {
        group: 4,
        ..position()
    };
    let cursor = codec.seal(&highest, &at);
    assert_eq!(cursor.len(), 56);
    assert_eq!(codec.open(&highest, &cursor), Ok(CursorAt::Position(at)));
    assert_eq!(codec.open(&lowest, &cursor), Err(BadCursor));
    assert_eq!(
        codec.open(&scope("SKU-1", &[1, 2, 3, 4, 5]), &cursor),
        Err(BadCursor)
    );
    // A group that names no rating is refused even under a valid seal.
    let nowhere = codec.seal(&highest, &Position { group: 9, ..at });
    assert_eq!(codec.open(&highest, &nowhere), Err(BadCursor));
}

#[test]
fn a_cursor_of_the_order_by_helpful_votes_carries_the_whole_count() {
    let codec = CursorCodec::development();
    let helpful = CursorScope {
        order: CommentOrder::MostHelpful,
        ..scope("SKU-1", &[1, 2, 3, 4, 5])
    };
    for group in [0, 1, 255, 256, 70_000, u32::MAX] {
        let at = Position {
            group,
            ..position()
        };
        let cursor = codec.seal(&helpful, &at);
        assert_eq!(cursor.len(), 60);
        assert!(cursor.len() <= MAX_CURSOR_CHARS);
        assert_eq!(codec.open(&helpful, &cursor), Ok(CursorAt::Position(at)));
        let highest = CursorScope {
            order: CommentOrder::HighestRated,
            ..helpful.clone()
        };
        assert_eq!(codec.open(&highest, &cursor), Err(BadCursor));
        assert_eq!(
            codec.open(&scope("SKU-1", &[1, 2, 3, 4, 5]), &cursor),
            Err(BadCursor)
        );
    }
}

#[test]
fn refuses_cursors_of_another_product_or_filter() {
    let codec = CursorCodec::development();
    let cursor = codec.seal(&scope("SKU-1", &[3, 5]), &position());
    assert_eq!(
        codec.open(&scope("SKU-2", &[3, 5]), &cursor),
        Err(BadCursor)
    );
    assert_eq!(codec.open(&scope("SKU-1", &[3]), &cursor), Err(BadCursor));
    assert_eq!(
        codec.open(&scope("SKU-1", &[5, 3]), &cursor),
        Ok(CursorAt::Position(position()))
    );
}

/// The associated data is the same bytes on the stack (any product's SKU, up to the
/// longest) and on the heap (an author's list, whose name can be longer), and a cursor
/// sealed with either opens in its own list only.
#[test]
fn associated_data_is_the_same_on_the_stack_and_on_the_heap() {
    let codec = CursorCodec::development();
    let longest = "S".repeat(Sku::MAX_LEN);
    let author = crate::domain::AuthorList::new("a".repeat(200), None).index_name();
    assert!(author.as_str().len() > STACK_AAD_BYTES, "takes the heap");
    for sku in [
        Sku::parse("SKU-1").expect("sku"),
        Sku::parse(&longest).expect("sku"),
        author,
    ] {
        for order in [CommentOrder::Newest, CommentOrder::MostHelpful] {
            let s = CursorScope {
                sku: sku.clone(),
                ratings: RatingSet::parse(&[3, 5]).expect("ratings"),
                order,
            };
            let mut expected = COMMENT_AAD.to_vec();
            expected.push(s.ratings.bits());
            expected.extend(order.cursor_tag());
            expected.extend_from_slice(sku.as_str().as_bytes());
            assert_eq!(s.with_associated_data(<[u8]>::to_vec), expected);

            // Only a grouped order's cursor carries the group.
            let group = if order == CommentOrder::MostHelpful {
                7
            } else {
                0
            };
            let at = Position {
                group,
                ..position()
            };
            let cursor = codec.seal(&s, &at);
            assert_eq!(codec.open(&s, &cursor), Ok(CursorAt::Position(at)));
            let other = CursorScope {
                sku: Sku::parse("SKU-2").expect("sku"),
                ..s.clone()
            };
            assert_eq!(codec.open(&other, &cursor), Err(BadCursor));
        }
    }
}

/// Bytes too long for a cursor that opens are still sealed (on the heap), as before.
#[test]
fn seals_more_than_a_cursor_holds_on_the_heap() {
    let codec = CursorCodec::development();
    let plain = [9u8; MAX_SEALED_BYTES];
    let sealed = codec.seal_bytes(b"aad", &plain);
    assert_eq!(
        sealed.len(),
        crate::base64url::encoded_len(SEALING_LEN + plain.len())
    );
    assert_eq!(
        codec.open_bytes(b"aad", &sealed),
        Err(BadCursor),
        "too long to open"
    );
    let short = codec.seal_bytes(b"aad", &plain[..MAX_SEALED_BYTES - SEALING_LEN]);
    assert_eq!(short.len(), MAX_CURSOR_CHARS);
    assert_eq!(
        codec.open_bytes(b"aad", &short).as_deref(),
        Ok(&plain[..MAX_SEALED_BYTES - SEALING_LEN])
    );
}

#[test]
fn rotation_opens_old_cursors_and_seals_with_the_first_key() {
    let old = CursorCodec::new(&["the-old-secret-0000"]).expect("codec");
    let rotated = CursorCodec::new(&["the-new-secret-0000", "the-old-secret-0000"]).expect("codec");
    let s = scope("SKU-1", &[2]);
    let cursor = old.seal(&s, &position());
    assert_eq!(
        rotated.open(&s, &cursor),
        Ok(CursorAt::Position(position()))
    );
    assert_ne!(rotated.seal(&s, &position()), cursor);
    assert_eq!(CursorCodec::new(&["short"]).err(), Some(WeakSecret));
    assert_eq!(CursorCodec::new::<&str>(&[]).err(), Some(WeakSecret));
}
