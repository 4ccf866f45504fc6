//! A refused value, shared by every constructor that checks input (ids, ratings, drafts), so
//! those modules depend on this one and not on each other.

/// A refused value: which field, and why, in words fit for a client.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("`{field}` {reason}")]
pub struct InvalidInput {
    /// The refused field's name as the client spells it (`sku`, `rating`, `body`, …).
    pub field: &'static str,
    /// Why, as words that follow the field's name (`must be between 1 and 5`).
    pub reason: std::borrow::Cow<'static, str>,
}

impl InvalidInput {
    /// A refusal of `field` for a fixed `reason`.
    pub fn new(field: &'static str, reason: &'static str) -> Self {
        Self {
            field,
            reason: reason.into(),
        }
    }

    /// A refusal of `field` for a `reason` made at run time.
    pub fn owned(field: &'static str, reason: String) -> Self {
        Self {
            field,
            reason: reason.into(),
        }
    }
}
