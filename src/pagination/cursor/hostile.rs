//! Hostile input against the cursor codec: every one-character edit of a cursor, any string at
//! all, and valid cursors with bytes flipped, cut or appended are refused, and none of them
//! panics (practice 17: every input is hostile until bounded).

use super::tests::{position, scope};
use super::*;
use crate::domain::{CommentId, SortKey};

#[test]
fn refuses_every_single_character_edit() {
    let codec = CursorCodec::development();
    let s = scope("SKU-1", &[1]);
    let cursor = codec.seal(&s, &position());
    for i in 0..cursor.len() {
        let mut edited = cursor.clone().into_bytes();
        edited[i] = if edited[i] == b'A' { b'B' } else { b'A' };
        let edited = String::from_utf8(edited).expect("ascii");
        assert_eq!(codec.open(&s, &edited), Err(BadCursor), "edit at {i}");
    }
    assert_eq!(codec.open(&s, &cursor[..cursor.len() - 1]), Err(BadCursor));
    assert_eq!(codec.open(&s, ""), Err(BadCursor));
    assert_eq!(codec.open(&s, &"A".repeat(500)), Err(BadCursor));
}

mod fuzz {
    use super::*;
    use proptest::prelude::*;

    fn key(millis: u64, random: u128) -> SortKey {
        SortKey::new(
            millis % SortKey::MAX_MILLIS,
            CommentId::from_parts(millis % SortKey::MAX_MILLIS, random),
        )
        .expect("key")
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(20_000))]

        /// Any string at all: no panic, and (barring a forged 128-bit tag) a refusal.
        #[test]
        fn arbitrary_strings_are_refused_without_panicking(
            input in ".{0,80}",
            cursor_shaped in "[A-Za-z0-9_-]{53,57}",
        ) {
            let codec = CursorCodec::development();
            let all = scope("SKU-1", &[1, 2, 3, 4, 5]);
            prop_assert_eq!(codec.open(&all, &input), Err(BadCursor));
            // Right length and alphabet: these reach the tag check itself.
            prop_assert_eq!(codec.open(&all, &cursor_shaped), Err(BadCursor));
        }

        /// Valid cursors with bytes flipped, cut or appended are refused; an untouched one
        /// opens only in its own scope.
        #[test]
        fn mutated_cursors_are_refused(
            millis in any::<u64>(),
            random in any::<u128>(),
            flips in prop::collection::vec((any::<prop::sample::Index>(), 1u8..=255), 0..4),
            cut in prop::option::of(any::<prop::sample::Index>()),
            extra in prop::collection::vec(any::<u8>(), 0..3),
            other_sku in "[A-Z]{1,8}",
        ) {
            let codec = CursorCodec::development();
            let own = scope("SKU-1", &[3, 5]);
            let position = Position::flat(key(millis, random));
            let cursor = codec.seal(&own, &position);
            let mut bytes = URL_SAFE_NO_PAD.decode(&cursor).expect("our own cursor decodes");
            for (at, mask) in &flips {
                let i = at.index(bytes.len());
                bytes[i] ^= mask;
            }
            if let Some(at) = cut {
                bytes.truncate(at.index(bytes.len()));
            }
            bytes.extend_from_slice(&extra);
            let mutated = URL_SAFE_NO_PAD.encode(&bytes);
            if mutated == cursor {
                prop_assert_eq!(codec.open(&own, &mutated), Ok(CursorAt::Position(position)));
                prop_assert_eq!(codec.open(&scope(&other_sku, &[3, 5]), &mutated), Err(BadCursor));
                prop_assert_eq!(codec.open(&scope("SKU-1", &[3]), &mutated), Err(BadCursor));
            } else {
                prop_assert_eq!(codec.open(&own, &mutated), Err(BadCursor));
            }
        }
    }
}
