//! Tokens verified recently, so a client that sends the same token on every request pays for
//! its signature once a minute rather than on every request.
//!
//! Measured (BENCHMARKS.md): verifying an EdDSA token costs about 34 µs, and a server whose
//! every read carried one served 0.67× the reads of one without tokens. A client keeps its
//! token for minutes to an hour, so nearly every request repeats one seen a moment ago.
//!
//! An entry is the whole token (a different byte anywhere is another entry: nothing is inferred
//! from a part of it) and the viewer it verified as, kept until the token expires or for
//! [`TTL`], whichever comes first: a key the provider withdraws stops verifying tokens within
//! [`TTL`] even when they were seen before. Failures are never kept. The map is bounded; when
//! full it is emptied, which costs one verification per client.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::Viewer;

/// Longest time a verified token is trusted without verifying it again.
pub const TTL: Duration = Duration::from_secs(60);
/// Tokens kept at most (a few MB of tokens at most).
pub const CAPACITY: usize = 4_096;

#[derive(Debug, Default)]
pub struct VerifiedTokens {
    entries: Mutex<HashMap<String, (Viewer, Instant)>>,
}

impl VerifiedTokens {
    /// The viewer `token` verified as, if it did within [`TTL`] and has not expired since.
    pub fn get(&self, token: &str, now: Instant) -> Option<Viewer> {
        let entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        match entries.get(token) {
            Some((viewer, until)) if now < *until => Some(viewer.clone()),
            _ => None,
        }
    }

    /// Keeps `token` as verified for `viewer` until `expires_in` from `now` (the token's
    /// remaining life) or [`TTL`], whichever is shorter.
    pub fn insert(&self, token: &str, viewer: &Viewer, now: Instant, expires_in: Duration) {
        let until = now + expires_in.min(TTL);
        let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        if entries.len() >= CAPACITY && !entries.contains_key(token) {
            entries.retain(|_, (_, kept_until)| now < *kept_until);
            if entries.len() >= CAPACITY {
                entries.clear();
            }
        }
        entries.insert(token.to_owned(), (viewer.clone(), until));
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
        }
    }

    #[test]
    fn a_token_is_kept_until_it_expires_or_for_the_ttl_whichever_is_first() {
        let cache = VerifiedTokens::default();
        let now = Instant::now();
        cache.insert("short", &viewer("a"), now, Duration::from_secs(5));
        cache.insert("long", &viewer("b"), now, Duration::from_secs(3_600));
        assert_eq!(cache.get("short", now), Some(viewer("a")));
        assert_eq!(cache.get("short", now + Duration::from_secs(5)), None);
        assert_eq!(
            cache.get("long", now + TTL - Duration::from_millis(1)),
            Some(viewer("b"))
        );
        assert_eq!(cache.get("long", now + TTL), None);
        assert_eq!(
            cache.get("longer", now),
            None,
            "only the whole token matches"
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
            );
        }
        // t0 has expired: dropping it makes room, the others stay.
        let later = now + Duration::from_secs(2);
        cache.insert("new", &viewer("n"), later, Duration::from_secs(60));
        assert_eq!(cache.get("t0", later), None);
        assert_eq!(cache.get("t1", later), Some(viewer("x")));
        // Full again with nothing expired: it starts over.
        cache.insert("newer", &viewer("m"), later, Duration::from_secs(60));
        assert_eq!(cache.get("t1", later), None);
        assert_eq!(cache.get("newer", later), Some(viewer("m")));
    }
}
