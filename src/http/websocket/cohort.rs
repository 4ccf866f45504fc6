//! Cohorts: subscribers who asked the same thing share one execution of the selection set per
//! event and one serialized payload.
//!
//! Two subscriptions are in one cohort when their document, operation name and variables are
//! equal (a resume cursor in the variables too: the replay, which the cursor decides, stays
//! each subscriber's own) and, when the document asks `viewerCanUpdate`, `viewerCanDelete`,
//! `moderation` or `reportCount`, when their viewers may change (and see the moderation of)
//! the same comments, and, when it asks `viewerFoundHelpful`,
//! when they are the same voter (their token's subject, else their address): the answers
//! that depend on who asks.
//!
//! A cohort is one task ([`Cohorts::join`]) running the subscription once through the schema
//! (`graphql::subscription::cohort::SharedRun`), serializing each response once, and
//! broadcasting it as a [`Frame`] to its members through a ring of `--subscription-buffer`
//! frames: each member reads at its own pace, so a slow member never slows its cohort; one that
//! falls a whole ring behind gets `SLOW_SUBSCRIBER`, as a lone subscription does.
//!
//! A member's own execution does what a lone subscription does up to going live (arguments,
//! slot, budget, replay) and joins its cohort where a lone subscription subscribes to the hub.
//! Then it yields one marker response ([`JOIN_MARKER`]) through async-graphql, which gives it
//! the subscription's `id`; the relay ([`Members::claim`]) takes the member from there and
//! hands the socket's writer the cohort's frames as `next` (`data` for legacy `graphql-ws`)
//! messages of that id, which the writer reads and sends itself. Why the marker: async-graphql
//! owns the protocol and never tells its executor a subscription's id, and it serializes every
//! response itself, per subscriber.
//!
//! Each message is the id's prefix, the shared payload and a closing brace, copied into one
//! buffer: axum's `Message::Text` is one contiguous buffer, and tungstenite copies it into its
//! write buffer again anyway, so the payload is copied twice per subscriber but serialized once.

use std::collections::{HashMap, HashSet};
use std::net::IpAddr;
use std::sync::{Arc, Mutex};

use async_graphql::http::WebSocketProtocols;
use async_graphql::{Data, Request, Response, Value};
use axum::extract::ws::{Message, Utf8Bytes};
use futures::stream::{BoxStream, StreamExt};
use tokio::sync::{broadcast, oneshot};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tokio_util::task::task_tracker::TaskTrackerToken;

use crate::auth::Viewer;
use crate::domain::{Access, CommentId};
use crate::graphql::cohort::{Delivered, SharedRun};
use crate::graphql::{ApiSchema, ClientAddress, VIEWER_FOUND_HELPFUL};
use crate::live::Hub;
use crate::ratelimit::ClientKey;
use crate::telemetry::metric;

/// The extension of the marker response a member yields when it goes live.
pub(super) const JOIN_MARKER: &str = "dynapageCohortJoin";

/// What makes two subscriptions one cohort.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(super) struct Key {
    query: String,
    operation_name: Option<String>,
    variables: String,
    /// Who may change what, when the document asks (`viewerCan…`, `moderation`,
    /// `reportCount`); `None` otherwise.
    viewer: Option<String>,
    /// Who votes (the client's key), when the document asks `viewerFoundHelpful`.
    voter: Option<String>,
}

/// Who a subscription's connection is: its viewer, if signed in, and its address.
#[derive(Clone, Debug)]
pub(super) struct Asking {
    pub(super) viewer: Option<Viewer>,
    pub(super) address: IpAddr,
}

impl Key {
    /// The cohort of `request`, from a connection signed in as `viewer` whose budgets are
    /// `client`'s.
    pub(super) fn of(request: &Request, viewer: Option<&Viewer>, client: &ClientKey) -> Self {
        let voter = request
            .query
            .contains(VIEWER_FOUND_HELPFUL)
            .then(|| client.to_string());
        // `moderation` (its author's and moderators') and `reportCount` (moderators') depend
        // on who asks as `viewerCan…` does: by the same access.
        let personal = ["viewerCan", "moderation", "reportCount"];
        let asks = personal.iter().any(|field| request.query.contains(field));
        let viewer = asks.then(|| match viewer {
            None => "anonymous".to_owned(),
            Some(viewer) => match viewer.access() {
                Access::Any => "any".to_owned(),
                Access::Author(sub) => format!("author:{sub}"),
            },
        });
        Self {
            query: request.query.clone(),
            operation_name: request.operation_name.clone(),
            variables: serde_json::to_string(&request.variables).unwrap_or_default(),
            viewer,
            voter,
        }
    }

    /// The cohort's own request, and the session data it runs with (the viewer and the
    /// address only when the answer depends on them).
    fn request(
        &self,
        request_variables: async_graphql::Variables,
        asking: Asking,
    ) -> (Request, Data) {
        let mut request = Request::new(self.query.clone()).variables(request_variables);
        request.operation_name = self.operation_name.clone();
        let mut data = Data::default();
        if self.viewer.is_some() || self.voter.is_some() {
            if let Some(viewer) = asking.viewer {
                data.insert(viewer);
            }
        }
        if self.voter.is_some() {
            data.insert(ClientAddress(asking.address));
        }
        (request, data)
    }
}

/// One response of a cohort's run, serialized once.
#[derive(Debug)]
pub(super) enum Frame {
    /// An event, and the change it came from.
    Event {
        delivered: Delivered,
        payload: Utf8Bytes,
    },
    /// A response that ends the run (the run fell behind the hub): the cohort is over.
    End(Utf8Bytes),
}

/// This server's cohorts.
#[derive(Debug, Default)]
pub struct Cohorts {
    running: Mutex<HashMap<Key, broadcast::Sender<Arc<Frame>>>>,
    /// Every cohort's task, and every socket's ([`Cohorts::track`]). Each holds the schema, and
    /// with it the store (the embedded store's directory lock too): a stopping server waits for
    /// them ([`Cohorts::stopped`]).
    tasks: TaskTracker,
}

/// A member's place in its cohort: the frames from the moment it joined, and the first change
/// it may see (earlier changes still in the cohort's ring are not its).
pub(super) struct Joined {
    pub(super) frames: broadcast::Receiver<Arc<Frame>>,
    pub(super) from_seq: u64,
}

impl Cohorts {
    /// Joins the cohort of `key`, starting it (subscribed to the hub at once) if it runs not.
    pub(super) fn join(
        self: &Arc<Self>,
        key: &Key,
        schema: &ApiSchema,
        hub: &Hub,
        variables: async_graphql::Variables,
        asking: Asking,
    ) -> Joined {
        let mut running = self.running.lock().unwrap_or_else(|p| p.into_inner());
        // Frames first, then the seq: every change from `from_seq` on is broadcast by the hub
        // after this, so its frame is sent after the member subscribed.
        if let Some(frames) = running.get(key) {
            let frames = frames.subscribe();
            return Joined {
                frames,
                from_seq: hub.next_seq(),
            };
        }
        let live = hub.subscribe();
        let (sender, frames) = broadcast::channel(hub.capacity());
        let from_seq = hub.next_seq();
        running.insert(key.clone(), sender.clone());
        drop(running);
        metric::SUBSCRIPTION_COHORTS.gauge(&[]).increment(1.0);
        let shared = SharedRun::new(live);
        let (request, data) = key.request(variables, asking);
        let responses =
            schema.execute_stream_with_session_data(request.data(shared.clone()), Arc::new(data));
        self.tasks
            .spawn(run(self.clone(), key.clone(), sender, responses, shared));
        Joined { frames, from_seq }
    }

    /// Ends the cohort of `key` if `sender` is still its channel and, unless `always`, nobody
    /// listens. Under the lock, so no member joins a cohort that is ending.
    fn retire(&self, key: &Key, sender: &broadcast::Sender<Arc<Frame>>, always: bool) -> bool {
        let mut running = self.running.lock().unwrap_or_else(|p| p.into_inner());
        if !always && sender.receiver_count() > 0 {
            return false;
        }
        if running.get(key).is_some_and(|s| s.same_channel(sender)) {
            running.remove(key);
            metric::SUBSCRIPTION_COHORTS.gauge(&[]).decrement(1.0);
        }
        true
    }

    /// Counts a socket's task among those a stopping server waits for, until the token is
    /// dropped. Why: an upgraded socket runs in a task of its own, which the HTTP server's
    /// connection count no longer covers; a server stopped in-process (tests, an embedding
    /// program) returned while a socket's task still held the embedded store's directory lock,
    /// and a restart on the same `--data-dir` was refused (a fresh-clone CI run).
    pub(super) fn track(&self) -> TaskTrackerToken {
        self.tasks.token()
    }

    /// Waits for every cohort and socket to end: sockets close when the server stops, and a
    /// cohort ends when its last member leaves, so promptly. No cohort starts after this is
    /// called.
    pub async fn stopped(&self) {
        self.tasks.close();
        self.tasks.wait().await;
    }
}

/// A cohort's task: runs the subscription once, serializes each response once and broadcasts
/// it, until the run ends or nobody listens.
async fn run(
    cohorts: Arc<Cohorts>,
    key: Key,
    frames: broadcast::Sender<Arc<Frame>>,
    mut responses: BoxStream<'static, Response>,
    shared: Arc<SharedRun>,
) {
    loop {
        let response = tokio::select! {
            response = responses.next() => response,
            // The last member left: end, unless one joined meanwhile (then this waits again).
            () = frames.closed() => {
                if cohorts.retire(&key, &frames, false) {
                    return;
                }
                continue;
            }
        };
        let Some(mut response) = response else {
            break;
        };
        coded(&mut response);
        let payload = Utf8Bytes::from(serde_json::to_string(&response).unwrap_or_default());
        let Some(delivered) = shared.take_delivered() else {
            // Taken out of the running cohorts first: nobody joins it after its last frame.
            cohorts.retire(&key, &frames, true);
            let _ = frames.send(Arc::new(Frame::End(payload)));
            return;
        };
        let _ = frames.send(Arc::new(Frame::Event { delivered, payload }));
        if frames.receiver_count() == 0 && cohorts.retire(&key, &frames, false) {
            return;
        }
    }
    cohorts.retire(&key, &frames, true);
}

/// How a member's deliveries ended, for its own execution to say.
#[derive(Debug)]
pub(super) enum Ended {
    /// It fell this many frames behind: `SLOW_SUBSCRIBER`.
    Slow(u64),
    /// The cohort ended (its last frame was sent): complete quietly.
    Quiet,
}

/// A member gone live, waiting for the relay to learn its id.
pub(super) struct Live {
    pub(super) joined: Joined,
    pub(super) replayed: HashSet<CommentId>,
    /// Cancelled when the member's own stream is dropped (the client completed it, or the
    /// socket closed).
    pub(super) gone: CancellationToken,
    pub(super) ended: oneshot::Sender<Ended>,
}

/// The members of one connection that went live and whose marker the relay has not seen yet.
#[derive(Default)]
pub(super) struct Members {
    parked: Mutex<(u64, HashMap<u64, Live>)>,
}

impl Members {
    /// Parks `live` until the relay claims it; returns the marker response to yield.
    pub(super) fn park(&self, live: Live) -> Response {
        let mut parked = self.parked.lock().unwrap_or_else(|p| p.into_inner());
        parked.0 += 1;
        let token = parked.0;
        parked.1.insert(token, live);
        let mut marker = Response::new(Value::Null);
        marker
            .extensions
            .insert(JOIN_MARKER.to_owned(), Value::from(token));
        marker
    }

    /// When `text` is a member's marker message, the member's deliveries as messages of its
    /// subscription id.
    pub(super) fn claim(
        &self,
        text: &str,
        protocol: WebSocketProtocols,
    ) -> Option<BoxStream<'static, Message>> {
        if !text.contains(JOIN_MARKER) {
            return None;
        }
        let message: serde_json::Value = serde_json::from_str(text).ok()?;
        let token = message
            .pointer(&format!("/payload/extensions/{JOIN_MARKER}"))?
            .as_u64()?;
        let id = message.get("id")?.as_str()?;
        let live = {
            let mut parked = self.parked.lock().unwrap_or_else(|p| p.into_inner());
            parked.1.remove(&token)?
        };
        Some(deliveries(id, protocol, live).boxed())
    }
}

/// The cohort's frames as one member's messages: skips changes from before it joined and
/// additions its replay gave; ends when the member is gone, falls behind, or the cohort ends.
fn deliveries(
    id: &str,
    protocol: WebSocketProtocols,
    live: Live,
) -> impl futures::Stream<Item = Message> + Send + 'static {
    let kind = match protocol {
        WebSocketProtocols::SubscriptionsTransportWS => "data",
        _ => "next",
    };
    let id = serde_json::to_string(id).unwrap_or_default();
    let prefix = format!(r#"{{"type":"{kind}","id":{id},"payload":"#);
    let Live {
        mut joined,
        mut replayed,
        gone,
        ended,
    } = live;
    let message = move |payload: &str| {
        let mut text = String::with_capacity(prefix.len() + payload.len() + 1);
        text.push_str(&prefix);
        text.push_str(payload);
        text.push('}');
        Message::Text(text.into())
    };
    async_stream::stream! {
        let events = metric::SUBSCRIPTION_EVENTS.counter(&[]);
        // One waiter on the token for the member's life: a fresh `cancelled()` per frame
        // registered and dropped one under the token's lock every delivery.
        let gone = gone.cancelled_owned();
        tokio::pin!(gone);
        let end = loop {
            let frame = tokio::select! {
                biased;
                () = &mut gone => return,
                frame = joined.frames.recv() => frame,
            };
            match frame.as_deref() {
                Ok(Frame::Event { delivered, payload }) => {
                    if delivered.seq < joined.from_seq
                        || (delivered.added && replayed.remove(&delivered.comment))
                    {
                        continue;
                    }
                    events.increment(1);
                    yield message(payload);
                }
                Ok(Frame::End(payload)) => {
                    yield message(payload);
                    break Ended::Quiet;
                }
                Err(broadcast::error::RecvError::Lagged(missed)) => break Ended::Slow(*missed),
                Err(broadcast::error::RecvError::Closed) => break Ended::Quiet,
            }
        };
        let _ = ended.send(end);
    }
}

/// Gives every error a code: async-graphql's parse and validation errors come without one (the
/// HTTP handler does the same).
pub(super) fn coded(response: &mut Response) {
    for error in &mut response.errors {
        let extensions = error.extensions.get_or_insert_with(Default::default);
        if extensions.get("code").is_none() {
            extensions.set("code", "GRAPHQL_VALIDATION_FAILED");
        }
    }
}
