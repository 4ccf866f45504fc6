//! A moderator's queues: the comments of one status that is not public (pending, hidden,
//! rejected), or with an open report, across the shop or for one product, oldest first.
//!
//! A queue is a list like a product's, and the page index keeps it the same way: its own sorted
//! sets, fed by the same versioned changes, so a queue's `totalCount` and a jump to offset
//! 10,000 cost what a product's do. The index knows a list by a [`Sku`]; a queue's is a name no
//! product can have ([`QueueList::index_name`]: it starts with `!`, which `Sku::parse` refuses),
//! so a client can never name one and no product's keys ever meet a queue's.
//!
//! Every comment that is not published is in exactly two queues: its status's queue across the
//! shop and the same queue of its product; one with an open report is in the two `REPORTED`
//! queues too, whatever its status ([`Queue::Reported`]). A change that moves a comment between statuses is
//! also a change of the queues it leaves and enters ([`super::ChangeEvent::side_changes`]).

use super::{AuthorList, CommentStatus, Sku};

/// What starts every queue's index name, and no SKU.
const MARK: char = '!';

/// A moderator's queue: the comments in one status that is not public, or those with open
/// reports (`REPORTED`, whatever their status).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Queue {
    /// Waiting for a first decision.
    Pending,
    /// With an open report ([`super::Comment::is_reported`]).
    Reported,
    /// Taken down after publication.
    Hidden,
    /// Refused before publication.
    Rejected,
}

impl Queue {
    /// Every queue.
    pub const ALL: [Queue; 4] = [
        Queue::Pending,
        Queue::Reported,
        Queue::Hidden,
        Queue::Rejected,
    ];

    /// The queue of the comments in `status`; `None` for the published status, which is no
    /// queue.
    pub fn of_status(status: CommentStatus) -> Option<Self> {
        match status {
            CommentStatus::Pending => Some(Queue::Pending),
            CommentStatus::Published => None,
            CommentStatus::Hidden => Some(Queue::Hidden),
            CommentStatus::Rejected => Some(Queue::Rejected),
        }
    }

    /// The status whose comments the queue holds; `None` for `REPORTED`.
    pub fn status(self) -> Option<CommentStatus> {
        match self {
            Queue::Pending => Some(CommentStatus::Pending),
            Queue::Reported => None,
            Queue::Hidden => Some(CommentStatus::Hidden),
            Queue::Rejected => Some(CommentStatus::Rejected),
        }
    }

    /// The queue's name (`PENDING`, `REPORTED`, …): the GraphQL enum's value.
    pub fn as_str(self) -> &'static str {
        match self.status() {
            Some(status) => status.as_str(),
            None => "REPORTED",
        }
    }

    fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|queue| queue.as_str() == name)
    }

    /// Whether a comment in `status`, `reported` or not, is in this queue.
    pub fn holds(self, status: CommentStatus, reported: bool) -> bool {
        match self.status() {
            Some(own) => own == status,
            None => reported,
        }
    }
}

/// One queue ([`Queue`]) of one product, or of the whole shop.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct QueueList {
    queue: Queue,
    sku: Option<Sku>,
}

impl QueueList {
    /// The queue `queue` of `sku`'s comments, or the shop's.
    pub fn new(queue: Queue, sku: Option<Sku>) -> Self {
        Self { queue, sku }
    }

    /// The queues a comment of `sku` in `status`, `reported` or not, is in: its status's
    /// (none while it is published) and `REPORTED` while a report is open on it, each across
    /// the shop and for its product.
    pub fn of(status: CommentStatus, reported: bool, sku: &Sku) -> Vec<QueueList> {
        Queue::of_status(status)
            .into_iter()
            .chain(reported.then_some(Queue::Reported))
            .flat_map(|queue| [Self::new(queue, None), Self::new(queue, Some(sku.clone()))])
            .collect()
    }

    /// The queue this list is of.
    pub fn queue(&self) -> Queue {
        self.queue
    }

    /// The product whose comments the queue holds; `None` for the whole shop.
    pub fn sku(&self) -> Option<&Sku> {
        self.sku.as_ref()
    }

    /// The name the page index keeps this queue under: `!PENDING` for the shop's queue,
    /// `!PENDING!<sku>` for a product's.
    pub fn index_name(&self) -> Sku {
        let mut name = format!("{MARK}{}", self.queue.as_str());
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
        let (queue, sku) = match rest.split_once(MARK) {
            Some((queue, sku)) => (queue, Some(Sku::parse(sku).ok()?)),
            None => (rest, None),
        };
        Some(Self::new(Queue::parse(queue)?, sku))
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
        for queue in Queue::ALL {
            for list in [
                QueueList::new(queue, None),
                QueueList::new(queue, Some(sku.clone())),
            ] {
                let name = list.index_name();
                assert!(Sku::parse(name.as_str()).is_err(), "{name}");
                assert_eq!(
                    QueueList::from_index_name(name.as_str()),
                    Some(list.clone())
                );
                assert_eq!(list_name(name.as_str()), Some(name));
            }
        }
        assert!(QueueList::of(CommentStatus::Published, false, &sku).is_empty());
        assert_eq!(QueueList::of(CommentStatus::Published, true, &sku).len(), 2);
        assert_eq!(QueueList::of(CommentStatus::Hidden, true, &sku).len(), 4);
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
