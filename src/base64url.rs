//! Unpadded base64url, written for the short texts of every page: cursors and comment ids.
//!
//! The `base64` crate's engine is built for long inputs: its fast loop takes 24 bytes at a time
//! and only while 26 remain, so most of a 42-byte cursor goes through its slow path; its
//! `encode` took about 630 instructions for one (370 encoding, the rest a zeroed buffer, a
//! UTF-8 check and the allocation), for 20 cursors and 20 ids a page (callgrind; BENCHMARKS.md,
//! "An uncached page's instructions"). This loop writes the same characters where they go. Decoding, and every other text, stays with `base64`; the tests
//! compare the two on every length. This can go if `base64` grows a fast path for short inputs.

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/// How many characters the unpadded base64url of `len` bytes has.
pub const fn encoded_len(len: usize) -> usize {
    (len * 4).div_ceil(3)
}

/// Writes the unpadded base64url of `bytes` into `text`, which is exactly
/// [`encoded_len`]`(bytes.len())` long.
fn encode_into(bytes: &[u8], text: &mut [u8]) {
    let char_at = |group: u32, shift: u32| ALPHABET[(group >> shift & 63) as usize];
    let groups = bytes.chunks_exact(3);
    let rest = groups.remainder();
    let mut quads = text.chunks_exact_mut(4);
    for (group, quad) in groups.zip(&mut quads) {
        let group = u32::from(group[0]) << 16 | u32::from(group[1]) << 8 | u32::from(group[2]);
        quad[0] = char_at(group, 18);
        quad[1] = char_at(group, 12);
        quad[2] = char_at(group, 6);
        quad[3] = char_at(group, 0);
    }
    let tail = quads.into_remainder();
    match (rest, tail) {
        (&[a], [c0, c1]) => {
            let group = u32::from(a) << 16;
            (*c0, *c1) = (char_at(group, 18), char_at(group, 12));
        }
        (&[a, b], [c0, c1, c2]) => {
            let group = u32::from(a) << 16 | u32::from(b) << 8;
            (*c0, *c1, *c2) = (char_at(group, 18), char_at(group, 12), char_at(group, 6));
        }
        (rest, tail) => debug_assert!(rest.is_empty() && tail.is_empty(), "a wrong length"),
    }
}

/// The unpadded base64url of `bytes` (what `base64`'s `URL_SAFE_NO_PAD.encode` returns).
pub fn encode(bytes: &[u8]) -> String {
    let mut text = vec![0; encoded_len(bytes.len())];
    encode_into(bytes, &mut text);
    String::from_utf8(text).unwrap_or_else(|_| unreachable!("base64url is ASCII"))
}

/// The unpadded base64url of `bytes` in an array of exactly its length, `N`.
pub fn encode_array<const N: usize>(bytes: &[u8]) -> [u8; N] {
    debug_assert_eq!(encoded_len(bytes.len()), N);
    let mut text = [0; N];
    encode_into(bytes, &mut text);
    text
}

#[cfg(test)]
mod tests {
    use base64::Engine as _;
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;
    use proptest::prelude::*;

    use super::*;

    proptest! {
        /// The same text as `base64` for any bytes, on and off a group's boundary.
        #[test]
        fn encodes_as_the_base64_crate_does(
            bytes in proptest::collection::vec(any::<u8>(), 0..100),
        ) {
            let expected = URL_SAFE_NO_PAD.encode(&bytes);
            prop_assert_eq!(encoded_len(bytes.len()), expected.len());
            prop_assert_eq!(encode(&bytes), expected);
        }
    }

    #[test]
    fn every_length_and_every_character() {
        let all: Vec<u8> = (0..=255).collect();
        for len in 0..all.len() {
            assert_eq!(
                encode(&all[..len]),
                URL_SAFE_NO_PAD.encode(&all[..len]),
                "{len}"
            );
        }
        let array: [u8; 46] = encode_array(&all[200..234]);
        assert_eq!(array, URL_SAFE_NO_PAD.encode(&all[200..234]).as_bytes());
    }
}
