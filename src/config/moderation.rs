//! How new comments reach the public (`--moderation`), and the name the shop answers them in
//! (`--shop-name`).

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

/// How new comments reach the public, and whose name replies carry.
#[derive(Args, Clone, Debug)]
pub struct ModerationArgs {
    /// `post`: a new comment is published at once (moderators may hide it later); `pre`: it is
    /// pending until a moderator publishes it, and an author's edit of a published comment
    /// returns it to pending. `pre` needs `--auth jwt` (without tokens nobody is a moderator,
    /// so nothing could ever be published).
    #[arg(long, env = "DYNAPAGE_MODERATION", value_enum, default_value = "post")]
    pub moderation: ModerationMode,
    /// The name the shop's replies are signed with (`Reply.author`).
    #[arg(long, env = "DYNAPAGE_SHOP_NAME", default_value = "The shop")]
    pub shop_name: String,
    /// Hide a published comment, pending a moderator's review, once this many distinct readers
    /// have open reports on it; 0 (the default) never hides on reports. Off by default because
    /// reports are cheap to mass-produce: a competitor with a few accounts could take down a
    /// shop's best reviews. With it on, keep it well above one reader and watch the `REPORTED`
    /// queue: a moderator's decision publishes the comment again (dismissing the reports) or
    /// confirms the hiding.
    #[arg(
        long,
        env = "DYNAPAGE_REPORT_HIDE_THRESHOLD",
        default_value_t = 0,
        value_parser = clap::value_parser!(u32).range(0..=crate::domain::MAX_OPEN_REPORTS as i64)
    )]
    pub report_hide_threshold: u32,
}

impl ModerationArgs {
    /// The shop's name for replies: cleaned like a comment's author, and refused when nothing
    /// visible is left or it is longer than an author's name may be.
    pub fn shop_name(&self) -> anyhow::Result<String> {
        let name = crate::domain::text::clean(&self.shop_name);
        if !crate::domain::text::has_visible(&name)
            || name.chars().count() > crate::domain::MAX_AUTHOR_CHARS
        {
            anyhow::bail!(
                "--shop-name (DYNAPAGE_SHOP_NAME) must hold a visible character and be at most {} characters",
                crate::domain::MAX_AUTHOR_CHARS
            );
        }
        Ok(name)
    }

    /// The number of readers whose reports hide a comment (`--report-hide-threshold`); `None`
    /// when reports never hide one.
    pub fn hide_threshold(&self) -> Option<std::num::NonZeroU32> {
        std::num::NonZeroU32::new(self.report_hide_threshold)
    }

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
