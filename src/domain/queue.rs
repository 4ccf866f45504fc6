//! A moderator's queues: the comments of one status that is not public (pending, hidden,
//! rejected), across the shop or for one product, oldest first.
//!
//! A queue is a list like a product's, and the page index keeps it the same way: its own sorted
//! sets, fed by the same versioned changes, so a queue's `totalCount` and a jump to offset
//! 10,000 cost what a product's do. The index knows a list by a [`Sku`]; a queue's is a name no
//! product can have ([`QueueList::index_name`]: it starts with `!`, which `Sku::parse` refuses),
//! so a client can never name one and no product's keys ever meet a queue's.
//!
//! Every comment that is not published is in exactly two queues: its status's queue across the
//! shop and the same queue of its product. A change that moves a comment between statuses is
//! also a change of the queues it leaves and enters ([`super::ChangeEvent::side_changes`]).

use super::{AuthorList, CommentStatus, Sku};

/// What starts every queue's index name, and no SKU.
const MARK: char = '!';

/// One queue: the comments in `status` (never [`CommentStatus::Published`]) of one product, or
/// of the whole shop.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct QueueList {
    status: CommentStatus,
    sku: Option<Sku>,
}

impl QueueList {
    /// The queue of `status` (of `sku`'s comments, or the shop's); `None` for the published
    /// status, which is no queue.
    pub fn new(status: CommentStatus, sku: Option<Sku>) -> Option<Self> {
        (!status.is_public()).then_some(Self { status, sku })
    }

    /// The two queues a comment of `sku` in `status` is in (none while it is published).
    pub fn of(status: CommentStatus, sku: &Sku) -> Option<[QueueList; 2]> {
        let shop = Self::new(status, None)?;
        Some([
            shop,
            Self {
                status,
                sku: Some(sku.clone()),
            },
        ])
    }

    /// The status whose comments the queue holds.
    pub fn status(&self) -> CommentStatus {
        self.status
    }

    /// The product whose comments the queue holds; `None` for the whole shop.
    pub fn sku(&self) -> Option<&Sku> {
        self.sku.as_ref()
    }

    /// The name the page index keeps this queue under: `!PENDING` for the shop's queue,
    /// `!PENDING!<sku>` for a product's.
    pub fn index_name(&self) -> Sku {
        let mut name = format!("{MARK}{}", self.status.as_str());
        if let Some(sku) = &self.sku {
            name.push(MARK);
            name.push_str(sku.as_str());
        }
        Sku::list_name(name)
    }

    /// The queue an index name names ([`QueueList::index_name`]); `None` for a product's SKU
    /// or anything malformed.
    pub fn from_index_name(name: &str) -> Option<Self> {
        let rest = name.strip_prefix(MARK)?;
        let (status, sku) = match rest.split_once(MARK) {
            Some((status, sku)) => (status, Some(Sku::parse(sku).ok()?)),
            None => (rest, None),
        };
        Self::new(CommentStatus::parse(status).ok()?, sku)
    }
}

/// A list's name as the index keeps it, read back from a key: a product's SKU, a queue's or an
/// author's list's name; `None` for anything else.
pub fn list_name(name: &str) -> Option<Sku> {
    match Sku::parse(name) {
        Ok(sku) => Some(sku),
        Err(_) => QueueList::from_index_name(name)
            .map(|queue| queue.index_name())
            .or_else(|| AuthorList::from_index_name(name).map(|list| list.index_name())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_go_and_come_back_and_no_product_has_one() {
        let sku = Sku::parse("TEE-1").expect("sku");
        for status in [
            CommentStatus::Pending,
            CommentStatus::Hidden,
            CommentStatus::Rejected,
        ] {
            for queue in QueueList::of(status, &sku).expect("a queued status") {
                let name = queue.index_name();
                assert!(Sku::parse(name.as_str()).is_err(), "{name}");
                assert_eq!(
                    QueueList::from_index_name(name.as_str()),
                    Some(queue.clone())
                );
                assert_eq!(list_name(name.as_str()), Some(name));
            }
        }
        assert_eq!(QueueList::of(CommentStatus::Published, &sku), None);
        assert_eq!(list_name("TEE-1"), Some(sku));
        for bad in [
            "!PUBLISHED",
            "!NOPE",
            "!PENDING!",
            "!PENDING!a{b}",
            "PEN DING",
            "!",
        ] {
            assert_eq!(list_name(bad), None, "{bad}");
        }
    }
}
