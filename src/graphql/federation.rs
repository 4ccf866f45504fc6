//! Apollo Federation v2 (`serve --federation`, `docs/federation.md`): the subgraph's
//! `Query._entities` and `Query._service`, and its SDL (`schema.subgraph.graphql`).
//!
//! The subgraph contributes fields to the shop's `Product` (`@key(fields: "sku")`, as the
//! catalogue's subgraph names it) and owns `Comment` (`@key(fields: "id")`). A gateway asks for
//! the entities of a plan step in one request; their fields resolve together, so a category
//! page's `ratingSummary`s are one index call and their comments one store call per product,
//! as `ratingSummaries` and aliases are (`batch`).
//!
//! # Why `_entities` is ours
//!
//! async-graphql 7.2.1 turns federation on by itself as soon as one entity resolver exists, for
//! the whole schema type, and its `_entities` (`types/query_root.rs`) joins every
//! representation with `try_join_all`: one unknown `__typename`, one SKU that does not parse,
//! or one comment that is not there fails the list, and the list being non-null, `data` itself.
//! The specification has the list's items nullable so that one bad representation is a null
//! and an error at its index. So the stand-alone schema stays free of federation (a separate
//! schema type, [`super::ApiSchema`]) and the subgraph's `_entities`, `_service` and their types
//! are plain fields and types of ours; the SDL gets its `@key`s in [`subgraph_sdl`]. This can go
//! when upstream resolves each representation on its own (`tests/api/federation/entities.rs`
//! shows the bytes a gateway receives).

use std::sync::OnceLock;

use async_graphql::{
    Context, InputValueResult, MergedObject, Object, PathSegment, Scalar, ScalarType, SimpleObject,
    Union, Value,
};

use super::error::ApiError;
use super::global_id::GlobalId;
use super::query::{QueryFields, fetch_nodes};
use super::types::{Comment, Node, Product};
use crate::domain::Sku;

/// Representations one `_entities` call may resolve: a gateway sends one plan step's entities
/// in one call (a category page is 24 to 100 products); more is refused before anything is
/// read. Each one is priced like a `nodes` id (`pricing`).
pub const MAX_REPRESENTATIONS: usize = 100;

/// The Federation specification this subgraph's SDL links.
pub const FEDERATION_SPEC: &str = "https://specs.apollo.dev/federation/v2.5";

// The subgraph's `Query`: the stand-alone one's fields and those a gateway calls, with the
// stand-alone one's description.
/// Reads: products, their comments, and Relay object refetching.
#[derive(Debug, Default, MergedObject)]
#[graphql(name = "Query")]
pub struct SubgraphQuery(QueryFields, EntitiesQuery);

/// `Query._entities` and `Query._service`.
#[derive(Debug, Default)]
pub struct EntitiesQuery;

#[Object]
impl EntitiesQuery {
    /// The entities a gateway names by key, in the same order: `Product` by `sku`, `Comment` by
    /// `id`. A representation that names nothing this subgraph resolves is a null with an error
    /// at its index (`BAD_USER_INPUT`; `NOT_FOUND` for a comment that is not there); the others
    /// resolve. At most 100 a call; each is priced like a `nodes` id.
    #[graphql(name = "_entities")]
    async fn entities(
        &self,
        ctx: &Context<'_>,
        representations: Vec<Representation>,
    ) -> async_graphql::Result<Vec<Option<Entity>>> {
        let meta = super::meta(ctx);
        if representations.len() > MAX_REPRESENTATIONS {
            let why = format!("`representations` may hold at most {MAX_REPRESENTATIONS} entities");
            return Err(ApiError::Refused(why).into_graphql(meta));
        }
        let keys: Vec<Result<GlobalId, ApiError>> =
            representations.iter().map(Representation::key).collect();
        let ids: Vec<GlobalId> = keys
            .iter()
            .filter_map(|k| k.as_ref().ok().cloned())
            .collect();
        let mut found = fetch_nodes(ctx, &ids).await?.into_iter();
        let mut entities = Vec::with_capacity(keys.len());
        for (index, key) in keys.into_iter().enumerate() {
            let entity = match key {
                Ok(id) => match found.next().flatten() {
                    Some(Node::Product(product)) => Ok(Entity::Product(product)),
                    Some(Node::Comment(comment)) => Ok(Entity::Comment(comment)),
                    _ => Err(ApiError::NotFound(format!(
                        "no comment has the id `{}`",
                        id.encode()
                    ))),
                },
                Err(refused) => Err(refused),
            };
            entities.push(entity.map_err(|e| refuse_at(ctx, index, e)).ok());
        }
        Ok(entities)
    }

    /// The subgraph's SDL, for a gateway that composes from its subgraphs
    /// (`schema.subgraph.graphql`).
    #[graphql(name = "_service")]
    async fn service(&self) -> Service {
        Service {
            sdl: Some(subgraph_sdl().to_owned()),
        }
    }
}

/// Records `error` at `_entities[index]`, where the representation's null stands.
fn refuse_at(ctx: &Context<'_>, index: usize, error: ApiError) {
    let error = error.into_graphql(super::meta(ctx));
    let mut error = ctx.set_error_path(error.into_server_error(ctx.item.pos));
    error.path.push(PathSegment::Index(index));
    ctx.add_error(error);
}

/// `_Any`: one entity's representation, as the gateway sends it (`__typename` and the key).
#[derive(Clone, Debug)]
pub(crate) struct Representation(Value);

#[Scalar(name = "_Any")]
impl ScalarType for Representation {
    fn parse(value: Value) -> InputValueResult<Self> {
        Ok(Self(value))
    }

    fn to_value(&self) -> Value {
        self.0.clone()
    }
}

impl Representation {
    /// The object the representation names, by its key; `BAD_USER_INPUT` says what is wrong.
    fn key(&self) -> Result<GlobalId, ApiError> {
        let refused = ApiError::Refused;
        let Value::Object(fields) = &self.0 else {
            return Err(refused(
                "a representation is an object with `__typename` and a key".into(),
            ));
        };
        let field = |name: &str| match fields.get(name) {
            Some(Value::String(value)) => Ok(value.as_str()),
            _ => Err(refused(format!(
                "a representation needs `{name}` as a string"
            ))),
        };
        match field("__typename")? {
            "Product" => Ok(GlobalId::Product(Sku::parse(field("sku")?)?)),
            "Comment" => match GlobalId::decode(field("id")?)? {
                GlobalId::Comment(id) => Ok(GlobalId::Comment(id)),
                _ => Err(refused(
                    "`id` of a `Comment` representation names no comment".into(),
                )),
            },
            other => Err(refused(format!(
                "this subgraph resolves `Product` (by `sku`) and `Comment` (by `id`), not `{other}`"
            ))),
        }
    }
}

/// `_Entity`: the types a gateway may ask this subgraph for by key.
#[derive(Debug, Union)]
#[graphql(name = "_Entity")]
#[expect(
    clippy::large_enum_variant,
    reason = "at most 100 a request, each resolved at once; a box per comment would cost more"
)]
pub(super) enum Entity {
    /// The shop's product, whose comments and ratings this subgraph resolves.
    Product(Product),
    /// A comment, which this subgraph owns.
    Comment(Comment),
}

/// `_Service`: what the subgraph says of itself.
#[derive(Debug, SimpleObject)]
#[graphql(name = "_Service")]
pub(super) struct Service {
    /// The subgraph's SDL, with its federation directives.
    sdl: Option<String>,
}

/// The entity keys the subgraph declares: `(type, fields)`.
const KEYS: [(&str, &str); 2] = [("Product", "sku"), ("Comment", "id")];

/// The subgraph's SDL (`dynapage export-schema --federation`, `schema.subgraph.graphql`): the
/// schema with its federation `@link`, the entities' `@key`s, and without the fields and types
/// the specification adds (`_entities`, `_service`, `_Any`, `_Entity`, `_Service`), which
/// composition adds itself.
pub fn subgraph_sdl() -> &'static str {
    static SDL: OnceLock<String> = OnceLock::new();
    SDL.get_or_init(|| {
        let options = async_graphql::SDLExportOptions::new()
            .federation()
            .include_specified_by();
        with_keys(&super::build_subgraph_schema(None).sdl_with_options(options))
    })
}

/// `sdl` with the `@key` of each of [`KEYS`] on its type's definition (async-graphql writes
/// keys only for entities of its own `_entities`, which this subgraph does not use).
fn with_keys(sdl: &str) -> String {
    let mut out = String::with_capacity(sdl.len() + 64);
    for line in sdl.split_inclusive('\n') {
        let key = KEYS.iter().find(|(name, _)| {
            line.strip_prefix("type ")
                .and_then(|rest| rest.strip_prefix(name))
                .is_some_and(|rest| rest.starts_with([' ', '{']))
        });
        match (key, line.trim_end().strip_suffix('{')) {
            (Some((_, fields)), Some(head)) => {
                out.push_str(head.trim_end());
                out.push_str(&format!(" @key(fields: \"{fields}\") {{\n"));
            }
            _ => out.push_str(line),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_entity_type_gets_its_key_and_nothing_else_changes() {
        let sdl = "type ProductPage {\n}\ntype Product implements Node {\n  sku: String!\n}\ntype Comment {\n}\n";
        let keyed = with_keys(sdl);
        assert_eq!(
            keyed,
            "type ProductPage {\n}\ntype Product implements Node @key(fields: \"sku\") {\n  sku: String!\n}\ntype Comment @key(fields: \"id\") {\n}\n"
        );
    }

    #[test]
    fn the_subgraph_sdl_links_federation_and_keys_both_entities() {
        let sdl = subgraph_sdl();
        assert!(sdl.contains(FEDERATION_SPEC), "{sdl}");
        assert!(sdl.contains("type Product implements Node @key(fields: \"sku\") {"));
        assert!(sdl.contains("type Comment implements Node @key(fields: \"id\") {"));
        for reserved in ["_entities", "_service", "_Any", "_Entity", "_Service"] {
            assert!(
                !sdl.contains(reserved),
                "{reserved} is composition's to add"
            );
        }
        assert!(
            sdl.contains("type Subscription"),
            "commentEvents reaches the gateway"
        );
    }

    #[test]
    fn representations_name_products_and_comments_or_say_what_is_wrong() {
        let rep = |json: serde_json::Value| {
            Representation(Value::from_json(json).expect("JSON is a value"))
        };
        let product = rep(serde_json::json!({"__typename": "Product", "sku": "sku-1"}));
        assert!(matches!(product.key(), Ok(GlobalId::Product(s)) if s.as_str() == "sku-1"));
        for (bad, says) in [
            (
                serde_json::json!({"__typename": "Shoe", "sku": "a"}),
                "not `Shoe`",
            ),
            (serde_json::json!({"__typename": "Product"}), "`sku`"),
            (
                serde_json::json!({"__typename": "Product", "sku": "a b"}),
                "sku",
            ),
            (serde_json::json!({"sku": "a"}), "`__typename`"),
            (
                serde_json::json!({"__typename": "Comment", "id": "nope"}),
                "id",
            ),
            (serde_json::json!("Product"), "an object"),
        ] {
            let error = rep(bad.clone()).key().expect_err(&bad.to_string());
            assert_eq!(error.code(), super::super::ErrorCode::BadUserInput, "{bad}");
            assert!(error.to_string().contains(says), "{bad}: {error}");
        }
    }
}
