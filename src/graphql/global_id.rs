//! Relay global object ids: `base64url("Comment:<ulid>")`, `base64url("Product:<sku>")` and
//! `base64url("ModerationEntry:<ulid>")`.
//!
//! Opaque to clients, so the id scheme can change, yet decodable without a lookup, so `node(id:)`
//! knows which type to fetch.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

use crate::domain::{CommentId, EntryId, InvalidInput, Sku};

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
            GlobalId::Comment(id) => format!("Comment:{id}"),
            GlobalId::Product(sku) => format!("Product:{sku}"),
            GlobalId::ModerationEntry(id) => format!("ModerationEntry:{id}"),
            GlobalId::Report(comment, reporter) => format!("Report:{comment}:{reporter}"),
        };
        URL_SAFE_NO_PAD.encode(raw)
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
}
