//! [`Partition`]: one list a store reads in order (a GSI partition in DynamoDB), and the
//! partitions a comment belongs to.

use crate::domain::{
    AuthorList, Comment, Position, QueueList, Rating, Sku, helpful_group, verified_list,
};

/// One partition of a product's comments: a GSI partition in DynamoDB.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Partition {
    /// All of a product's comments (GSI `byProduct`, partition key `sku`), or, for a product's
    /// verified twin ([`verified_list`]), its verified ones (GSI `byVerified`, partition key
    /// `verifiedSku`; the twins of the next three likewise: `byVerifiedRating`,
    /// `byVerifiedHelpful`, `byVerifiedRatingHelpful`, on `verifiedSku` and `verifiedSkuRating`).
    Product(Sku),
    /// A product's comments of one rating (GSI `byProductRating`, partition key `sku#rating`).
    ProductRating(Sku, Rating),
    /// A product's comments by helpful votes, then time (GSI `byProductHelpful`, partition key
    /// `sku`, sort key `helpfulKey`: the count, then the sort key).
    ProductHelpful(Sku),
    /// A product's comments of one rating by helpful votes, then time (GSI
    /// `byProductRatingHelpful`, partition key `sku#rating`, sort key `helpfulKey`).
    ProductRatingHelpful(Sku, Rating),
    /// A moderation queue: the comments in one status that is not public, across the shop
    /// (GSI `byQueue`, partition key `status`) or of one product (GSI `byProductQueue`,
    /// partition key `sku#status`), by time (sort key `queueKey`, the sort key again, written
    /// only while the comment is not published); or those with an open report (GSIs
    /// `byReported`, partition key `reported`, and `byProductReported`, partition key
    /// `skuReported`; sort key `reportedKey`, written only while a report is open).
    Queue(QueueList),
    /// An author's comments, across products: all of them (GSI `byAuthor`, partition key
    /// `authorSub`) or those in one status (GSI `byAuthorStatus`, partition key
    /// `authorStatus`, `sub#status`), by time (sort key `authorKey`, the sort key again,
    /// written on every comment with an author).
    Author(AuthorList),
}

impl Partition {
    /// Whether the partition is sorted by helpful votes first (its positions carry a count).
    pub fn by_helpful(&self) -> bool {
        matches!(
            self,
            Partition::ProductHelpful(_) | Partition::ProductRatingHelpful(..)
        )
    }

    /// Where `comment` sits in this partition's order: its sort key alone (group 0) in a
    /// partition by time, its helpful count then its sort key in one by helpful votes.
    pub fn position_of(&self, comment: &Comment) -> Position {
        Position {
            group: if self.by_helpful() {
                helpful_group(comment.helpful_count)
            } else {
                0
            },
            key: comment.sort_key(),
        }
    }

    /// The partitions `comment` belongs to: the product's four while it is published (and its
    /// verified twin's four, [`verified_list`], when it is a verified purchase), its two queues
    /// otherwise, the two `REPORTED` queues while a report is open on it, and its author's two
    /// lists when it has an author.
    pub fn all_of(comment: &Comment) -> Vec<Partition> {
        let sku = &comment.sku;
        let status = comment.moderation.status;
        let mut all: Vec<Partition> = QueueList::of(status, comment.is_reported(), sku)
            .into_iter()
            .map(Partition::Queue)
            .collect();
        if comment.is_public() {
            let twin = comment.is_verified().then(|| verified_list(sku));
            for list in std::iter::once(sku).chain(twin.as_ref()) {
                all.extend([
                    Partition::Product(list.clone()),
                    Partition::ProductRating(list.clone(), comment.rating),
                    Partition::ProductHelpful(list.clone()),
                    Partition::ProductRatingHelpful(list.clone(), comment.rating),
                ]);
            }
        }
        if let Some(sub) = &comment.author_sub {
            all.extend(
                AuthorList::of(sub, status)
                    .into_iter()
                    .map(Partition::Author),
            );
        }
        all
    }

    /// The partition of `list`'s comments of one rating (for an author's list, of the status
    /// in that slot: `AuthorList::slot`), by time; `None` for an author's unused fifth slot.
    pub fn by_rating(list: &Sku, rating: Rating) -> Option<Partition> {
        match AuthorList::from_index_name(list.as_str()) {
            Some(author) => author.at_slot(rating).map(Partition::Author),
            None => Some(Partition::ProductRating(list.clone(), rating)),
        }
    }

    /// The partition that holds a whole list the index keeps under `list` (a product's SKU, a
    /// queue's or an author's list's name) by time.
    pub fn by_time(list: &Sku) -> Partition {
        if let Some(queue) = QueueList::from_index_name(list.as_str()) {
            return Partition::Queue(queue);
        }
        match AuthorList::from_index_name(list.as_str()) {
            Some(author) => Partition::Author(author),
            None => Partition::Product(list.clone()),
        }
    }
}
