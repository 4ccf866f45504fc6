//! AES-256-GCM-SIV sealing (RFC 8452) under the one nonce cursors use, with the nonce's keys
//! derived once.
//!
//! Cursors are sealed with a fixed nonce (the all-zero one; `mod.rs` says why that is safe for
//! GCM-SIV). RFC 8452 derives a message-authentication key and a message-encryption key from
//! the key-generating key and the nonce for every message: with one nonce they are the same
//! for every message, yet `aes-gcm-siv` derives them, expands the encryption key and keys
//! POLYVAL again for each of a page's 20 or more cursors (with the allocations around them,
//! about 700 of the 2,400 instructions a cursor cost, callgrind; BENCHMARKS.md, "An uncached
//! page's instructions"). [`Sealer`] derives them once
//! per key and then does only what depends on the message: POLYVAL over the associated data
//! and the plaintext, the tag, and counter mode over the plaintext's one or two blocks.
//!
//! Its output is `aes-gcm-siv`'s, byte for byte (the tests compare them on random keys,
//! associated data and messages); opening stays with `aes-gcm-siv`, whose tag check is
//! constant-time. This can go if `aes-gcm-siv` keeps a nonce's keys (it cannot today: the
//! per-nonce cipher is private).

use aes::Aes256Enc;
use aes::cipher::{Array, BlockCipherEncrypt, KeyInit};
use polyval::Polyval;
use polyval::universal_hash::UniversalHash;

/// The nonce every cursor is sealed under: all zeros (`Nonce::default()`).
const NONCE: [u8; 12] = [0; 12];

/// Seals messages under [`NONCE`] with one key's derived keys.
#[derive(Clone)]
pub(super) struct Sealer {
    /// The message-encryption key, expanded.
    encryption: Aes256Enc,
    /// POLYVAL keyed with the message-authentication key, before any block.
    authentication: Polyval,
}

impl Sealer {
    /// The sealer of the AES-256 key `key` (RFC 8452 §4: the derived keys are the first halves
    /// of the encryptions of counter ‖ nonce for counters 0 to 5).
    pub(super) fn new(key: &[u8; 32]) -> Self {
        let key_generating = Aes256Enc::new(&Array::from(*key));
        let mut derived = [0u8; 48];
        for (counter, half) in derived.chunks_exact_mut(8).enumerate() {
            let mut block = Array::<u8, _>::default();
            let counter = u32::try_from(counter).expect("six counters");
            block[..4].copy_from_slice(&counter.to_le_bytes());
            block[4..].copy_from_slice(&NONCE);
            key_generating.encrypt_block(&mut block);
            half.copy_from_slice(&block[..8]);
        }
        let (mac, enc) = derived.split_at(16);
        Self {
            encryption: Aes256Enc::new(&Array::try_from(enc).expect("32 bytes")),
            authentication: Polyval::new(&Array::try_from(mac).expect("16 bytes")),
        }
    }

    /// Writes `plain` encrypted and then its tag into `out`, which is exactly 16 bytes longer
    /// than `plain`: what `aes-gcm-siv`'s `encrypt` returns under [`NONCE`] with `aad` (RFC 8452
    /// §4).
    pub(super) fn seal(&self, aad: &[u8], plain: &[u8], out: &mut [u8]) {
        debug_assert_eq!(out.len(), plain.len() + 16, "room for the text and its tag");
        let mut polyval = self.authentication.clone();
        polyval.update_padded(aad);
        polyval.update_padded(plain);
        let mut lengths = Array::<u8, _>::default();
        lengths[..8].copy_from_slice(&(aad.len() as u64 * 8).to_le_bytes());
        lengths[8..].copy_from_slice(&(plain.len() as u64 * 8).to_le_bytes());
        polyval.update(&[lengths]);
        let mut tag = polyval.finalize();
        // The nonce is XORed into the first 12 bytes: all zeros, so nothing changes.
        tag[15] &= 0x7f;
        self.encryption.encrypt_block(&mut tag);

        let (text, tag_out) = out.split_at_mut(plain.len());
        let mut counter = tag;
        counter[15] |= 0x80;
        for (chunk, text) in plain.chunks(16).zip(text.chunks_mut(16)) {
            let mut stream = counter;
            self.encryption.encrypt_block(&mut stream);
            for ((t, p), k) in text.iter_mut().zip(chunk).zip(stream.iter()) {
                *t = p ^ k;
            }
            let next =
                u32::from_le_bytes(counter[..4].try_into().expect("four bytes")).wrapping_add(1);
            counter[..4].copy_from_slice(&next.to_le_bytes());
        }
        tag_out.copy_from_slice(&tag);
    }
}

#[cfg(test)]
mod tests {
    use aes_gcm_siv::aead::{Aead, KeyInit as _, Payload};
    use aes_gcm_siv::{Aes256GcmSiv, Nonce};
    use proptest::prelude::*;

    use super::*;

    fn crate_sealed(key: &[u8; 32], aad: &[u8], plain: &[u8]) -> Vec<u8> {
        Aes256GcmSiv::new(&(*key).into())
            .encrypt(&Nonce::default(), Payload { msg: plain, aad })
            .expect("small message")
    }

    fn sealed(key: &[u8; 32], aad: &[u8], plain: &[u8]) -> Vec<u8> {
        let mut out = vec![0; plain.len() + 16];
        Sealer::new(key).seal(aad, plain, &mut out);
        out
    }

    proptest! {
        /// The same bytes as `aes-gcm-siv` for any key, associated data and message, including
        /// empty ones and lengths on and off a block's boundary.
        #[test]
        fn seals_as_aes_gcm_siv_does(
            key in any::<[u8; 32]>(),
            aad in proptest::collection::vec(any::<u8>(), 0..80),
            plain in proptest::collection::vec(any::<u8>(), 0..80),
        ) {
            prop_assert_eq!(sealed(&key, &aad, &plain), crate_sealed(&key, &aad, &plain));
        }
    }
}
