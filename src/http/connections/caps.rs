//! How many connections the server holds: at most `max` in all, and at most `per_address` from
//! one client address, so that one client's sockets cannot take the file descriptors every
//! other client (and `/healthz`) needs.
//!
//! The per-address cap keys by the TCP peer, not by `X-Forwarded-For`: a proxy opens the
//! connections, not its clients. An IPv6 peer is keyed by its /64, as budgets are
//! (`ratelimit::network`): one host usually holds a whole /64, and keyed by full address it
//! could open the cap's connections from each of its 2^64 addresses. So peers in `--trusted-proxies` (the load balancer) are
//! counted only against the global cap; the load balancer caps its own clients.
//!
//! An [`Admission`] is held for the life of the socket, inside its IO, so a connection upgraded
//! to a WebSocket counts until the WebSocket closes.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::http::TrustedProxies;
use crate::telemetry::metric;

/// Connections open per untrusted address.
type Counts = Arc<Mutex<HashMap<IpAddr, usize>>>;

/// Connections admitted at once, in all and per address.
#[derive(Debug)]
pub(super) struct ConnectionCaps {
    global: Arc<Semaphore>,
    per_address: usize,
    counts: Counts,
    exempt: TrustedProxies,
}

/// Why a connection was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Refusal {
    /// `--max-connections` are open.
    Global,
    /// `--max-connections-per-address` are open from this address.
    PerAddress,
}

impl Refusal {
    pub(super) fn as_str(self) -> &'static str {
        match self {
            Refusal::Global => "max_connections",
            Refusal::PerAddress => "max_connections_per_address",
        }
    }
}

/// One admitted connection; dropping it frees its places.
#[derive(Debug)]
pub(super) struct Admission {
    _global: OwnedSemaphorePermit,
    address: Option<(IpAddr, Counts)>,
}

impl Admission {
    fn new(global: OwnedSemaphorePermit, address: Option<(IpAddr, Counts)>) -> Self {
        metric::HTTP_CONNECTIONS_OPEN.gauge(&[]).increment(1.0);
        Self {
            _global: global,
            address,
        }
    }
}

impl Drop for Admission {
    fn drop(&mut self) {
        metric::HTTP_CONNECTIONS_OPEN.gauge(&[]).decrement(1.0);
        let Some((address, counts)) = self.address.take() else {
            return;
        };
        let mut counts = counts.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(count) = counts.get_mut(&address) {
            *count -= 1;
            if *count == 0 {
                counts.remove(&address);
            }
        }
    }
}

impl ConnectionCaps {
    /// At most `max` connections (at least 1), `per_address` from one untrusted address.
    pub(super) fn new(max: usize, per_address: usize, exempt: TrustedProxies) -> Self {
        let max = max.clamp(1, Semaphore::MAX_PERMITS);
        Self {
            global: Arc::new(Semaphore::new(max)),
            per_address: per_address.max(1),
            counts: Arc::default(),
            exempt,
        }
    }

    /// A place for a connection from `peer`, if one is free.
    pub(super) fn admit(&self, peer: IpAddr) -> Result<Admission, Refusal> {
        let peer = peer.to_canonical();
        let client = crate::ratelimit::network(peer);
        let global = self
            .global
            .clone()
            .try_acquire_owned()
            .map_err(|_| Refusal::Global)?;
        if self.exempt.contains(peer) {
            return Ok(Admission::new(global, None));
        }
        let mut counts = self.counts.lock().unwrap_or_else(|p| p.into_inner());
        let count = counts.entry(client).or_default();
        if *count >= self.per_address {
            return Err(Refusal::PerAddress);
        }
        *count += 1;
        drop(counts);
        Ok(Admission::new(global, Some((client, self.counts.clone()))))
    }
}

#[cfg(test)]
mod tests {
    use std::net::Ipv4Addr;

    use super::*;

    fn ip(last: u8) -> IpAddr {
        IpAddr::V4(Ipv4Addr::new(203, 0, 113, last))
    }

    #[test]
    fn one_address_gets_its_share_and_the_others_the_rest() {
        let proxies = TrustedProxies::parse(&["10.0.0.1".to_owned()]).expect("an address");
        let caps = ConnectionCaps::new(5, 2, proxies);
        let a1 = caps.admit(ip(1)).expect("first");
        let _a2 = caps.admit(ip(1)).expect("second");
        assert_eq!(caps.admit(ip(1)).err(), Some(Refusal::PerAddress));
        let _b = caps.admit(ip(2)).expect("another address");
        // The load balancer is held only to the global cap.
        let _lb1 = caps
            .admit("10.0.0.1".parse().expect("ip"))
            .expect("trusted");
        let _lb2 = caps
            .admit("10.0.0.1".parse().expect("ip"))
            .expect("trusted");
        assert_eq!(caps.global.available_permits(), 0);
        assert_eq!(caps.admit(ip(3)).err(), Some(Refusal::Global));
        drop(a1);
        assert_eq!(caps.global.available_permits(), 1);
        let _a3 = caps.admit(ip(1)).expect("a place came back");
        assert_eq!(caps.admit(ip(4)).err(), Some(Refusal::Global));
    }

    #[test]
    fn an_ipv6_host_is_one_client_across_its_64() {
        let caps = ConnectionCaps::new(10, 2, TrustedProxies::default());
        let v6 = |s: &str| s.parse::<IpAddr>().expect("ip");
        let _a = caps.admit(v6("2001:db8:1:2::1")).expect("first");
        let _b = caps.admit(v6("2001:db8:1:2:ffff::9")).expect("second");
        assert_eq!(
            caps.admit(v6("2001:db8:1:2:dead:beef:0:1")).err(),
            Some(Refusal::PerAddress),
            "another address of the same /64 is the same client"
        );
        let _c = caps
            .admit(v6("2001:db8:1:3::1"))
            .expect("the next /64 is another");
        let _d = caps.admit(v6("::ffff:203.0.113.7")).expect("IPv4-mapped");
        let _e = caps
            .admit(ip(7))
            .expect("the same IPv4 address, second place");
        assert_eq!(caps.admit(ip(7)).err(), Some(Refusal::PerAddress));
    }
}
