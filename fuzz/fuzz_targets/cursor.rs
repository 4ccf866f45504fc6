//! Fuzzes the cursor decoder: whatever the input, opening it must not panic and must not
//! yield a position unless the input is exactly a cursor we sealed for that scope.
#![no_main]

use dynapage::domain::{RatingSet, Sku};
use dynapage::pagination::{CursorCodec, CursorScope};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let codec = CursorCodec::development();
    let scope = CursorScope { sku: Sku::parse("FUZZ").expect("sku"), ratings: RatingSet::ALL };
    if let Ok(input) = std::str::from_utf8(data) {
        if let Ok(position) = codec.open(&scope, input) {
            // Only our own sealing can produce an openable cursor; it must round-trip exactly.
            assert_eq!(codec.seal(&scope, &position), input);
        }
    }
});
