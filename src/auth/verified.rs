//! Tokens verified recently, so a client that sends the same token on every request pays for
//! its signature once a minute rather than on every request.
//!
//! Measured (BENCHMARKS.md): verifying an EdDSA token costs about 34 µs, and a server whose
//! every read carried one served 0.67× the reads of one without tokens. A client keeps its
//! token for minutes to an hour, so nearly every request repeats one seen a moment ago.
//!
//! An entry is the whole token (a different byte anywhere is another entry: nothing is inferred
//! from a part of it) and the viewer it verified as, kept until the token expires or for
//! [`TTL`], whichever comes first, and only while the key set has the generation it was
//! verified under: once a fetch finds a key withdrawn, every token is verified again, so a
//! withdrawn key stops working at once even for tokens seen before. Failures are never kept. The map is bounded; when
//! full it is emptied, which costs one verification per client.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::Viewer;

/// Longest time a verified token is trusted without verifying it again.
pub(super) const TTL: Duration = Duration::from_secs(60);
/// Tokens kept at most (a few MB of tokens at most).
pub(super) const CAPACITY: usize = 4_096;

/// A verified token: who it is, until when it is trusted, and the key set's generation it was
/// verified under (`KeyCache::generation`).
type Entry = (Viewer, Instant, u64);

#[derive(Debug, Default)]
pub(super) struct VerifiedTokens {
    entries: Mutex<HashMap<String, Entry>>,
}

impl VerifiedTokens {
    /// The viewer `token` verified as, if it did within [`TTL`], has not expired since, and no
    /// key was withdrawn since (`generation` is the key set's now).
    pub(super) fn get(&self, token: &str, now: Instant, generation: u64) -> Option<Viewer> {
        let entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        match entries.get(token) {
            Some((viewer, until, verified_in)) if now < *until && *verified_in == generation => {
                Some(viewer.clone())
            }
            _ => None,
        }
    }

    /// Keeps `token` as verified for `viewer`, under the key set's `generation` (read before
    /// the token was verified), until `expires_in` from `now` (the token's remaining life) or
    /// [`TTL`], whichever is shorter.
    pub(super) fn insert(
        &self,
        token: &str,
        viewer: &Viewer,
        now: Instant,
        expires_in: Duration,
        generation: u64,
    ) {
        let until = now + expires_in.min(TTL);
        let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        if entries.len() >= CAPACITY && !entries.contains_key(token) {
            entries.retain(|_, (_, kept_until, _)| now < *kept_until);
            if entries.len() >= CAPACITY {
                entries.clear();
            }
        }
        entries.insert(token.to_owned(), (viewer.clone(), until, generation));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn viewer(sub: &str) -> Viewer {
        Viewer {
            sub: sub.into(),
            name: Some(sub.into()),
            moderator: false,
            merchant: false,
            privacy: false,
        }
    }

    #[test]
    fn a_token_is_kept_until_it_expires_or_for_the_ttl_whichever_is_first() {
        let cache = VerifiedTokens::default();
        let now = Instant::now();
        cache.insert("short", &viewer("a"), now, Duration::from_secs(5), 0);
        cache.insert("long", &viewer("b"), now, Duration::from_secs(3_600), 0);
        assert_eq!(cache.get("short", now, 0), Some(viewer("a")));
        assert_eq!(cache.get("short", now + Duration::from_secs(5), 0), None);
        assert_eq!(
            cache.get("long", now + TTL - Duration::from_millis(1), 0),
            Some(viewer("b"))
        );
        assert_eq!(cache.get("long", now + TTL, 0), None);
        assert_eq!(
            cache.get("longer", now, 0),
            None,
            "only the whole token matches"
        );
        assert_eq!(
            cache.get("long", now, 1),
            None,
            "a key was withdrawn since: verify again"
        );
    }

    #[test]
    fn a_full_cache_drops_what_expired_and_else_starts_over() {
        let cache = VerifiedTokens::default();
        let now = Instant::now();
        for i in 0..CAPACITY {
            let life = if i == 0 { 1 } else { 3_600 };
            cache.insert(
                &format!("t{i}"),
                &viewer("x"),
                now,
                Duration::from_secs(life),
                0,
            );
        }
        // t0 has expired: dropping it makes room, the others stay.
        let later = now + Duration::from_secs(2);
        cache.insert("new", &viewer("n"), later, Duration::from_secs(60), 0);
        assert_eq!(cache.get("t0", later, 0), None);
        assert_eq!(cache.get("t1", later, 0), Some(viewer("x")));
        // Full again with nothing expired: it starts over.
        cache.insert("newer", &viewer("m"), later, Duration::from_secs(60), 0);
        assert_eq!(cache.get("t1", later, 0), None);
        assert_eq!(cache.get("newer", later, 0), Some(viewer("m")));
    }
}
