//! The arguments of a `comments` connection field, written once for `Query.comments` and
//! `Product.comments` so that their names, descriptions and defaults cannot drift apart (the
//! price walk, `graphql::pricing::document`, reads them by name). They stay plain field
//! arguments: the schema's shape is the same as if each field spelled them out.
//!
//! Why a macro: async-graphql reads a field's arguments from its resolver's parameters, and
//! their descriptions and defaults from `#[graphql(...)]` attributes that take literals only;
//! and an attribute macro (`#[Object]`) reads its item before any macro inside it expands. So
//! [`object_with_comments!`] writes the whole `#[Object]` impl, ending with the `comments`
//! resolver and its shared parameters.

/// Writes an `#[Object]` impl: its own items, then a `comments` field that takes the field's
/// own leading arguments (`Query.comments` has `sku`) followed by the shared connection
/// arguments. Its body sees the shared ones as one [`ConnectionInput`](super::connection::ConnectionInput), named after the `|…|`.
///
/// ```text
/// object_with_comments! {
///     #[Object]
///     impl Product { /* other fields */ }
///
///     /// The product's comments, newest first, as a Relay connection.
///     async fn comments(&self, ctx) -> |input| { resolve_connection(ctx, …, input).await }
/// }
/// ```
macro_rules! object_with_comments {
    (
        $(#[$impl_attr:meta])*
        impl $ty:ty {
            $($items:tt)*
        }

        $(#[$field_attr:meta])*
        async fn comments(
            &$this:ident,
            $ctx:ident
            $(, $(#[$arg_attr:meta])* $arg:ident: $arg_ty:ty)* $(,)?
        ) -> |$input:ident| $body:block
    ) => {
        $(#[$impl_attr])*
        impl $ty {
            $($items)*

            $(#[$field_attr])*
            #[expect(
                clippy::too_many_arguments,
                reason = "async-graphql takes each GraphQL argument as a resolver parameter"
            )]
            async fn comments(
                &$this,
                $ctx: &::async_graphql::Context<'_>,
                $($(#[$arg_attr])* $arg: $arg_ty,)*
                #[graphql(
                    desc = "Only comments with one of these ratings (1-5, no repeats). Omit for all."
                )]
                ratings: Option<Vec<i32>>,
                #[graphql(
                    desc = "`true`: only verified purchases (`Comment.verifiedPurchase`), read from their own list, so counts, offsets, page numbers and every order are exact and cost what the whole list's do. `false` or omitted: all comments. A cursor belongs to its filter (with the other, `BAD_CURSOR`)."
                )]
                verified: Option<bool>,
                #[graphql(
                    desc = "Return at most this many comments from the top of the window. Without `first` or `last`, the server's default page size (20 unless configured); above its maximum (100 unless configured), `PAGE_SIZE_EXCEEDED`."
                )]
                first: Option<i32>,
                #[graphql(desc = "Start after this cursor (an edge's `cursor` or `pageInfo.endCursor`).")]
                after: Option<String>,
                #[graphql(
                    desc = "Return at most this many comments from the bottom of the window. Above the server's maximum page size (100 unless configured), `PAGE_SIZE_EXCEEDED`."
                )]
                last: Option<i32>,
                #[graphql(desc = "End before this cursor (an edge's `cursor` or `pageInfo.startCursor`).")]
                before: Option<String>,
                #[graphql(
                    desc = "Skip this many comments first: from the top with `first`, from the bottom with `last`. For page jumps: page p of size n is `first: n, offset: (p - 1) * n`."
                )]
                offset: Option<i32>,
                #[graphql(
                    desc = "The page that holds this comment (a global id): `first` (or `last`) comments, aligned to the page boundaries of that size under `numbering`, so it is the page `pageCursors` numbers with the same size. Not with `after`, `before` or `offset`. `NOT_FOUND` when the comment is not in this connection (another product, filtered out by `ratings`, deleted, or not published)."
                )]
                containing: Option<::async_graphql::ID>,
                #[graphql(
                    desc = "Which end pages are counted from, for `containing`.",
                    default_with = "Some(crate::graphql::page_cursors::PageNumbering::FromStart)"
                )]
                numbering: Option<crate::graphql::page_cursors::PageNumbering>,
                #[graphql(
                    name = "orderBy",
                    desc = "The order of the list. Every order pages alike; a cursor belongs to its order (with another, `BAD_CURSOR`).",
                    default_with = "Some(crate::graphql::order::CommentOrder::Newest)"
                )]
                order_by: Option<crate::graphql::order::CommentOrder>,
            ) -> ::async_graphql::Result<crate::graphql::connection::CommentConnection> {
                let $input = crate::graphql::connection::ConnectionInput {
                    ratings,
                    verified: verified.unwrap_or(false),
                    first,
                    after,
                    last,
                    before,
                    offset,
                    containing,
                    numbering: numbering.unwrap_or_default(),
                    order: order_by.unwrap_or_default().into(),
                };
                $body
            }
        }
    };
}

pub(super) use object_with_comments;

#[cfg(test)]
mod tests {
    use async_graphql::parser::types::{TypeKind, TypeSystemDefinition};

    use crate::pagination::PagingSettings;

    /// The arguments of `Type.field` with their descriptions and defaults, from the printed
    /// schema.
    fn arguments(type_name: &str, field: &str) -> Vec<(String, String, Option<String>)> {
        let document =
            async_graphql::parser::parse_schema(crate::graphql::sdl()).expect("our SDL parses");
        for definition in document.definitions {
            let TypeSystemDefinition::Type(ty) = definition else {
                continue;
            };
            let (ty, TypeKind::Object(object)) = (&ty.node, &ty.node.kind) else {
                continue;
            };
            if ty.name.node != type_name {
                continue;
            }
            for f in &object.fields {
                if f.node.name.node == field {
                    return f
                        .node
                        .arguments
                        .iter()
                        .map(|a| {
                            let description = a.node.description.as_ref().map(|d| d.node.clone());
                            (
                                a.node.name.node.to_string(),
                                description.unwrap_or_default(),
                                a.node.default_value.as_ref().map(|v| v.node.to_string()),
                            )
                        })
                        .collect();
                }
            }
        }
        panic!("{type_name}.{field} is in the schema");
    }

    #[test]
    fn both_comments_fields_take_the_same_arguments_described_alike_with_the_default_settings() {
        let mut query = arguments("Query", "comments");
        assert_eq!(query.remove(0).0, "sku");
        let product = arguments("Product", "comments");
        assert_eq!(
            query, product,
            "Query.comments and Product.comments drifted apart"
        );
        let names: Vec<&str> = product.iter().map(|(name, ..)| name.as_str()).collect();
        assert_eq!(
            names,
            [
                "ratings",
                "verified",
                "first",
                "after",
                "last",
                "before",
                "offset",
                "containing",
                "numbering",
                "orderBy"
            ]
        );
        let default_of = |name: &str| {
            product
                .iter()
                .find(|(n, ..)| n == name)
                .and_then(|(.., default)| default.clone())
        };
        assert_eq!(default_of("numbering").as_deref(), Some("FROM_START"));
        assert_eq!(default_of("orderBy").as_deref(), Some("NEWEST"));

        let settings = PagingSettings::default();
        let description = |name: &str| {
            &product
                .iter()
                .find(|(n, ..)| n == name)
                .expect("the argument")
                .1
        };
        let default = format!("({} unless configured)", settings.default_page_size);
        let max = format!("({} unless configured)", settings.max_page_size);
        let first = description("first");
        assert!(first.contains(&default) && first.contains(&max), "{first}");
        assert!(description("last").contains(&max));
    }
}
