//! Helpful votes: who votes, and what a vote did.
//!
//! A voter is named by a pseudonym ([`VoterId`]), never by what identifies them: the store
//! keeps one vote per pseudonym and comment, so the same viewer always gets the same one, and
//! nobody reading the table learns a token's subject or a client's address from it directly.
//! (It is a hash, not anonymisation: whoever can list the candidates, e.g. every IPv4 address,
//! can hash them all.)

use std::fmt;
use std::str::FromStr;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use sha2::{Digest, Sha256};

use super::comment::{Comment, VersionCeiling};

/// A voter's pseudonym: the first 16 bytes of SHA-256 of the viewer's identity. Written as 22
/// base64url characters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct VoterId([u8; 16]);

impl VoterId {
    /// The pseudonym of `identity`: `sub:<subject>` for a verified token, `ip:<address>` for a
    /// client address (what the rate limiter keys budgets by, so one principal is one voter
    /// exactly as it is one budget).
    pub fn of(identity: &str) -> Self {
        let digest = Sha256::new()
            .chain_update(b"dynapage helpful vote\n")
            .chain_update(identity.as_bytes())
            .finalize();
        let mut bytes = [0; 16];
        bytes.copy_from_slice(&digest[..16]);
        Self(bytes)
    }

    /// The pseudonym's 16 bytes.
    pub fn to_bytes(self) -> [u8; 16] {
        self.0
    }

    /// The pseudonym whose bytes are `bytes` ([`VoterId::to_bytes`]).
    pub fn from_bytes(bytes: [u8; 16]) -> Self {
        Self(bytes)
    }
}

impl fmt::Display for VoterId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&URL_SAFE_NO_PAD.encode(self.0))
    }
}

/// A text that is not a voter's pseudonym.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("not a voter id (22 base64url characters)")]
pub struct BadVoterId;

impl FromStr for VoterId {
    type Err = BadVoterId;

    fn from_str(text: &str) -> Result<Self, BadVoterId> {
        let bytes = URL_SAFE_NO_PAD.decode(text).map_err(|_| BadVoterId)?;
        let bytes = <[u8; 16]>::try_from(bytes.as_slice()).map_err(|_| BadVoterId)?;
        Ok(Self(bytes))
    }
}

/// Who marks a comment helpful.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Voter {
    /// The voter's pseudonym: the store keeps one vote per pseudonym and comment.
    pub id: VoterId,
    /// The verified token's subject, if any: a comment whose `author_sub` it is was written by
    /// this voter ([`Voter::wrote`]).
    pub sub: Option<String>,
}

impl Voter {
    /// The voter a verified token names.
    pub fn signed_in(sub: &str) -> Self {
        Self {
            id: VoterId::of(&format!("sub:{sub}")),
            sub: Some(sub.to_owned()),
        }
    }

    /// A voter known only by a client identity (`ip:<address>` under `--auth off`).
    pub fn anonymous(identity: &str) -> Self {
        Self {
            id: VoterId::of(identity),
            sub: None,
        }
    }

    /// Whether this voter wrote `comment`: then they may not mark it helpful (the own-comment
    /// rule). Only a signed-in voter and a comment written under `--auth jwt` can match.
    pub fn wrote(&self, comment: &Comment) -> bool {
        self.sub.is_some() && comment.author_sub == self.sub
    }
}

impl Comment {
    /// The comment after a vote was recorded (`helpful`) or taken back: the count moved by one,
    /// and its next version ([`Comment::next_version`], refused at the ceiling). Nothing else
    /// changes: a vote is not an edit (`updated_at` stays).
    pub fn after_vote(&self, helpful: bool) -> Result<Comment, VersionCeiling> {
        Ok(Comment {
            helpful_count: if helpful {
                self.helpful_count.saturating_add(1)
            } else {
                self.helpful_count.saturating_sub(1)
            },
            version: self.next_version()?,
            ..self.clone()
        })
    }
}

/// What a vote did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Voted {
    /// The comment as it is after the call.
    pub comment: Comment,
    /// Whether the call changed anything: a vote recorded or taken back. `false` for a second
    /// `helpful: true` and for a `helpful: false` without a vote, which write nothing.
    pub changed: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_voter_id_is_stable_distinct_and_round_trips_its_text() {
        let ann = VoterId::of("sub:ann");
        assert_eq!(ann, VoterId::of("sub:ann"));
        assert_ne!(ann, VoterId::of("sub:bob"));
        assert_ne!(ann, VoterId::of("ip:ann"));
        let text = ann.to_string();
        assert_eq!(text.len(), 22);
        assert_eq!(text.parse(), Ok(ann));
        assert_eq!("short".parse::<VoterId>(), Err(BadVoterId));
        assert_eq!(VoterId::from_bytes(ann.to_bytes()), ann);
    }
}
