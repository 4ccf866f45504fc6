//! The object types of the schema below the connection: `Node`, `Comment`, edges and page
//! info, and the `Product` type (whose fields, `comments` among them, are in `product.rs`).

use async_graphql::{ID, Interface, Object, SimpleObject};

use super::global_id::GlobalId;
use super::scalars::DateTime;
use crate::domain::{self, Sku};

/// An object with a globally unique id, refetchable through `node(id:)` (Relay).
#[derive(Interface)]
#[graphql(field(
    name = "id",
    ty = "ID",
    desc = "Globally unique, opaque id of the object."
))]
pub enum Node {
    Product(Product),
    Comment(Comment),
}

/// A product. It exists as soon as it is named: a product without comments has an empty
/// connection and a `totalCount` of 0. Its fields are resolved in `product.rs`, above the
/// connection (which holds comments, whose `product` field names this type).
#[derive(Clone, Debug)]
pub struct Product {
    pub sku: Sku,
}

/// A comment on a product.
#[derive(Clone, Debug)]
pub struct Comment(pub domain::Comment);

/// A comment on a product.
#[Object]
impl Comment {
    /// Globally unique, opaque id of the comment.
    async fn id(&self) -> ID {
        ID(GlobalId::Comment(self.0.id).encode())
    }

    /// Who wrote the comment.
    async fn author(&self) -> &str {
        &self.0.author
    }

    /// The comment's text.
    async fn body(&self) -> &str {
        &self.0.body
    }

    /// Star rating, 1 to 5.
    async fn rating(&self) -> i32 {
        i32::from(self.0.rating.get())
    }

    /// When the comment was written (UTC, millisecond precision). Comments are ordered by it,
    /// newest first; equal times are ordered by id.
    async fn created_at(&self) -> DateTime {
        DateTime(self.0.created_at())
    }

    /// When the comment was last edited, if ever.
    async fn updated_at(&self) -> Option<DateTime> {
        self.0.updated_at().map(DateTime)
    }

    /// Whether the viewer may edit this comment: its author or a moderator when the server
    /// verifies tokens, anyone when it does not. Show or hide an edit button with it.
    async fn viewer_can_update(&self, ctx: &async_graphql::Context<'_>) -> bool {
        super::viewer::may_change(ctx, &self.0)
    }

    /// Whether the viewer may delete this comment (the same rule as `viewerCanUpdate`).
    async fn viewer_can_delete(&self, ctx: &async_graphql::Context<'_>) -> bool {
        super::viewer::may_change(ctx, &self.0)
    }

    /// The product the comment is about.
    async fn product(&self) -> Product {
        Product {
            sku: self.0.sku.clone(),
        }
    }
}

/// A comment and its position in the connection.
#[derive(Clone, Debug, SimpleObject)]
pub struct CommentEdge {
    /// Opaque position of this comment; pass it as `after` or `before` to page from here.
    /// Valid only for the same product and rating filter.
    pub cursor: String,
    /// The comment.
    pub node: Comment,
}

/// Where the page sits in the whole list.
#[derive(Clone, Debug, SimpleObject)]
pub struct PageInfo {
    /// Whether any comment comes after the page's last edge (older), in the whole list.
    pub has_next_page: bool,
    /// Whether any comment comes before the page's first edge (newer), in the whole list.
    pub has_previous_page: bool,
    /// The first edge's cursor; null when the page is empty.
    pub start_cursor: Option<String>,
    /// The last edge's cursor; null when the page is empty.
    pub end_cursor: Option<String>,
}
