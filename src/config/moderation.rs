//! How new comments reach the public: `--moderation`.

use clap::{Args, ValueEnum};

/// When a comment becomes public (`--moderation`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum ModerationMode {
    /// A new comment is published at once; moderators hide what breaks the rules.
    #[default]
    Post,
    /// A new comment waits for a moderator (pending), and an author's edit of a published
    /// comment sends it back to review.
    Pre,
}

/// How new comments reach the public.
#[derive(Args, Clone, Debug)]
pub struct ModerationArgs {
    /// `post`: a new comment is published at once (moderators may hide it later); `pre`: it is
    /// pending until a moderator publishes it, and an author's edit of a published comment
    /// returns it to pending. `pre` needs `--auth jwt` (without tokens nobody is a moderator,
    /// so nothing could ever be published).
    #[arg(long, env = "DYNAPAGE_MODERATION", value_enum, default_value = "post")]
    pub moderation: ModerationMode,
}

impl ModerationArgs {
    /// Whether comments wait for a moderator, refused (naming the flags) under `--auth off`.
    pub fn pre(&self, auth: &crate::auth::Auth) -> anyhow::Result<bool> {
        match (self.moderation, auth) {
            (ModerationMode::Post, _) => Ok(false),
            (ModerationMode::Pre, crate::auth::Auth::Jwt(_)) => Ok(true),
            (ModerationMode::Pre, crate::auth::Auth::Off) => anyhow::bail!(
                "--moderation pre (DYNAPAGE_MODERATION) needs --auth jwt: without tokens nobody \
                 is a moderator, and no comment could ever be published"
            ),
        }
    }
}
