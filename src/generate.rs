//! Reproducible demo and test comments: plausible text, ratings skewed like real reviews, and many
//! equal timestamps, because ties are where pagination bugs hide (the order invariant of
//! `docs/architecture.md`).
//!
//! Comments are produced lazily, newest first, so `seed` can write millions without holding
//! them in memory.

use crate::domain::{Comment, CommentId, MAX_BODY_CHARS, Rating, Sku, splitmix};

const AUTHORS: &[&str] = &[
    "Thomas",
    "Guy-Manuel",
    "Nile",
    "Giorgio",
    "Pharrell",
    "Todd",
    "Julian",
    "Panda",
    "Chilly",
    "Paul",
    "Casablancas",
    "Romanthony",
    "DJ Falcon",
    "Nancy",
    "Todd E.",
    "Gonzales",
];
const OPENINGS: &[&str] = &[
    "Great fit,",
    "Colours faded after a wash,",
    "Exactly as pictured,",
    "Runs a size small,",
    "Love it:",
    "Meh:",
    "Arrived quickly,",
    "Fabric feels premium,",
    "Print cracked,",
    "Bought two,",
];
const CLOSINGS: &[&str] = &[
    "would buy again.",
    "one more time.",
    "harder, better, faster, stronger.",
    "around the world in it.",
    "not worth the price.",
    "my kids stole it.",
    "the helmet sold separately, sadly.",
    "digital love.",
    "something about us.",
    "get lucky with the sizing.",
];
/// Weights of ratings 1..5: reviews lean positive.
const RATING_WEIGHTS: [u64; 5] = [8, 7, 15, 30, 40];

/// An endless, reproducible stream of comments for one product, newest first.
#[derive(Clone, Debug)]
pub struct CommentGenerator {
    sku: Sku,
    state: u64,
    millis: u64,
    body_bytes: usize,
}

impl CommentGenerator {
    /// Comments of `sku` going back in time from `newest_millis`; `seed` fixes the sequence.
    pub fn new(sku: Sku, seed: u64, newest_millis: u64) -> Self {
        Self {
            sku,
            state: splitmix(seed ^ 0xD1A7_9A6E),
            millis: newest_millis,
            body_bytes: 0,
        }
    }

    /// Bodies of `bytes` bytes (at most [`MAX_BODY_CHARS`]): each shorter body goes on with
    /// more sentences, picked from the comment's own id, so that ids, ratings, authors and
    /// times are those of the same seed without it. 0 (the default) keeps the short bodies.
    pub fn with_body_bytes(mut self, bytes: usize) -> Self {
        self.body_bytes = bytes.min(MAX_BODY_CHARS);
        self
    }

    fn next_u64(&mut self) -> u64 {
        self.state = splitmix(self.state);
        self.state
    }

    fn pick<'a>(&mut self, items: &'a [&'a str]) -> &'a str {
        items[(self.next_u64() % items.len() as u64) as usize]
    }
}

impl Iterator for CommentGenerator {
    type Item = Comment;

    fn next(&mut self) -> Option<Comment> {
        // One comment in four shares its millisecond with the previous one.
        let gap = match self.next_u64() % 4 {
            0 => 0,
            _ => 1 + self.next_u64() % 90_000,
        };
        self.millis = self.millis.saturating_sub(gap);
        let roll = self.next_u64() % RATING_WEIGHTS.iter().sum::<u64>();
        let mut acc = 0;
        let stars = RATING_WEIGHTS.iter().position(|w| {
            acc += w;
            roll < acc
        });
        let rating = Rating::ALL[stars.unwrap_or(4)];
        let mut body = format!("{} {}", self.pick(OPENINGS), self.pick(CLOSINGS));
        let author = self.pick(AUTHORS).to_owned();
        let random = (u128::from(self.next_u64()) << 64) | u128::from(self.next_u64());
        lengthen(&mut body, self.body_bytes, random as u64);
        Some(Comment {
            id: CommentId::from_parts(self.millis, random),
            sku: self.sku.clone(),
            author,
            author_sub: None,
            body,
            rating,
            created_at_ms: self.millis,
            updated_at_ms: None,
            version: 1,
            helpful_count: 0,
            moderation: crate::domain::Moderation::default(),
            purchase: None,
            reply: None,
            reporters: Vec::new(),
        })
    }
}

/// A `body` shorter than `bytes` goes on with sentences until it holds exactly `bytes` bytes
/// (the phrases are ASCII, so any cut is a character boundary); `seed` picks the sentences.
fn lengthen(body: &mut String, bytes: usize, seed: u64) {
    if body.len() >= bytes {
        return;
    }
    let mut state = seed;
    while body.len() < bytes {
        state = splitmix(state);
        let opening = OPENINGS[(state % OPENINGS.len() as u64) as usize];
        let closing = CLOSINGS[((state >> 32) % CLOSINGS.len() as u64) as usize];
        body.push(' ');
        body.push_str(opening);
        body.push(' ');
        body.push_str(closing);
    }
    body.truncate(bytes);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn is_reproducible_newest_first_with_ties_and_every_rating() {
        let sku = Sku::parse("S").expect("sku");
        let a: Vec<Comment> = CommentGenerator::new(sku.clone(), 7, 1_700_000_000_000)
            .take(2_000)
            .collect();
        let b: Vec<Comment> = CommentGenerator::new(sku, 7, 1_700_000_000_000)
            .take(2_000)
            .collect();
        assert_eq!(a, b);
        assert!(
            a.windows(2)
                .all(|w| w[0].created_at_ms >= w[1].created_at_ms)
        );
        assert!(
            a.windows(2)
                .filter(|w| w[0].created_at_ms == w[1].created_at_ms)
                .count()
                > 300,
            "ties"
        );
        for rating in Rating::ALL {
            assert!(a.iter().any(|c| c.rating == rating));
        }
    }

    #[test]
    fn long_bodies_keep_everything_else_of_the_seed() {
        let sku = Sku::parse("S").expect("sku");
        let short: Vec<Comment> = CommentGenerator::new(sku.clone(), 7, 1_700_000_000_000)
            .take(500)
            .collect();
        let long: Vec<Comment> = CommentGenerator::new(sku, 7, 1_700_000_000_000)
            .with_body_bytes(1024)
            .take(500)
            .collect();
        for (s, l) in short.iter().zip(&long) {
            assert_eq!(l.body.len(), 1024);
            assert!(l.body.starts_with(&s.body), "{:?}", l.body);
            assert_eq!((&l.id, l.rating, &l.author), (&s.id, s.rating, &s.author));
            assert_eq!(l.created_at_ms, s.created_at_ms);
        }
        assert!(
            long.windows(2).any(|w| w[0].body[40..] != w[1].body[40..]),
            "the sentences differ between comments"
        );
    }
}
