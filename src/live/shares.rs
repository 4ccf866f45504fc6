//! Fair shares of the live feed: how many WebSockets and subscriptions one client may hold at
//! once on this server, so no client holds more than a small part of `--max-subscriptions`
//! (two sockets and twenty messages once took all 10,000, and every other visitor was refused).
//!
//! A client is whoever its rate-limit key names (`ratelimit::ClientKey`: a verified token's
//! subject, else its address), so the shares and the budgets agree on who is who. A share is
//! held by a guard ([`Share`]) and returned when the guard is dropped, however the socket or
//! subscription ends. Counts live in this process: each server gives each client its own
//! shares, which bounds what one client holds of each server.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::ratelimit::ClientKey;

/// Per-client caps on sockets and subscriptions, and what each client holds now.
#[derive(Debug)]
pub struct Shares {
    max_sockets: usize,
    max_subscriptions: usize,
    held: Mutex<HashMap<ClientKey, Held>>,
}

#[derive(Clone, Copy, Debug, Default)]
struct Held {
    sockets: usize,
    subscriptions: usize,
}

/// What a share is of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A WebSocket held open.
    Socket,
    /// A subscription held open.
    Subscription,
}

/// A client's share was full.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("this client holds its maximum of {max} {}", match .kind { Kind::Socket => "WebSockets", Kind::Subscription => "subscriptions" })]
pub struct Full {
    /// What the client holds its maximum of.
    pub kind: Kind,
    /// That maximum, per client on this server.
    pub max: usize,
}

impl Shares {
    /// Caps of `max_sockets` WebSockets and `max_subscriptions` subscriptions per client, with
    /// nothing held yet.
    pub fn new(max_sockets: usize, max_subscriptions: usize) -> Arc<Self> {
        Arc::new(Self {
            max_sockets,
            max_subscriptions,
            held: Mutex::default(),
        })
    }

    /// One more socket or subscription for `client`, if its share is not full.
    pub fn take(self: &Arc<Self>, client: &ClientKey, kind: Kind) -> Result<Share, Full> {
        let mut held = self.held.lock().unwrap_or_else(|p| p.into_inner());
        let entry = held.entry(client.clone()).or_default();
        let (count, max) = match kind {
            Kind::Socket => (&mut entry.sockets, self.max_sockets),
            Kind::Subscription => (&mut entry.subscriptions, self.max_subscriptions),
        };
        if *count >= max {
            if entry.sockets == 0 && entry.subscriptions == 0 {
                held.remove(client);
            }
            return Err(Full { kind, max });
        }
        *count += 1;
        Ok(Share {
            shares: self.clone(),
            client: client.clone(),
            kind,
        })
    }

    /// How many of `kind` `client` holds now.
    pub fn held(&self, client: &ClientKey, kind: Kind) -> usize {
        let held = self.held.lock().unwrap_or_else(|p| p.into_inner());
        held.get(client).map_or(0, |h| match kind {
            Kind::Socket => h.sockets,
            Kind::Subscription => h.subscriptions,
        })
    }

    fn give_back(&self, client: &ClientKey, kind: Kind) {
        let mut held = self.held.lock().unwrap_or_else(|p| p.into_inner());
        let Some(entry) = held.get_mut(client) else {
            return;
        };
        match kind {
            Kind::Socket => entry.sockets = entry.sockets.saturating_sub(1),
            Kind::Subscription => entry.subscriptions = entry.subscriptions.saturating_sub(1),
        }
        if entry.sockets == 0 && entry.subscriptions == 0 {
            held.remove(client);
        }
    }
}

/// One socket or subscription of a client, counted until dropped.
#[derive(Debug)]
pub struct Share {
    shares: Arc<Shares>,
    client: ClientKey,
    kind: Kind,
}

impl Drop for Share {
    fn drop(&mut self) {
        self.shares.give_back(&self.client, self.kind);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(name: &str) -> ClientKey {
        ClientKey::new(Some(name), std::net::IpAddr::from([127, 0, 0, 1]))
    }

    #[test]
    fn each_client_gets_its_own_share_and_gets_it_back_when_a_guard_drops() {
        let shares = Shares::new(2, 3);
        let (alice, bob) = (key("alice"), key("bob"));
        let sockets: Vec<Share> = (0..2)
            .map(|_| shares.take(&alice, Kind::Socket).expect("within the share"))
            .collect();
        assert_eq!(
            shares.take(&alice, Kind::Socket).err(),
            Some(Full {
                kind: Kind::Socket,
                max: 2
            })
        );
        assert!(shares.take(&bob, Kind::Socket).is_ok(), "bob has his own");
        let subscriptions: Vec<Share> = (0..3)
            .map(|_| shares.take(&alice, Kind::Subscription).expect("within"))
            .collect();
        assert!(shares.take(&alice, Kind::Subscription).is_err());
        drop(subscriptions);
        assert_eq!(shares.held(&alice, Kind::Subscription), 0);
        assert!(shares.take(&alice, Kind::Subscription).is_ok());
        drop(sockets);
        assert_eq!(shares.held(&alice, Kind::Socket), 0);
        assert!(
            shares.held.lock().expect("lock").is_empty(),
            "nothing is kept for clients that hold nothing"
        );
    }
}
