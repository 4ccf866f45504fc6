//! Relay global object ids: `base64url("Comment:<ulid>")`, `base64url("Product:<sku>")` and
//! `base64url("ModerationEntry:<ulid>")`.
//!
//! Opaque to clients, so the id scheme can change, yet decodable without a lookup, so `node(id:)`
//! knows which type to fetch.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

use crate::domain::{CommentId, EntryId, InvalidInput, Sku};

const COMMENT_PREFIX: &[u8] = b"Comment:";
/// How long a comment's global id is: the unpadded base64url of `Comment:` and a 26-character
/// ULID.
pub(super) const COMMENT_ID_CHARS: usize =
    ((COMMENT_PREFIX.len() + ulid::ULID_LEN) * 4).div_ceil(3);

/// A decoded global id.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GlobalId {
    /// A comment's id: `Comment:<ulid>`.
    Comment(CommentId),
    /// A product's id: `Product:<sku>`.
    Product(Sku),
    /// A moderation log entry's id: `ModerationEntry:<ulid>`.
    ModerationEntry(EntryId),
    /// A report's id: `Report:<comment ulid>:<reporter's sub>` (one report per comment and
    /// reader; only its reader and moderators ever see it).
    Report(CommentId, String),
}

impl GlobalId {
    /// The id as clients see it: the unpadded base64url of `Comment:<ulid>` or `Product:<sku>`.
    pub fn encode(&self) -> String {
        let raw = match self {
            GlobalId::Comment(id) => {
                let text = Self::comment_text(*id);
                return std::str::from_utf8(&text)
                    .unwrap_or_else(|_| unreachable!("base64url is ASCII"))
                    .to_owned();
            }
            GlobalId::Product(sku) => format!("Product:{sku}"),
            GlobalId::ModerationEntry(id) => format!("ModerationEntry:{id}"),
            GlobalId::Report(comment, reporter) => format!("Report:{comment}:{reporter}"),
        };
        URL_SAFE_NO_PAD.encode(raw)
    }

    /// A comment's id as [`GlobalId::encode`] writes it, on the stack: the one written for
    /// every comment of a page, with no formatter and no intermediate string. base64url
    /// characters only, nothing a JSON string escapes.
    pub(super) fn comment_text(id: CommentId) -> [u8; COMMENT_ID_CHARS] {
        let mut raw = [0u8; COMMENT_PREFIX.len() + ulid::ULID_LEN];
        raw[..COMMENT_PREFIX.len()].copy_from_slice(COMMENT_PREFIX);
        let text: &mut [u8; ulid::ULID_LEN] = (&mut raw[COMMENT_PREFIX.len()..])
            .try_into()
            .unwrap_or_else(|_| unreachable!("the buffer holds a ULID after the prefix"));
        id.write_text(text);
        crate::base64url::encode_array(&raw)
    }

    /// The id [`GlobalId::encode`] wrote; any other text is refused as `id`.
    pub fn decode(id: &str) -> Result<Self, InvalidInput> {
        let bad = || InvalidInput::new("id", "is not a valid global id");
        let raw = URL_SAFE_NO_PAD.decode(id).map_err(|_| bad())?;
        let raw = std::str::from_utf8(&raw).map_err(|_| bad())?;
        match raw.split_once(':') {
            Some(("Comment", id)) => Ok(GlobalId::Comment(id.parse().map_err(|_| bad())?)),
            Some(("Product", sku)) => Ok(GlobalId::Product(Sku::parse(sku).map_err(|_| bad())?)),
            Some(("ModerationEntry", id)) => {
                Ok(GlobalId::ModerationEntry(id.parse().map_err(|_| bad())?))
            }
            Some(("Report", rest)) => match rest.split_once(':') {
                Some((comment, reporter)) if !reporter.is_empty() => Ok(GlobalId::Report(
                    comment.parse().map_err(|_| bad())?,
                    reporter.to_owned(),
                )),
                _ => Err(bad()),
            },
            _ => Err(bad()),
        }
    }

    /// The comment id of a mutation's `commentId` argument ([`GlobalId::comment`], the refusal
    /// naming that argument).
    pub fn comment_argument(id: &str) -> Result<CommentId, InvalidInput> {
        Self::comment(id).map_err(|e| InvalidInput {
            field: "commentId",
            ..e
        })
    }

    /// The comment id, refusing ids of other types (e.g. a product id given to `deleteComment`).
    pub fn comment(id: &str) -> Result<CommentId, InvalidInput> {
        match Self::decode(id)? {
            GlobalId::Comment(id) => Ok(id),
            GlobalId::Product(_) => Err(InvalidInput::new("id", "names a product, not a comment")),
            GlobalId::ModerationEntry(_) => Err(InvalidInput::new(
                "id",
                "names a moderation log entry, not a comment",
            )),
            GlobalId::Report(..) => Err(InvalidInput::new("id", "names a report, not a comment")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_refuses_garbage() {
        let comment = GlobalId::Comment(CommentId::from_parts(1, 2));
        assert_eq!(GlobalId::decode(&comment.encode()), Ok(comment));
        let product = GlobalId::Product(Sku::parse("SKU-1").expect("sku"));
        assert_eq!(GlobalId::decode(&product.encode()), Ok(product.clone()));
        assert!(GlobalId::comment(&product.encode()).is_err());
        let report = GlobalId::Report(CommentId::from_parts(1, 2), "auth0|a:b".into());
        assert_eq!(GlobalId::decode(&report.encode()), Ok(report));
        for bad in ["", "!!", "Q29tbWVudDp4", &URL_SAFE_NO_PAD.encode("User:1")] {
            assert!(GlobalId::decode(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn a_comment_id_is_the_base64url_of_its_text() {
        let mut state = 7u64;
        for _ in 0..1_000 {
            state = crate::domain::splitmix(state);
            let random = u128::from(state) << 64 | u128::from(crate::domain::splitmix(!state));
            let id = CommentId::from_parts(state >> 17, random);
            assert_eq!(
                GlobalId::Comment(id).encode(),
                URL_SAFE_NO_PAD.encode(format!("Comment:{id}")),
                "{id}"
            );
        }
    }
}
