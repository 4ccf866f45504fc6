//! `Mutation`: writes go to the store only; the index follows through change events
//! (`docs/architecture.md`, a write).

use async_graphql::{Context, ID, InputObject, Object, SimpleObject};

use super::erase::{EraseMyDataInput, EraseMyDataPayload};
use super::error::ApiError;
use super::global_id::GlobalId;
use super::mark_helpful::{MarkHelpfulInput, MarkHelpfulPayload};
use super::moderate::{
    ModerateCommentInput, ModerateCommentPayload, ReplyToCommentInput, ReplyToCommentPayload,
};
use super::report::{ReportCommentInput, ReportCommentPayload};
use super::state;
use super::types::{Comment, CommentEdge};
use super::viewer::writer;
use crate::auth::Viewer;
use crate::auth::purchase::ProofError;
use crate::clock::now_ms;
use crate::domain::{
    CommentDraft, CommentOrder, CommentPatch, InvalidInput, Moderation, Position, RatingSet,
};
use crate::graphql::ApiState;
use crate::pagination::CursorScope;
use crate::store::CommentStore;

/// The root of every write.
#[derive(Debug, Default)]
pub struct MutationRoot;

/// A new comment.
#[derive(Debug, InputObject)]
pub(super) struct AddCommentInput {
    /// The product's SKU.
    pub sku: String,
    /// Who writes it, 1 to 100 characters: required when the server does not verify tokens
    /// (`--auth off`), refused when it does (the name then comes from the token).
    pub author: Option<String>,
    /// The text, 1 to 4,000 characters (surrounding white space is trimmed).
    pub body: String,
    /// Star rating, 1 to 5.
    pub rating: i32,
    /// A purchase proof: the short token the shop's backend signed for the signed-in author
    /// having bought this product (its `sub`, `sku`, an `order`, `purpose: "review"`). With it
    /// the comment is a verified purchase; a bad, expired or foreign proof, or one already used
    /// for this order and product, is refused (`BAD_USER_INPUT`, saying which check failed) and
    /// nothing is written.
    pub purchase_proof: Option<String>,
    /// Echoed back in the payload (Relay).
    pub client_mutation_id: Option<String>,
}

/// The created comment and its edge, ready to insert at the top of a connection.
#[derive(Debug, SimpleObject)]
pub(super) struct AddCommentPayload {
    /// The created comment.
    pub comment: Comment,
    /// The comment's edge in the product's unfiltered connection.
    pub comment_edge: CommentEdge,
    /// The `clientMutationId` of the input.
    pub client_mutation_id: Option<String>,
}

/// An edit; give `body`, `rating` or both.
#[derive(Debug, InputObject)]
pub(super) struct UpdateCommentInput {
    /// The comment's global id.
    pub id: ID,
    /// The new text, 1 to 4,000 characters.
    pub body: Option<String>,
    /// The new star rating, 1 to 5.
    pub rating: Option<i32>,
    /// Echoed back in the payload (Relay).
    pub client_mutation_id: Option<String>,
}

/// The edited comment.
#[derive(Debug, SimpleObject)]
pub(super) struct UpdateCommentPayload {
    /// The comment as it now is.
    pub comment: Comment,
    /// The `clientMutationId` of the input.
    pub client_mutation_id: Option<String>,
}

/// A deletion.
#[derive(Debug, InputObject)]
pub(super) struct DeleteCommentInput {
    /// The comment's global id.
    pub id: ID,
    /// Echoed back in the payload (Relay).
    pub client_mutation_id: Option<String>,
}

/// What was deleted.
#[derive(Debug, SimpleObject)]
pub(super) struct DeleteCommentPayload {
    /// The deleted comment's global id (for removing it from client caches).
    pub deleted_comment_id: ID,
    /// The `clientMutationId` of the input.
    pub client_mutation_id: Option<String>,
}

/// The author name a token gives, or a refusal naming the claim it lacks: the `sub` is never
/// shown in its place (a provider's user id is not a name, and the docs promise it is never
/// served). Access tokens of Auth0 and Cognito carry no name unless the provider is told to
/// add one.
fn author_name<'a>(state: &ApiState, viewer: &'a Viewer) -> Result<&'a str, ApiError> {
    let claim = match &state.auth {
        crate::auth::Auth::Jwt(verifier) => verifier.name_claim(),
        crate::auth::Auth::Off => "name",
    };
    viewer.name.as_deref().ok_or_else(|| {
        InvalidInput::owned(
            "author",
            format!(
                "comes from your token's `{claim}` claim, and the token has none with a visible \
                 character: have the identity provider add the user's display name to its access \
                 tokens as `{claim}` (or point --auth-name-claim at the claim that holds it)"
            ),
        )
        .into()
    })
}

/// The order hash a purchase proof proves for `viewer` buying `sku`, or a refusal of
/// `purchaseProof` saying which check failed ([`ProofError`]).
async fn verify_purchase(
    state: &ApiState,
    viewer: Option<&Viewer>,
    proof: &str,
    sku: &crate::domain::Sku,
) -> Result<crate::domain::OrderHash, ApiError> {
    // A proof is a short JWT: anything longer is no proof, refused before it is decoded.
    const MAX_PROOF_BYTES: usize = 4_096;
    let refused = |e: ProofError| InvalidInput::owned("purchaseProof", format!("is refused: {e}"));
    if proof.len() > MAX_PROOF_BYTES {
        return Err(InvalidInput::new("purchaseProof", "must be at most 4,096 bytes").into());
    }
    let verifier = state
        .purchases
        .as_deref()
        .ok_or(refused(ProofError::Disabled))?;
    let viewer = viewer.ok_or(refused(ProofError::Anonymous))?;
    let hash = verifier
        .verify(proof, &viewer.sub, sku)
        .await
        .map_err(refused)?;
    Ok(hash)
}

/// Writes. They go to the store; `totalCount` and page jumps follow within the index's lag.
#[Object(name = "Mutation")]
impl MutationRoot {
    /// Adds a comment. With `--auth jwt` it needs a bearer token (`UNAUTHENTICATED` without
    /// one) and its author is the token's user. Nothing is written when the input is refused.
    async fn add_comment(
        &self,
        ctx: &Context<'_>,
        #[graphql(desc = "The comment to add.")] input: AddCommentInput,
    ) -> async_graphql::Result<AddCommentPayload> {
        let state = state(ctx)?;
        let meta = super::meta(ctx);
        let fail = |e: ApiError| e.into_graphql(meta);
        let (_, viewer) = writer(ctx, state).map_err(fail)?;
        let author = match (viewer, input.author.as_deref()) {
            (Some(viewer), None) => author_name(state, viewer).map_err(fail)?,
            (None, Some(author)) => author,
            (Some(_), Some(_)) => {
                return Err(fail(
                    InvalidInput::new("author", "comes from your token: leave it out").into(),
                ));
            }
            (None, None) => {
                return Err(fail(InvalidInput::new("author", "is required").into()));
            }
        };
        let mut draft = CommentDraft::new(&input.sku, author, &input.body, i64::from(input.rating))
            .map_err(|e| fail(e.into()))?;
        draft.author_sub = viewer.map(|v| v.sub.clone());
        if let Some(proof) = input.purchase_proof.as_deref() {
            draft.purchase = Some(
                verify_purchase(state, viewer, proof, &draft.sku)
                    .await
                    .map_err(fail)?,
            );
        }
        let mut comment = draft.into_comment(now_ms());
        // Under `--moderation pre` it waits for a moderator (a moderator's own is published).
        comment.moderation =
            Moderation::new(state.pre_moderation && !viewer.is_some_and(|v| v.moderator));
        state
            .engine
            .store()
            .create(&comment)
            .await
            .map_err(|e| fail(e.into()))?;
        tracing::info!(sku = comment.sku.as_str(), comment_id = %comment.id, verified = comment.is_verified(), "comment added");
        let scope = CursorScope {
            sku: comment.sku.clone(),
            ratings: RatingSet::ALL,
            order: CommentOrder::Newest,
        };
        let cursor = state
            .codec
            .seal(&scope, &Position::flat(comment.sort_key()));
        Ok(AddCommentPayload {
            comment_edge: CommentEdge {
                cursor,
                node: Comment(comment.clone()),
            },
            comment: Comment(comment),
            client_mutation_id: input.client_mutation_id,
        })
    }

    /// Edits a comment's body or rating; its position (creation time) does not change. With
    /// `--auth jwt` only its author or a moderator may (`FORBIDDEN` for anyone else).
    async fn update_comment(
        &self,
        ctx: &Context<'_>,
        #[graphql(desc = "The comment to edit and what changes.")] input: UpdateCommentInput,
    ) -> async_graphql::Result<UpdateCommentPayload> {
        let state = state(ctx)?;
        let meta = super::meta(ctx);
        let fail = |e: ApiError| e.into_graphql(meta);
        let (access, viewer) = writer(ctx, state).map_err(fail)?;
        let id = GlobalId::comment(&input.id).map_err(|e| fail(e.into()))?;
        // Under `--moderation pre` an author's edit of a published comment is reviewed again
        // (else anyone could publish anything by editing what was approved); a moderator's
        // is not.
        let review = state.pre_moderation && !viewer.is_some_and(|v| v.moderator);
        let patch = CommentPatch::new(input.body.as_deref(), input.rating.map(i64::from))
            .map_err(|e| fail(e.into()))?
            .reviewed(review);
        let comment = state
            .engine
            .store()
            .update(id, &patch, now_ms(), &access)
            .await
            .map_err(|e| fail(e.into()))?;
        tracing::info!(sku = comment.sku.as_str(), comment_id = %comment.id, "comment updated");
        Ok(UpdateCommentPayload {
            comment: Comment(comment),
            client_mutation_id: input.client_mutation_id,
        })
    }

    /// Marks a comment helpful for the viewer, or (`helpful: false`) takes that back. One vote
    /// per viewer and comment: marking it twice counts once. With `--auth jwt` it needs a
    /// bearer token (`UNAUTHENTICATED` without one) and the author may not mark their own
    /// comment (`FORBIDDEN`); with `--auth off` the client's address is the voter.
    async fn mark_helpful(
        &self,
        ctx: &Context<'_>,
        #[graphql(desc = "The comment and the vote.")] input: MarkHelpfulInput,
    ) -> async_graphql::Result<MarkHelpfulPayload> {
        super::mark_helpful::mark_helpful(ctx, input).await
    }

    /// A moderator publishes, hides or rejects a comment (`--auth-moderator-role`):
    /// `UNAUTHENTICATED` without a verified token (always under `--auth off`), `FORBIDDEN`
    /// without the role, `BAD_USER_INPUT` for a decision that does not apply to the comment's
    /// status (hiding a pending comment, rejecting a published one) or a missing reason,
    /// `NOT_FOUND` for an unknown comment. Publishing puts the comment in every public list,
    /// count and summary; hiding and rejecting take it out of them.
    async fn moderate_comment(
        &self,
        ctx: &Context<'_>,
        #[graphql(desc = "The comment and the decision.")] input: ModerateCommentInput,
    ) -> async_graphql::Result<ModerateCommentPayload> {
        super::moderate::moderate_comment(ctx, input).await
    }

    /// Reports a comment to the shop's moderators (the EU Digital Services Act's notice, art.
    /// 16). A signed-in reader reports a comment once: a second report of the same comment
    /// writes nothing and answers the first, whatever became of it. The comment enters the
    /// `REPORTED` queue; a moderator's decision closes its reports (`UPHELD` when it is hidden
    /// or rejected, `DISMISSED` when it stays published), which the reader sees in
    /// `viewer.reports`. `UNAUTHENTICATED` without a verified token (always under `--auth
    /// off`), `FORBIDDEN` for one's own comment, `NOT_FOUND` for an unknown, deleted or
    /// unpublished comment, `BAD_USER_INPUT` for details over 1,000 characters or a comment
    /// that already has 50 open reports. Counts against the write budget.
    async fn report_comment(
        &self,
        ctx: &Context<'_>,
        #[graphql(desc = "The comment and why it is reported.")] input: ReportCommentInput,
    ) -> async_graphql::Result<ReportCommentPayload> {
        super::report::report_comment(ctx, input).await
    }

    /// Erases a person's data (GDPR art. 17): removes their helpful votes (each comment's
    /// count one lower) and reports (open ones leave their comment's `REPORTED` queue), and
    /// deletes their comments (`mode: DELETE`) or keeps them under the author "Former
    /// customer" with the subject removed (`ANONYMIZE`). The index, counts, caches and live
    /// subscribers follow like any write. Idempotent: a second call removes nothing more.
    /// The viewer's own data, or with `subject` anyone's for a moderator or the privacy role
    /// (`--auth-privacy-role`). `UNAUTHENTICATED` without a verified token (always under
    /// `--auth off`), `FORBIDDEN` for someone else's without the role, `BAD_USER_INPUT`
    /// without `confirmation: "ERASE MY DATA"` (a `dryRun` needs none and writes nothing).
    /// Counts against the write budget. The signed-in person's export is `GET /me/export`.
    async fn erase_my_data(
        &self,
        ctx: &Context<'_>,
        #[graphql(desc = "Whose data, how, and the confirmation.")] input: EraseMyDataInput,
    ) -> async_graphql::Result<EraseMyDataPayload> {
        super::erase::erase_my_data(ctx, input).await
    }

    /// Answers a comment publicly in the shop's name (`--shop-name`), replacing any earlier
    /// answer; `body: null` removes it. Moderators and merchants (`--auth-merchant-role`) only:
    /// `UNAUTHENTICATED` without a verified token (always under `--auth off`), `FORBIDDEN`
    /// without either role, `BAD_USER_INPUT` for a body without a visible character or over
    /// 4,000 characters, `NOT_FOUND` for an unknown comment. Subscribers get `UPDATED`.
    async fn reply_to_comment(
        &self,
        ctx: &Context<'_>,
        #[graphql(desc = "The comment and the answer.")] input: ReplyToCommentInput,
    ) -> async_graphql::Result<ReplyToCommentPayload> {
        super::moderate::reply_to_comment(ctx, input).await
    }

    /// Deletes a comment. With `--auth jwt` only its author or a moderator may (`FORBIDDEN`
    /// for anyone else).
    async fn delete_comment(
        &self,
        ctx: &Context<'_>,
        #[graphql(desc = "The comment to delete.")] input: DeleteCommentInput,
    ) -> async_graphql::Result<DeleteCommentPayload> {
        let state = state(ctx)?;
        let meta = super::meta(ctx);
        let fail = |e: ApiError| e.into_graphql(meta);
        let (access, _) = writer(ctx, state).map_err(fail)?;
        let id = GlobalId::comment(&input.id).map_err(|e| fail(e.into()))?;
        let old = state
            .engine
            .store()
            .delete(id, &access)
            .await
            .map_err(|e| fail(e.into()))?;
        tracing::info!(sku = old.sku.as_str(), comment_id = %old.id, "comment deleted");
        Ok(DeleteCommentPayload {
            deleted_comment_id: input.id,
            client_mutation_id: input.client_mutation_id,
        })
    }
}
