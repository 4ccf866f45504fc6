//! Fuzzes the cursor decoder: whatever the input, opening it must not panic and must not
//! yield a position unless the input is exactly a cursor we sealed for that scope, in every
//! order (an edge's position, or a numbered page's offset).
#![no_main]

use dynapage::domain::{CommentOrder, RatingSet, Sku};
use dynapage::pagination::{CursorAt, CursorCodec, CursorScope};
use libfuzzer_sys::fuzz_target;

const ORDERS: [CommentOrder; 3] = [
    CommentOrder::Newest,
    CommentOrder::HighestRated,
    CommentOrder::MostHelpful,
];

fuzz_target!(|data: &[u8]| {
    let codec = CursorCodec::development();
    let Ok(input) = std::str::from_utf8(data) else {
        return;
    };
    for order in ORDERS {
        let scope = CursorScope {
            sku: Sku::parse("FUZZ").expect("sku"),
            ratings: RatingSet::ALL,
            order,
        };
        // Only our own sealing can produce an openable cursor; it must round-trip exactly.
        match codec.open(&scope, input) {
            Ok(CursorAt::Position(position)) => {
                assert_eq!(codec.seal(&scope, &position), input);
            }
            Ok(CursorAt::Offset { numbering, offset }) => {
                assert_eq!(codec.seal_offset(&scope, numbering, offset), input);
            }
            Err(_) => {}
        }
    }
});
