//! The in-process limiter: every client's buckets in one map, on this process's monotonic clock.
//!
//! Why not the `governor` crate (0.10): its keyed limiter reports the remaining burst only on
//! a positive check, in whole cells, so a refusal or a request that must not spend anything
//! (a peek) could not say `currentlyAvailable`; and it cannot take from two buckets (cost and
//! writes) atomically, so a request refused by one would already have spent the other. The
//! bucket here is a few lines of arithmetic ([`super::bucket`]), the same the Redis script
//! runs, so both stores answer alike.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Instant;

use super::{Charge, ClientKey, RateLimits, Verdict};

/// Clients kept before the first sweep of full buckets.
const SWEEP_FLOOR: usize = 4096;

/// Buckets of every client, in this process.
#[derive(Debug)]
pub struct MemoryLimiter {
    limits: RateLimits,
    epoch: Instant,
    state: Mutex<Buckets>,
}

#[derive(Debug, Default)]
struct Buckets {
    /// Each client's cost and writes `tat`, in microseconds since `epoch`; a client whose
    /// buckets are both full is dropped at the next sweep (absent means [`Buckets::absent`]).
    clients: HashMap<ClientKey, [Option<f64>; 2]>,
    /// The size at which the map is swept next.
    sweep_at: usize,
}

impl MemoryLimiter {
    /// A limiter of `limits` whose buckets start full.
    pub fn new(limits: RateLimits) -> Self {
        Self {
            limits,
            epoch: Instant::now(),
            state: Mutex::new(Buckets {
                clients: HashMap::new(),
                sweep_at: SWEEP_FLOOR,
            }),
        }
    }

    /// The budgets the limiter enforces.
    pub fn limits(&self) -> &RateLimits {
        &self.limits
    }

    /// Takes `charge` from both of `client`'s buckets, or from neither.
    pub fn check(&self, client: &ClientKey, charge: Charge) -> Verdict {
        let now = self.epoch.elapsed().as_secs_f64() * 1e6;
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        // A client with no entry has full buckets.
        let [cost_tat, writes_tat] = state.clients.get(client).copied().unwrap_or([None, None]);
        let cost = self
            .limits
            .cost
            .map(|spec| spec.take(cost_tat, now, charge.cost as f64));
        let writes = self
            .limits
            .writes
            .map(|spec| spec.take(writes_tat, now, charge.writes as f64));
        let verdict = Verdict::of(&self.limits, cost, writes);
        let spends = charge.cost > 0 || charge.writes > 0;
        if verdict.refused.is_none() && spends {
            let tats = [cost.map(|t| t.tat), writes.map(|t| t.tat)];
            state.clients.insert(client.clone(), tats);
            // A client whose buckets are full again is dropped: absent, it has full buckets.
            if state.clients.len() >= state.sweep_at {
                state
                    .clients
                    .retain(|_, tats| tats.iter().flatten().any(|&tat| tat > now));
                state.sweep_at = (state.clients.len() * 2).max(SWEEP_FLOOR);
            }
        }
        verdict
    }

    /// Clients holding state (for tests).
    pub fn clients(&self) -> usize {
        self.state
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clients
            .len()
    }
}

#[cfg(test)]
mod tests {
    use std::net::{IpAddr, Ipv4Addr};

    use super::super::Limit;
    use super::*;

    fn client(last: u8) -> ClientKey {
        ClientKey::new(None, IpAddr::V4(Ipv4Addr::new(203, 0, 113, last)))
    }

    fn charge(cost: u64, writes: u64) -> Charge {
        Charge { cost, writes }
    }

    #[test]
    fn a_refusal_by_one_budget_spends_neither() {
        // 1 cost point a second (nothing refills during the test), 2 writes a minute.
        let limiter = MemoryLimiter::new(RateLimits::new(1, 100, 2));
        let a = client(1);
        assert!(limiter.check(&a, charge(10, 1)).refused.is_none());
        assert!(limiter.check(&a, charge(10, 1)).refused.is_none());
        let refused = limiter.check(&a, charge(10, 1));
        assert_eq!(refused.refused.map(|r| r.limit), Some(Limit::Writes));
        let cost = refused.cost.expect("cost is limited");
        assert_eq!(
            cost.currently_available, 80,
            "the refused request took nothing"
        );
        // A query (no writes) still has the cost budget.
        let query = limiter.check(&a, charge(80, 0));
        assert!(query.refused.is_none());
        assert_eq!(query.cost.map(|c| c.currently_available), Some(0));
    }

    #[test]
    fn clients_have_budgets_of_their_own() {
        let limiter = MemoryLimiter::new(RateLimits::new(1, 10, 0));
        assert!(limiter.check(&client(1), charge(10, 0)).refused.is_none());
        assert!(limiter.check(&client(1), charge(1, 0)).refused.is_some());
        assert!(limiter.check(&client(2), charge(10, 0)).refused.is_none());
    }

    #[test]
    fn a_peek_keeps_no_state_and_full_buckets_are_swept() {
        let limiter = MemoryLimiter::new(RateLimits::new(u32::MAX, 10, 0));
        let peek = limiter.check(&client(1), Charge::default());
        assert_eq!(peek.cost.map(|c| c.currently_available), Some(10));
        assert_eq!(limiter.clients(), 0);
        // At four billion points a second every bucket is full again within a nanosecond, so
        // the sweep at SWEEP_FLOOR clients keeps almost none of them.
        for i in 0..SWEEP_FLOOR {
            let key = ClientKey::new(Some(&i.to_string()), IpAddr::V4(Ipv4Addr::LOCALHOST));
            limiter.check(&key, charge(1, 0));
        }
        assert!(limiter.clients() < SWEEP_FLOOR, "{}", limiter.clients());
    }
}
