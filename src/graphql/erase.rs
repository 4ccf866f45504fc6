//! `Mutation.eraseMyData`: a person erases their own data (GDPR art. 17), or the shop's
//! privacy staff (`--auth-privacy-role`) or a moderator erases anyone's ([`crate::privacy`]).

use async_graphql::{Context, Enum, InputObject, SimpleObject};

use super::error::ApiError;
use super::moderation::signed_in;
use super::state;
use crate::domain;
use crate::privacy::{self, Erasure};

/// What `eraseMyData`'s input must hold in `confirmation` to write anything.
pub(super) const CONFIRMATION: &str = "ERASE MY DATA";

/// What becomes of the person's comments.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Enum)]
#[graphql(remote = "crate::domain::ErasureMode")]
pub(super) enum ErasureMode {
    /// They are deleted.
    Delete,
    /// Each keeps its body, rating and place under the author "Former customer", with the
    /// person's subject removed.
    Anonymize,
}

/// An erasure request.
#[derive(Debug, InputObject)]
pub(super) struct EraseMyDataInput {
    /// `"ERASE MY DATA"`, exactly: what a client asks the person to confirm. Not needed for a
    /// dry run.
    pub confirmation: Option<String>,
    /// What becomes of the comments; `DELETE` when omitted or null.
    pub mode: Option<ErasureMode>,
    /// Count what would be erased and write nothing; `false` when omitted or null.
    pub dry_run: Option<bool>,
    /// Whose data: the viewer's own when omitted. Another person's needs the privacy role
    /// (`--auth-privacy-role`) or the moderator role.
    pub subject: Option<String>,
    /// Echoed back in the payload (Relay).
    pub client_mutation_id: Option<String>,
}

/// What an erasure removed (or, dry, would).
#[derive(Debug, SimpleObject)]
pub(super) struct EraseMyDataPayload {
    /// The mode it ran in.
    pub mode: ErasureMode,
    /// Whether it was a dry run (nothing written).
    pub dry_run: bool,
    /// Comments deleted.
    pub comments_deleted: i64,
    /// Comments kept under "Former customer".
    pub comments_anonymized: i64,
    /// Helpful votes removed (each comment's count one lower).
    pub helpful_votes_removed: i64,
    /// Reports removed.
    pub reports_removed: i64,
    /// The `clientMutationId` of the input.
    pub client_mutation_id: Option<String>,
}

fn count(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// `Mutation.eraseMyData`.
pub(super) async fn erase_my_data(
    ctx: &Context<'_>,
    input: EraseMyDataInput,
) -> async_graphql::Result<EraseMyDataPayload> {
    let state = state(ctx)?;
    let meta = super::meta(ctx);
    let fail = |e: ApiError| e.into_graphql(meta);
    let viewer = signed_in(ctx, state, "erasing data needs a signed-in person").map_err(fail)?;
    let subject = input.subject.clone().unwrap_or_else(|| viewer.sub.clone());
    // No token can name a subject past this (`auth`), so nobody's data is under one: refused
    // before it reaches a store key (DynamoDB refuses keys over 2 KB with an internal error).
    if subject.is_empty()
        || subject.len() > domain::MAX_AUTHOR_SUB_BYTES
        || subject.chars().any(char::is_control)
    {
        return Err(fail(
            domain::InvalidInput::new(
                "subject",
                "must be a token subject: 1 to 255 bytes, no control characters",
            )
            .into(),
        ));
    }
    if !viewer.may_erase(&subject) {
        return Err(fail(ApiError::Forbidden(
            "only the person themselves, a moderator or the privacy role (--auth-privacy-role) \
             may erase a person's data"
                .into(),
        )));
    }
    let mode = input.mode.unwrap_or(ErasureMode::Delete);
    let dry_run = input.dry_run.unwrap_or(false);
    if !dry_run && input.confirmation.as_deref() != Some(CONFIRMATION) {
        return Err(fail(
            domain::InvalidInput::new(
                "confirmation",
                "must be \"ERASE MY DATA\" to erase (or ask with dryRun: true first)",
            )
            .into(),
        ));
    }
    if subject != viewer.sub {
        // Staff erasing someone else's data: who asked is kept in the log (the person is
        // named only by their vote pseudonym, in `privacy::erase`'s line).
        tracing::info!(
            actor = %viewer.sub,
            subject = %privacy::voter_of(&subject),
            "erasure asked for another person"
        );
    }
    let erasure = Erasure {
        sub: subject,
        mode: mode.into(),
        dry_run,
    };
    // Its own task: a client that goes away halfway does not stop it (it would be resumable,
    // but the person asked for it once).
    let store = state.engine.store().clone();
    let task = tokio::spawn(async move { privacy::erase(&store, &erasure, |_| {}).await });
    let receipt = task
        .await
        .map_err(|e| fail(crate::store::StoreError::Internal(e.into()).into()))?
        .map_err(|e| fail(e.into()))?;
    Ok(EraseMyDataPayload {
        mode,
        dry_run,
        comments_deleted: count(receipt.comments_deleted),
        comments_anonymized: count(receipt.comments_anonymized),
        helpful_votes_removed: count(receipt.votes_removed),
        reports_removed: count(receipt.reports_removed),
        client_mutation_id: input.client_mutation_id,
    })
}
