//! What one connection is doing, and the watchdog that closes it when it has waited too long.
//!
//! hyper's own `header_read_timeout` also runs while a keep-alive connection waits for its next
//! request, so it cannot be both a short header timeout (slowloris) and an idle timeout longer
//! than a load balancer's (a server that closes an idle connection first makes the balancer
//! answer 502 now and then). So the socket and the service report here, and the watchdog
//! applies each timeout to its own phase:
//!
//! | phase | closed after |
//! |---|---|
//! | new, waiting for its first request | `header` since it was accepted |
//! | waiting for the next request, nothing of it read | `idle` since the last response ended |
//! | part of a request's head read | `header` since its first byte |
//! | a request's body being read | `body` since its head (the body then fails, see `bodies`) |
//! | a request in flight, nothing read or written | `idle` since the last byte either way |
//!
//! The last row bounds a client that does not read its response. A handler's own time is
//! bounded by `--request-timeout-ms`, below `idle`.
//!
//! The watchdog runs in its connection's task and sleeps until the deadline it last computed.
//! A change that leaves the deadline where it was or later does not wake it (it finds the later
//! deadline when its sleep ends, and sleeps again): most changes of a request's life only push
//! the deadline back, and every wake-up re-polls the whole connection and re-arms a timer, a
//! cost paid per request (BENCHMARKS.md, "Cost of the abuse checks"). Only a deadline that
//! comes earlier (a head starting on an idle connection, a body that missed its deadline)
//! wakes it.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;

/// How long each phase may last (the module's table).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timeouts {
    /// From a connection's accepting, or a request's first byte, until the request's head is read
    /// (`--header-timeout-ms`).
    pub header: Duration,
    /// From a request's head until its body is read (`--body-timeout-ms`).
    pub body: Duration,
    /// Between requests on a keep-alive connection, and while a request in flight moves no byte
    /// either way (`--idle-timeout-ms`).
    pub idle: Duration,
}

/// A body that failed its deadline closes its connection this long after, at the latest (its
/// handler's answer is sent first, when it comes in time).
const DOOMED_GRACE: Duration = Duration::from_secs(1);

/// Why the watchdog closed a connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Expired {
    Header,
    Body,
    Idle,
}

impl Expired {
    pub(super) fn as_str(self) -> &'static str {
        match self {
            Expired::Header => "header_timeout",
            Expired::Body => "body_timeout",
            Expired::Idle => "idle_timeout",
        }
    }
}

#[derive(Debug)]
struct State {
    /// Requests whose response has not ended.
    in_flight: usize,
    /// Since when the connection has waited for a request.
    idle_since: Instant,
    /// When the first byte of the next request's head was read.
    head_since: Option<Instant>,
    /// When the body being read must have ended.
    body_deadline: Option<Instant>,
    /// The last byte read or written.
    last_progress: Instant,
    /// When a body missed its deadline.
    doomed_at: Option<Instant>,
    /// The deadline the watchdog sleeps until, and its timeouts (`None` before it first looks).
    watched: Option<(Instant, Timeouts)>,
}

impl State {
    /// When the connection is due to close and why.
    fn deadline(&self, timeouts: &Timeouts) -> (Instant, Expired) {
        if let Some(doomed) = self.doomed_at {
            let at = if self.in_flight == 0 {
                doomed
            } else {
                doomed + DOOMED_GRACE
            };
            return (at, Expired::Body);
        }
        if self.in_flight == 0 {
            return match self.head_since {
                Some(head) => (head + timeouts.header, Expired::Header),
                None => (self.idle_since + timeouts.idle, Expired::Idle),
            };
        }
        let stalled = (self.last_progress + timeouts.idle, Expired::Idle);
        match self.body_deadline {
            Some(body) if body + DOOMED_GRACE < stalled.0 => (body + DOOMED_GRACE, Expired::Body),
            _ => stalled,
        }
    }

    /// Whether the deadline is now earlier than the one the watchdog sleeps until.
    fn came_earlier(&self) -> bool {
        self.watched
            .is_some_and(|(armed, timeouts)| self.deadline(&timeouts).0 < armed)
    }
}

/// One connection's activity, shared by its socket, its service and its watchdog.
#[derive(Debug)]
pub(super) struct Activity {
    state: Mutex<State>,
    changed: Notify,
    /// The service answered 101: the socket is a WebSocket from the next write on.
    upgraded: AtomicBool,
}

impl Activity {
    pub(super) fn new() -> Self {
        let now = Instant::now();
        Self {
            state: Mutex::new(State {
                in_flight: 0,
                idle_since: now,
                // A new connection is there to send a request: it gets the header timeout, not
                // the idle one (which is for keep-alive connections between requests).
                head_since: Some(now),
                body_deadline: None,
                last_progress: now,
                doomed_at: None,
                watched: None,
            }),
            changed: Notify::new(),
            upgraded: AtomicBool::new(false),
        }
    }

    /// The service answered `101 Switching Protocols` (a WebSocket upgrade).
    pub(super) fn upgrading(&self) {
        self.upgraded.store(true, Ordering::Relaxed);
    }

    pub(super) fn is_upgraded(&self) -> bool {
        self.upgraded.load(Ordering::Relaxed)
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Wakes the watchdog when `state`'s deadline came earlier than the one it sleeps until.
    fn settle(&self, state: std::sync::MutexGuard<'_, State>) {
        let wake = state.came_earlier();
        drop(state);
        if wake {
            self.changed.notify_one();
        }
    }

    pub(super) fn read(&self) {
        let now = Instant::now();
        let mut state = self.state();
        state.last_progress = now;
        if state.in_flight == 0 && state.head_since.is_none() {
            state.head_since = Some(now);
            self.settle(state);
        }
    }

    pub(super) fn wrote(&self) {
        self.state().last_progress = Instant::now();
    }

    /// A request's head has been read; its body, if it has one, must end within `body`.
    /// Returns when (the body's deadline counts from then).
    pub(super) fn request_started(&self, has_body: bool, body: Duration) -> Instant {
        let now = Instant::now();
        let mut state = self.state();
        state.in_flight += 1;
        state.head_since = None;
        state.last_progress = now;
        state.body_deadline = has_body.then(|| now + body);
        self.settle(state);
        now
    }

    /// The request's body was read to its end.
    pub(super) fn body_ended(&self) {
        let mut state = self.state();
        state.body_deadline = None;
        self.settle(state);
    }

    /// The request's body missed its deadline: the connection is closed once the answer is
    /// sent (or [`DOOMED_GRACE`] later).
    pub(super) fn body_timed_out(&self) {
        let mut state = self.state();
        state.doomed_at = Some(Instant::now());
        self.settle(state);
    }

    /// A response ended (or was dropped).
    pub(super) fn response_ended(&self) {
        let now = Instant::now();
        let mut state = self.state();
        state.in_flight = state.in_flight.saturating_sub(1);
        if state.in_flight == 0 {
            state.idle_since = now;
            state.head_since = None;
            state.body_deadline = None;
        }
        self.settle(state);
    }

    /// When the connection is due to close and why.
    #[cfg(test)]
    fn deadline(&self, timeouts: &Timeouts) -> (Instant, Expired) {
        self.state().deadline(timeouts)
    }

    /// Resolves when the connection has overstayed its phase (the module's table). It sleeps
    /// until the deadline it computed; changes wake it only when they bring it earlier (the
    /// module's comment).
    pub(super) async fn expired(&self, timeouts: Timeouts) -> Expired {
        loop {
            let (at, why) = {
                let mut state = self.state();
                let (at, why) = state.deadline(&timeouts);
                state.watched = Some((at, timeouts));
                (at, why)
            };
            if at <= Instant::now() {
                return why;
            }
            tokio::select! {
                () = self.changed.notified() => {}
                () = tokio::time::sleep_until(at) => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TIMEOUTS: Timeouts = Timeouts {
        header: Duration::from_secs(10),
        body: Duration::from_secs(30),
        idle: Duration::from_secs(75),
    };

    #[test]
    fn each_phase_has_its_own_deadline() {
        let activity = Activity::new();
        let (opened_at, why) = activity.deadline(&TIMEOUTS);
        assert_eq!(why, Expired::Header, "a new connection must send a request");
        activity.read();
        let (header_at, why) = activity.deadline(&TIMEOUTS);
        assert_eq!(why, Expired::Header);
        assert_eq!(
            header_at, opened_at,
            "from the connection's start, not the first byte"
        );
        activity.request_started(true, TIMEOUTS.body);
        let (body_at, why) = activity.deadline(&TIMEOUTS);
        assert_eq!(why, Expired::Body);
        assert!(body_at > header_at);
        activity.body_ended();
        let (stalled_at, why) = activity.deadline(&TIMEOUTS);
        assert_eq!(why, Expired::Idle);
        assert!(stalled_at > body_at);
        activity.response_ended();
        let (idle_at, why) = activity.deadline(&TIMEOUTS);
        assert_eq!(why, Expired::Idle);
        activity.read();
        let (next_head_at, why) = activity.deadline(&TIMEOUTS);
        assert_eq!(why, Expired::Header);
        assert!(
            next_head_at < idle_at,
            "a started head has less time than an idle wait"
        );
        activity.request_started(false, TIMEOUTS.body);
        activity.response_ended();
        // Bytes read while a request is in flight are its body, not a new head.
        activity.request_started(false, TIMEOUTS.body);
        activity.read();
        assert_eq!(activity.deadline(&TIMEOUTS).1, Expired::Idle);
    }

    /// Whether a notification is waiting for the watchdog (and takes it).
    fn woken(activity: &Activity) -> bool {
        use futures::FutureExt as _;
        activity.changed.notified().now_or_never().is_some()
    }

    /// As `expired` does before it sleeps.
    fn watch(activity: &Activity) {
        let mut state = activity.state();
        let at = state.deadline(&TIMEOUTS).0;
        state.watched = Some((at, TIMEOUTS));
    }

    #[test]
    fn only_a_deadline_that_comes_earlier_wakes_the_watchdog() {
        let activity = Activity::new();
        watch(&activity);
        activity.read();
        activity.request_started(true, TIMEOUTS.body);
        activity.body_ended();
        activity.response_ended();
        assert!(!woken(&activity), "each step pushed the deadline back");
        watch(&activity);
        activity.read();
        assert!(
            woken(&activity),
            "a head on an idle connection has less time"
        );
        activity.request_started(true, TIMEOUTS.body);
        watch(&activity);
        activity.body_timed_out();
        assert!(woken(&activity), "a missed body closes the connection soon");
    }

    #[tokio::test]
    async fn a_body_that_missed_its_deadline_closes_once_answered() {
        let activity = Activity::new();
        activity.request_started(true, TIMEOUTS.body);
        activity.body_timed_out();
        let (at, why) = activity.deadline(&TIMEOUTS);
        assert_eq!(why, Expired::Body);
        assert!(at > Instant::now(), "the answer gets a grace period");
        activity.response_ended();
        let closed = tokio::time::timeout(Duration::from_secs(1), activity.expired(TIMEOUTS));
        assert_eq!(closed.await, Ok(Expired::Body));
    }

    #[tokio::test]
    async fn the_watchdog_wakes_when_a_head_starts() {
        let short = Timeouts {
            header: Duration::from_millis(50),
            ..TIMEOUTS
        };
        let activity = std::sync::Arc::new(Activity::new());
        activity.request_started(false, TIMEOUTS.body);
        activity.response_ended();
        let watching = tokio::spawn({
            let activity = activity.clone();
            async move { activity.expired(short).await }
        });
        tokio::time::sleep(Duration::from_millis(20)).await;
        activity.read();
        let closed = tokio::time::timeout(Duration::from_secs(2), watching).await;
        assert_eq!(closed.expect("in time").expect("no panic"), Expired::Header);
    }
}
