//! A refused value, shared by every constructor that checks input (ids, ratings, drafts), so
//! those modules depend on this one and not on each other.

/// A refused value: which field, and why, in words fit for a client.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("`{field}` {reason}")]
pub struct InvalidInput {
    pub field: &'static str,
    pub reason: std::borrow::Cow<'static, str>,
}

impl InvalidInput {
    pub fn new(field: &'static str, reason: &'static str) -> Self {
        Self {
            field,
            reason: reason.into(),
        }
    }

    pub fn owned(field: &'static str, reason: String) -> Self {
        Self {
            field,
            reason: reason.into(),
        }
    }
}
