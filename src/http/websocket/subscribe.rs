//! Each `subscribe` of a WebSocket connection ([`SubscriptionsOnly`], the executor the
//! protocol runs): admitted after the check HTTP requests get (`admission::check`), within the
//! connection's and the client's subscription caps, the client's rate of opening subscriptions
//! and its cost budget (paid like an HTTP request: the bytes floor, the failure floor, the
//! price), then run until it ends or goes live in its cohort (`cohort`).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use async_graphql::{Data, Executor, Request, Response, ServerError};
use futures::stream::{BoxStream, StreamExt};
use tokio_util::sync::CancellationToken;

use super::cohort::{self, Asking, Ended, Key, Live, Members};
use super::init::Connection;
use crate::graphql::cohort::Member;
use crate::graphql::field_errors::OutputTypes;
use crate::graphql::{ApiSchema, ApiState, Budget, ClientAddress};
use crate::http::admission::check::{Checked, Rejection, Transport, check_request};
use crate::http::admission::documents::{DocumentCache, MAX_TEXT_BYTES};
use crate::http::{AppState, HttpOptions};
use crate::live::shares::{Kind, Share};
use crate::ratelimit::{Charge, ClientKey};
use crate::telemetry::metric;

/// Runs subscriptions of one connection, after the check HTTP requests get.
#[derive(Clone)]
pub(super) struct SubscriptionsOnly {
    schema: ApiSchema,
    /// What prices a subscription before it runs: the API's settings and limits, the schema's
    /// field types (`graphql::pricing`).
    api: Arc<ApiState>,
    types: Arc<OutputTypes>,
    pub(super) options: Arc<HttpOptions>,
    documents: Arc<DocumentCache>,
    /// Who the connection is, and its shares.
    connection: Arc<Connection>,
    /// Subscriptions this connection holds now.
    open: Arc<AtomicUsize>,
    /// This server's live feed, which cohorts listen to.
    hub: crate::live::Hub,
    /// This connection's members gone live, until the relay learns their ids.
    pub(super) members: Arc<Members>,
}

impl SubscriptionsOnly {
    /// The executor of `connection`'s subscriptions on `app`'s schema.
    pub(super) fn new(app: &AppState, connection: Arc<Connection>) -> Self {
        Self {
            schema: app.schema.clone(),
            api: app.api.clone(),
            types: app.types.clone(),
            options: app.options.clone(),
            documents: app.documents.clone(),
            connection,
            open: Arc::default(),
            hub: app.api.hub.clone(),
            members: Arc::default(),
        }
    }
}

/// A response of one error with `code`.
fn error_response(code: &'static str, message: String) -> Response {
    let mut error = ServerError::new(message, None);
    let mut extensions = async_graphql::ErrorExtensionValues::default();
    extensions.set("code", code);
    error.extensions = Some(extensions);
    Response::from_errors(vec![error])
}

/// Why a `subscribe` was refused before it ran: its code and message.
struct Refused(&'static str, String);

impl Executor for SubscriptionsOnly {
    async fn execute(&self, _request: Request) -> Response {
        let only = Rejection::OnlySubscriptions;
        error_response(only.code(), only.to_string())
    }

    /// A `subscribe`, from its first byte to its last event. It pays like an HTTP request
    /// (issue 42, item 3: refused messages were free, and five sockets of one client sending
    /// them kept 1.3 cores busy): a long document its budget could not pay for is refused
    /// unparsed; a message refused by the checks, or whose document does not parse or
    /// validate, pays the failure floor; one that runs pays its price, and at least its bytes.
    fn execute_stream(
        &self,
        mut request: Request,
        session_data: Option<Arc<Data>>,
    ) -> BoxStream<'static, Response> {
        let this = self.clone();
        let client = this.connection.client();
        let bytes = message_bytes(&request);
        let limiter = this.options.rate_limiter.clone();
        let budget = Arc::new(Budget::new(limiter, client.clone(), 0).for_bytes(bytes));
        // A document short enough to be kept parsed is admitted at once, in the order its
        // messages came (the per-connection limit counts them in that order); a longer one
        // (parsed every time) only once its budget is known to afford the parse, as over HTTP.
        let early =
            (request.query.len() <= MAX_TEXT_BYTES).then(|| this.admit(&mut request, &client));
        async_stream::stream! {
            let admitted = match early {
                Some(admitted) => admitted,
                None => {
                    if let Some(checked) = budget.unaffordable(bytes).await {
                        yield refusal_of(&budget, &checked);
                        return;
                    }
                    this.admit(&mut request, &client)
                }
            };
            let (held, share, checked) = match admitted {
                Ok(admitted) => admitted,
                Err(Refused(code, message)) => {
                    let checked = budget.charge_failure(bytes, 0).await;
                    match budget.refusal_error(&checked, None) {
                        Some(limited) => yield Response::from_errors(vec![limited]),
                        None => yield error_response(code, message),
                    }
                    return;
                }
            };
            let mut stream = this.run(request, session_data, &client, &budget, checked, (held, share));
            let mut first = true;
            while let Some(response) = stream.next().await {
                // A document that did not parse or validate was refused before anything ran;
                // it pays at least the failure floor, as over HTTP.
                if std::mem::take(&mut first) && response.data == async_graphql::Value::Null && !response.errors.is_empty() {
                    let paid = budget.checked().map_or(0, |c| c.cost);
                    budget.charge_failure(bytes, paid).await;
                }
                yield response;
            }
        }
        .boxed()
    }
}

/// A `subscribe`'s size for its bytes floor: its document and its variables as JSON.
fn message_bytes(request: &Request) -> usize {
    let variables = serde_json::to_vec(&request.variables).map_or(0, |v| v.len());
    request.query.len() + variables
}

/// The `RATE_LIMITED` answer of a budget that `checked` found spent.
fn refusal_of(budget: &Budget, checked: &crate::graphql::Checked) -> Response {
    let error = budget.refusal_error(checked, None);
    Response::from_errors(error.into_iter().collect())
}

impl SubscriptionsOnly {
    /// An admitted subscription, run: the client's rate of opening subscriptions, its price
    /// (charged before it runs), then its events, until it ends or goes live in its cohort.
    fn run(
        &self,
        request: Request,
        session_data: Option<Arc<Data>>,
        client: &ClientKey,
        budget: &Arc<Budget>,
        checked: Checked,
        holding: (Held, Share),
    ) -> BoxStream<'static, Response> {
        let settings = self.api.engine.settings();
        let price = checked
            .parsed
            .map(|p| p.price(&self.types, &request, settings));
        let (budget, client) = (budget.clone(), client.clone());
        let api = self.api.clone();
        let (member, joined) = self.member(&request);
        let request = request
            .data(budget.clone())
            .data(member.clone())
            .data(ClientAddress(self.connection.address()));
        let limiter = self.options.websocket.subscribe_limiter.clone();
        let schema = self.schema.clone();
        let members = self.members.clone();
        let subscription = async_stream::stream! {
            let _held = holding;
            if let Some(limiter) = limiter {
                let verdict = limiter.check(&client.scoped("subscribe"), Charge { cost: 1, writes: 0 }).await;
                if let Some(refused) = verdict.refused {
                    metric::RATE_LIMITED.counter(&[("limit", "subscribe")]).increment(1);
                    let wait = refused.retry_after.map_or(60, crate::graphql::retry_after_seconds);
                    yield error_response("RATE_LIMITED", format!("this client opens subscriptions faster than it may: retry in {wait} s"));
                    return;
                }
            }
            // Its price, charged before it runs (a document the walk cannot follow is
            // async-graphql's to refuse).
            let admitted = match price {
                Some(price) => budget.admit(price, &api, None).await,
                None => Ok(()),
            };
            if let Err(refusal) = admitted {
                yield Response::from_errors(vec![refusal]);
                return;
            }
            let session = session_data.unwrap_or_default();
            for await mut response in schema.execute_stream_with_session_data(request, session) {
                cohort::coded(&mut response);
                yield response;
            }
            // Gone live: the cohort's frames take over (the socket's writer sends them), this
            // stream holds the slot until then and says why they ended.
            let Some(mut ticket) = member.ticket() else {
                return;
            };
            let Some(joined) = take(&joined) else {
                return;
            };
            let gone = CancellationToken::new();
            let _gone = gone.clone().drop_guard();
            let (ended, end) = tokio::sync::oneshot::channel();
            let replayed = std::mem::take(&mut ticket.replayed);
            yield members.park(Live { joined, replayed, gone, ended });
            if let Ok(Ended::Slow(missed)) = end.await {
                metric::SUBSCRIPTIONS_DROPPED_SLOW.counter(&[]).increment(1);
                tracing::info!(missed_changes = missed, "slow subscriber closed");
                yield error_response(
                    "SLOW_SUBSCRIBER",
                    format!("this subscription fell {missed} changes behind and was closed: resubscribe with `after:` set to the newest cursor you hold"),
                );
            }
        };
        subscription.boxed()
    }
}

/// An admitted subscription's slot, its share and what the request check found.
type Admitted = (Held, Share, Checked);

type Joining = Arc<std::sync::Mutex<Option<cohort::Joined>>>;

fn take(joining: &Joining) -> Option<cohort::Joined> {
    joining.lock().unwrap_or_else(|p| p.into_inner()).take()
}

impl SubscriptionsOnly {
    /// What a subscription passes before it runs: the safelist, the request's checks, this
    /// connection's limit and this client's share; with the check's findings, to price. `Err`:
    /// the refusal to answer with.
    fn admit(&self, request: &mut Request, client: &ClientKey) -> Result<Admitted, Refused> {
        // `--require-trusted-documents` holds for subscriptions too (`crate::persisted`).
        let persisted = &self.options.persisted;
        if persisted.require_trusted() && !persisted.is_trusted(&request.query) {
            let not_trusted = crate::persisted::Refused::NotInSafelist;
            return Err(Refused(not_trusted.code(), not_trusted.to_string()));
        }
        let check = check_request(
            request,
            Transport::WebSocket,
            &self.documents,
            &self.options,
        );
        let checked = match check {
            Ok(checked) => checked,
            Err(rejection) => return Err(Refused(rejection.code(), rejection.to_string())),
        };
        let max = self.options.max_subscriptions_per_connection;
        if self
            .open
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < max).then_some(n + 1)
            })
            .is_err()
        {
            return Err(Refused(
                "TOO_MANY_SUBSCRIPTIONS",
                format!("this connection holds its maximum of {max} subscriptions"),
            ));
        }
        let held = Held(self.open.clone());
        let share = match self
            .options
            .websocket
            .shares
            .take(client, Kind::Subscription)
        {
            Ok(share) => share,
            Err(full) => return Err(Refused("TOO_MANY_SUBSCRIPTIONS", full.to_string())),
        };
        Ok((held, share, checked))
    }

    /// The member role of `request`'s execution, which joins its cohort when the resolver says,
    /// and where the joined cohort is left.
    fn member(&self, request: &Request) -> (Arc<Member>, Joining) {
        let viewer = self.connection.viewer();
        let key = Key::of(request, viewer.as_ref(), &self.connection.client());
        let asking = Asking {
            viewer,
            address: self.connection.address(),
        };
        let variables = request.variables.clone();
        let joining = Joining::default();
        let (cohorts, schema, hub) = (
            self.options.websocket.cohorts.clone(),
            self.schema.clone(),
            self.hub.clone(),
        );
        let left = joining.clone();
        let member = Member::new(move || {
            let joined = cohorts.join(&key, &schema, &hub, variables.clone(), asking.clone());
            *left.lock().unwrap_or_else(|p| p.into_inner()) = Some(joined);
        });
        (member, joining)
    }
}

/// One subscription of a connection, counted until its stream is dropped.
struct Held(Arc<AtomicUsize>);

impl Drop for Held {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}
