//! How `commentEvents` runs when the WebSocket layer groups subscribers into cohorts
//! (`http::websocket::cohort`): subscribers who asked the same thing share one execution of the
//! selection set per event, and each still gets its own replay.
//!
//! Two roles, each given to the resolver as request data:
//!
//! - [`SharedRun`]: the cohort's one execution. It goes live at once from a hub receiver the
//!   cohort subscribed when it was made (so nothing falls between the cohort's birth and its
//!   first poll), never replays, holds no subscription slot (its members do), and notes which
//!   change each event it yields came from ([`Delivered`]), so each member can skip what it
//!   must not see (what came before it joined, what its replay gave already).
//! - [`Member`]: one subscriber's own execution, which does everything a lone subscription
//!   does up to going live (arguments, the slot against `--max-subscriptions`, the budget, the
//!   replay), joins its cohort where a lone subscription subscribes to the hub, and then hands
//!   its slot and replayed ids over ([`Ticket`]) and ends: the cohort's frames take it from
//!   there.
//!
//! The hub, the cohorts and the resolvers know nothing of sockets.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use tokio::sync::broadcast;

use super::Slot;
use crate::domain::CommentId;
use crate::live::LiveChange;

/// Which change an event of the shared run came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Delivered {
    /// The change's `seq` in the hub.
    pub seq: u64,
    /// The comment the change is about.
    pub comment: CommentId,
    /// Whether the event is an ADDED one (a member's replay may have given it already).
    pub added: bool,
}

/// The cohort's one execution of a subscription.
#[derive(Debug)]
pub struct SharedRun {
    live: Mutex<Option<broadcast::Receiver<Arc<LiveChange>>>>,
    last: Mutex<Option<Delivered>>,
}

impl SharedRun {
    /// A run fed by `live`, a receiver subscribed when the cohort was made.
    pub fn new(live: broadcast::Receiver<Arc<LiveChange>>) -> Arc<Self> {
        Arc::new(Self {
            live: Mutex::new(Some(live)),
            last: Mutex::default(),
        })
    }

    pub(super) fn take_live(&self) -> Option<broadcast::Receiver<Arc<LiveChange>>> {
        self.live.lock().unwrap_or_else(|p| p.into_inner()).take()
    }

    pub(super) fn note(&self, delivered: Delivered) {
        *self.last.lock().unwrap_or_else(|p| p.into_inner()) = Some(delivered);
    }

    /// Which change the response just yielded came from; `None` for a response that is no
    /// event (an error that ends the run). The stream yields one response per event, in order,
    /// so the note taken after each response is that response's.
    pub fn take_delivered(&self) -> Option<Delivered> {
        self.last.lock().unwrap_or_else(|p| p.into_inner()).take()
    }
}

/// One subscriber's own execution, up to going live.
pub struct Member {
    join: Box<dyn Fn() + Send + Sync>,
    ticket: Mutex<Option<Ticket>>,
}

impl std::fmt::Debug for Member {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Member").finish_non_exhaustive()
    }
}

impl Member {
    /// A member that calls `join` where a lone subscription would subscribe to the hub (before
    /// its replay reads the store).
    pub fn new(join: impl Fn() + Send + Sync + 'static) -> Arc<Self> {
        Arc::new(Self {
            join: Box::new(join),
            ticket: Mutex::default(),
        })
    }

    pub(super) fn join(&self) {
        (self.join)();
    }

    pub(super) fn hand_over(&self, ticket: Ticket) {
        *self.ticket.lock().unwrap_or_else(|p| p.into_inner()) = Some(ticket);
    }

    /// What the execution handed over when it went live; `None` when it ended before (a bad
    /// argument, a refused replay, a full server).
    pub fn ticket(&self) -> Option<Ticket> {
        self.ticket.lock().unwrap_or_else(|p| p.into_inner()).take()
    }
}

/// A member gone live: its slot against `--max-subscriptions`, held while it listens, and the
/// comments its replay gave (their ADDED events are skipped once).
pub struct Ticket {
    _slot: Slot,
    /// The comments the member's replay gave: their ADDED events are skipped once.
    pub replayed: HashSet<CommentId>,
}

impl std::fmt::Debug for Ticket {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ticket")
            .field("replayed", &self.replayed.len())
            .finish_non_exhaustive()
    }
}

impl Ticket {
    pub(super) fn new(slot: Slot, replayed: HashSet<CommentId>) -> Self {
        Self {
            _slot: slot,
            replayed,
        }
    }
}
