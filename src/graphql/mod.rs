//! The GraphQL surface (`schema.graphql`, `docs/api/`): schema types, thin resolvers, and error
//! codes.
//!
//! Resolvers parse arguments, call the pagination engine or the store, and map the answer; the
//! rules live in `pagination`. The schema can be built without any backend, so `export-schema`
//! and the SDL drift test need no services.

mod batch;
mod budget;
mod comments_field;
mod connection;
mod erase;
mod error;
pub mod federation;
pub mod field_errors;
mod global_id;
mod helpful;
mod keyed;
mod log;
mod mark_helpful;
mod moderate;
mod moderation;
mod mutation;
pub mod nesting;
mod order;
mod own;
mod page_cursors;
mod plain;
pub mod plain_document;
mod plain_info;
mod plain_pager;
pub mod pricing;
mod product;
mod query;
mod queue;
pub mod raw_json;
mod report;
mod scalars;
pub mod schema_description;
mod stats;
mod subscription;
mod summaries;
mod types;
mod validated;
pub mod variables;
mod viewer;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use async_graphql::Schema;

pub use batch::{BatchReads, RequestLoader};
pub use budget::{
    Budget, CACHED_ANSWER_POINTS, CACHED_POINTS_PER_KIB, Checked, bytes_floor, cached_answer_price,
    failure_floor, retry_after_seconds,
};
pub use error::{ApiError, ErrorCode, invalid_request};
pub use global_id::GlobalId;
pub use helpful::{ClientAddress, VIEWER_FOUND_HELPFUL};
pub use mutation::MutationRoot;
pub use order::CommentOrder;
pub use query::QueryRoot;
pub use scalars::DateTime;
pub use subscription::{OpenSubscriptions, SubscriptionRoot, cohort};

use crate::auth::Auth;
use crate::index::AnyIndex;
use crate::pagination::{CursorCodec, Engine, PageStats};
use crate::store::AnyStore;
use crate::telemetry::metric;

/// Selections (fields, fragments) on one path from an operation's root beyond which a
/// document counts as too deep whatever its fields (`http::admission::limits::depth` refuses it
/// before it runs): the parser already bounds each definition, this bounds chains of fragment
/// spreads. No real query comes near it. The walks over a checked document stop there too.
pub const MAX_NESTING: usize = 64;

/// The stand-alone schema (`schema.graphql`).
pub type StandaloneSchema = Schema<QueryRoot, MutationRoot, SubscriptionRoot>;

/// The Federation subgraph's schema (`serve --federation`, `schema.subgraph.graphql`).
pub type SubgraphSchema = Schema<federation::SubgraphQuery, MutationRoot, SubscriptionRoot>;

/// The executable schema: stand-alone, or a Federation v2 subgraph (`serve --federation`).
/// Two schema types, not one: async-graphql makes a schema a subgraph as soon as its type has
/// an entity, and the stand-alone schema must not change (`federation` says more).
#[derive(Clone)]
pub enum ApiSchema {
    /// The stand-alone schema.
    Standalone(StandaloneSchema),
    /// The subgraph.
    Subgraph(SubgraphSchema),
}

/// Which schema a server serves.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Surface {
    /// The stand-alone schema (`schema.graphql`).
    #[default]
    Standalone,
    /// The Federation v2 subgraph (`--federation`, `schema.subgraph.graphql`).
    Subgraph,
}

impl std::fmt::Debug for ApiSchema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("ApiSchema").field(&self.surface()).finish()
    }
}

impl ApiSchema {
    /// Runs `request` (a query or mutation; a subscription's first response).
    pub async fn execute(
        &self,
        request: impl Into<async_graphql::Request>,
    ) -> async_graphql::Response {
        match self {
            Self::Standalone(schema) => schema.execute(request).await,
            Self::Subgraph(schema) => schema.execute(request).await,
        }
    }

    /// Runs `request` as a stream (subscriptions).
    pub fn execute_stream(
        &self,
        request: impl Into<async_graphql::Request>,
    ) -> futures::stream::BoxStream<'static, async_graphql::Response> {
        self.execute_stream_with_session_data(request, Arc::default())
    }

    /// Runs `request` as a stream with a connection's `session` data (subscriptions over
    /// WebSocket).
    pub fn execute_stream_with_session_data(
        &self,
        request: impl Into<async_graphql::Request>,
        session: Arc<async_graphql::Data>,
    ) -> futures::stream::BoxStream<'static, async_graphql::Response> {
        use futures::StreamExt;
        match self {
            Self::Standalone(schema) => schema
                .execute_stream_with_session_data(request, session)
                .boxed(),
            Self::Subgraph(schema) => schema
                .execute_stream_with_session_data(request, session)
                .boxed(),
        }
    }

    /// The schema in SDL, as async-graphql writes it by default (the types the HTTP layer reads).
    pub fn sdl(&self) -> String {
        match self {
            Self::Standalone(schema) => schema.sdl(),
            Self::Subgraph(schema) => schema.sdl(),
        }
    }

    /// Which schema this is.
    pub fn surface(&self) -> Surface {
        match self {
            Self::Standalone(_) => Surface::Standalone,
            Self::Subgraph(_) => Surface::Subgraph,
        }
    }
}

/// What resolvers need: the engine over the configured backends and the cursor keys.
#[derive(Debug)]
pub struct ApiState {
    /// Reads pages and counts from the configured store and index.
    pub engine: Engine<AnyStore, AnyIndex>,
    /// Seals and opens cursors (`--cursor-secret`).
    pub codec: CursorCodec,
    /// Who may write (`--auth`).
    pub auth: Auth,
    /// Longest `nodes(ids:)` list accepted.
    pub max_node_ids: usize,
    /// This server's live feed (`Subscription.commentEvents`).
    pub hub: crate::live::Hub,
    /// The Redis change log (with the Redis index), which resumed subscriptions read when the
    /// hub no longer holds what they missed.
    pub change_log: Option<crate::live::redis_log::RedisLog>,
    /// Subscriptions open now, and how many may be.
    pub open_subscriptions: OpenSubscriptions,
    /// Subscriptions open at once on this server, at most (`--max-subscriptions`).
    pub max_subscriptions: usize,
    /// Most items one request may read from the store (`--max-items-per-request`).
    pub max_items_per_request: u64,
    /// The largest price one request may have (`--max-query-complexity`, `pricing`).
    pub max_complexity: usize,
    /// Whether new comments wait for a moderator (`--moderation pre`).
    pub pre_moderation: bool,
    /// The name the shop's replies carry (`--shop-name`).
    pub shop_name: String,
    /// The verifier of purchase proofs (`--purchase-jwks-url`); `None`: no comment can be
    /// verified.
    pub purchases: Option<Arc<crate::auth::purchase::PurchaseVerifier>>,
    /// How the shop verifies reviews (`--verification-statement`).
    pub verification_statement: Option<String>,
    /// How many readers' open reports hide a published comment (`--report-hide-threshold`);
    /// `None`: never.
    pub report_hide_threshold: Option<std::num::NonZeroU32>,
}

/// Per-request data: the id that ties logs to error responses, and what the request cost.
#[derive(Debug, Default)]
pub struct RequestMeta {
    /// The request's id, in its error responses and its log lines.
    pub request_id: String,
    /// What the request's reads have cost so far.
    pub cost: Mutex<PageStats>,
    /// Items read by finished reads plus the most the running ones may read: held to
    /// `--max-items-per-request` before each read ([`reserve_items`]).
    items_reserved: AtomicU64,
    /// The products whose comments the request read, each once: what a cached copy of the
    /// response depends on (`http::response_cache`) and the tags a CDN purges it by.
    products: Mutex<Vec<crate::domain::Sku>>,
    /// The viewer's helpful votes the request knows or reads a page at a time (`helpful`).
    votes: helpful::VoteLookups,
}

impl RequestMeta {
    /// The data of the request `request_id`, before it has read anything.
    pub fn new(request_id: String) -> Self {
        Self {
            request_id,
            cost: Mutex::default(),
            items_reserved: AtomicU64::new(0),
            products: Mutex::default(),
            votes: helpful::VoteLookups::default(),
        }
    }

    /// Reserves `items` more under `max`; `Err` with what is already reserved when they do
    /// not fit.
    fn try_reserve_items(&self, items: u64, max: u64) -> Result<(), u64> {
        self.items_reserved
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |held| {
                held.checked_add(items).filter(|&total| total <= max)
            })
            .map(|_| ())
    }

    /// A read that reserved `reserved` items read `read`: the rest is given back.
    pub(crate) fn settle_items(&self, reserved: u64, read: u64) {
        let unused = reserved.saturating_sub(read);
        self.items_reserved.fetch_sub(unused, Ordering::Relaxed);
    }

    /// Adds `stats` to what the request has cost.
    pub fn add_cost(&self, stats: PageStats) {
        *self.cost.lock().unwrap_or_else(|p| p.into_inner()) += stats;
    }

    /// Counts one index call made outside a page (a second `pageCursors` layout).
    pub fn add_index_call(&self) {
        self.add_cost(PageStats {
            index_calls: 1,
            ..PageStats::default()
        });
    }

    /// What the request's reads have cost so far, in all.
    pub fn cost(&self) -> PageStats {
        *self.cost.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The request read `sku`'s comments (a page, counts, or a comment by id).
    pub fn read_product(&self, sku: &crate::domain::Sku) {
        // A product's verified list changes only with the product (every change of a verified
        // comment is one of its product's list): the product's version and tag cover it.
        let product = crate::domain::verified_product(sku.as_str());
        let sku = product.as_ref().unwrap_or(sku);
        let mut products = self.products.lock().unwrap_or_else(|p| p.into_inner());
        if !products.contains(sku) {
            products.push(sku.clone());
        }
    }

    /// The products the request read, sorted.
    pub fn products(&self) -> Vec<crate::domain::Sku> {
        let mut products = self
            .products
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        products.sort();
        products
    }
}

/// The schema with `state` attached (or none, for printing the SDL).
///
/// It carries no async-graphql extension: with one, async-graphql sends every field through the
/// extension chain (`pricing::document` says what that cost and how the price is counted
/// instead). Depth, aliases and selections are checked by the HTTP layer on the parsed
/// document (`http::admission::check`), the price before the request runs (`Budget::admit`).
pub fn build_schema(state: Option<Arc<ApiState>>) -> StandaloneSchema {
    with_state(standalone_builder(), state)
}

/// The Federation subgraph's schema with `state` attached (or none, for printing its SDL):
/// the stand-alone schema and `Query._entities`, `Query._service` (`federation`).
pub fn build_subgraph_schema(state: Option<Arc<ApiState>>) -> SubgraphSchema {
    with_state(subgraph_builder(), state)
}

/// The schema `surface` serves, with `state` attached.
pub fn build_surface(surface: Surface, state: Option<Arc<ApiState>>) -> ApiSchema {
    match surface {
        Surface::Standalone => ApiSchema::Standalone(build_schema(state)),
        Surface::Subgraph => ApiSchema::Subgraph(build_subgraph_schema(state)),
    }
}

/// The same schema as `surface`'s for texts that passed its validation before: it checks no
/// rule of the specification again, only walks the document for async-graphql's own limits
/// (`ValidationMode::Fast`); the request's variables are held to their types first
/// (`variables` says why and how).
pub fn build_schema_for_validated_texts(surface: Surface, state: Arc<ApiState>) -> ApiSchema {
    let fast = async_graphql::ValidationMode::Fast;
    let state = Some(state);
    match surface {
        Surface::Standalone => ApiSchema::Standalone(with_state(
            standalone_builder().validation_mode(fast),
            state,
        )),
        Surface::Subgraph => {
            ApiSchema::Subgraph(with_state(subgraph_builder().validation_mode(fast), state))
        }
    }
}

/// The same schema as `surface`'s for texts that passed its validation before and are plain
/// (`plain_document`): it does not walk the document at all (`validated` says what it answers
/// instead, and why only plain texts run on it).
pub fn build_schema_for_validated_plain_texts(surface: Surface, state: Arc<ApiState>) -> ApiSchema {
    let state = Some(state);
    match surface {
        Surface::Standalone => ApiSchema::Standalone(with_state(
            standalone_builder().extension(validated::Validated),
            state,
        )),
        Surface::Subgraph => ApiSchema::Subgraph(with_state(
            subgraph_builder().extension(validated::Validated),
            state,
        )),
    }
}

fn standalone_builder() -> async_graphql::SchemaBuilder<QueryRoot, MutationRoot, SubscriptionRoot> {
    Schema::build(QueryRoot::default(), MutationRoot, SubscriptionRoot)
}

fn subgraph_builder()
-> async_graphql::SchemaBuilder<federation::SubgraphQuery, MutationRoot, SubscriptionRoot> {
    let query = federation::SubgraphQuery::default();
    // A gateway composes `commentEvents` into the supergraph's subscriptions.
    Schema::build(query, MutationRoot, SubscriptionRoot).enable_subscription_in_federation()
}

/// What every schema shares: async-graphql's own limits, and the server's state.
fn with_state<Q, M, S>(
    builder: async_graphql::SchemaBuilder<Q, M, S>,
    state: Option<Arc<ApiState>>,
) -> Schema<Q, M, S>
where
    Q: async_graphql::ObjectType + 'static,
    M: async_graphql::ObjectType + 'static,
    S: async_graphql::SubscriptionType + 'static,
{
    let mut builder = builder.limit_recursive_depth(32);
    if let Some(state) = state {
        builder = builder.data(state);
    }
    builder.finish()
}

/// The schema in SDL, as committed in `schema.graphql`.
pub fn sdl() -> String {
    // `@specifiedBy` too: introspection serves it, so clients that read either see the same.
    // (No schema description, in either: `schema_description` says why.)
    build_schema(None)
        .sdl_with_options(async_graphql::SDLExportOptions::new().include_specified_by())
}

/// Reserves the `items` a read may take against `--max-items-per-request`, before it reads: the
/// backstop of the complexity model, enforced with the server's real settings. Returns what was
/// reserved (0 without a [`RequestMeta`]), for [`RequestMeta::settle_items`]; a read that would
/// pass the cap is refused with `TOO_MANY_ITEMS` and reads nothing.
pub(crate) fn reserve_items(
    meta: Option<&RequestMeta>,
    state: &ApiState,
    items: u64,
) -> async_graphql::Result<u64> {
    let Some(meta) = meta else {
        return Ok(0);
    };
    let max = state.max_items_per_request;
    match meta.try_reserve_items(items, max) {
        Ok(()) => Ok(items),
        Err(_) => {
            metric::ITEMS_CAP_REFUSALS.counter(&[]).increment(1);
            Err(ApiError::TooManyItems { max }.into_graphql(Some(meta)))
        }
    }
}

/// The server's state, which the schema is built with.
fn state<'a>(ctx: &async_graphql::Context<'a>) -> async_graphql::Result<&'a Arc<ApiState>> {
    ctx.data::<Arc<ApiState>>()
}

/// The request's [`RequestMeta`], when the HTTP layer attached one.
pub(crate) fn meta<'a>(ctx: &async_graphql::Context<'a>) -> Option<&'a RequestMeta> {
    ctx.data_opt::<Arc<RequestMeta>>().map(Arc::as_ref)
}

#[cfg(test)]
mod tests {
    use super::RequestMeta;

    #[test]
    fn reads_reserve_their_most_and_give_back_what_they_did_not_read() {
        let meta = RequestMeta::new("r".into());
        assert_eq!(meta.try_reserve_items(60, 100), Ok(()));
        assert_eq!(meta.try_reserve_items(41, 100), Err(60), "61 + 41 > 100");
        meta.settle_items(60, 20);
        assert_eq!(
            meta.try_reserve_items(80, 100),
            Ok(()),
            "20 read, 80 more fit"
        );
        assert_eq!(meta.try_reserve_items(1, 100), Err(100));
        assert_eq!(
            meta.try_reserve_items(u64::MAX, u64::MAX),
            Err(100),
            "no overflow"
        );
    }
}
