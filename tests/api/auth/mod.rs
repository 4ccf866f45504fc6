//! Who may write (`src/auth`): tokens from an identity provider, authors and moderators.

mod writes;
