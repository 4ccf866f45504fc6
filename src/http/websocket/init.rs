//! Who a WebSocket connection is: the viewer of a bearer token (in the upgrade's
//! `Authorization` header, or in `connection_init`'s payload, which wins), the client key its
//! budgets and shares are counted under (the token's subject, else the client's address), and
//! when its token expires (the socket is closed then with 4403, so a socket never outlives the
//! token that opened it; the client reconnects with a fresh one).
//!
//! The socket's share (`live::shares`) is taken under the address (or the header's subject) at
//! the upgrade, before anything else is known, and moves to the token's subject at
//! `connection_init`: signed-in clients behind one address (an office, a mobile carrier's NAT)
//! are counted each on their own. A subject already holding its share of sockets is refused
//! (4029).

use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_graphql::Data;
use futures::future::{BoxFuture, FutureExt};

use super::AppState;
use crate::auth::{Auth, TokenError, Viewer};
use crate::graphql::Budget;
use crate::live::shares::{Full, Kind, Share, Shares};
use crate::ratelimit::{ClientKey, RateLimiter};

/// Close code of a `connection_init` whose token's subject holds its share of sockets.
pub(super) const TOO_MANY_SOCKETS_CLOSE: u16 = 4029;

/// A verified token's viewer and how long the token has left.
pub(super) type SignedIn = (Viewer, Duration);

/// Verifies an `Authorization` value (`Bearer <token>`) under `--auth jwt`; `None` when
/// tokens are not verified (`--auth off`). Each socket verifies its token in full, once: the
/// verification cache would not say when the token expires.
pub(super) async fn verify(auth: &Auth, header: &str) -> Option<Result<SignedIn, TokenError>> {
    let Auth::Jwt(verifier) = auth else {
        return None;
    };
    let token = header
        .strip_prefix("Bearer ")
        .or_else(|| header.strip_prefix("bearer "))
        .map(str::trim)
        .filter(|t| !t.is_empty());
    Some(match token {
        Some(token) => verifier.verify_uncached(token).await,
        None => Err(TokenError::NotBearer),
    })
}

/// Who the connection is now.
struct Who {
    client: ClientKey,
    viewer: Option<Viewer>,
    expires: Option<tokio::time::Instant>,
    /// The socket's share, under `client`.
    socket: Share,
}

/// One connection's identity and socket share.
pub(super) struct Connection {
    address: IpAddr,
    shares: Arc<Shares>,
    who: Mutex<Who>,
}

impl Connection {
    /// A connection from `address`, signed in by its upgrade's header if it had one, if the
    /// client has a socket to spare.
    pub(super) fn open(
        app: &AppState,
        address: IpAddr,
        signed_in: Option<SignedIn>,
    ) -> Result<Self, Full> {
        let shares = app.options.websocket.shares.clone();
        let (viewer, expires) = signed_in.map_or((None, None), |(viewer, left)| {
            (Some(viewer), Some(tokio::time::Instant::now() + left))
        });
        let client = ClientKey::new(viewer.as_ref().map(|v| v.sub.as_str()), address);
        let socket = shares.take(&client, Kind::Socket)?;
        Ok(Self {
            address,
            shares,
            who: Mutex::new(Who {
                client,
                viewer,
                expires,
                socket,
            }),
        })
    }

    fn who(&self) -> std::sync::MutexGuard<'_, Who> {
        self.who.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Whose budgets and shares the connection spends.
    pub(super) fn client(&self) -> ClientKey {
        self.who().client.clone()
    }

    /// When the connection's token expires, if it has one.
    pub(super) fn expires(&self) -> Option<tokio::time::Instant> {
        self.who().expires
    }

    /// The client's address (the voter under `--auth off`).
    pub(super) fn address(&self) -> IpAddr {
        self.address
    }

    /// Who the connection is signed in as, if anyone.
    pub(super) fn viewer(&self) -> Option<Viewer> {
        self.who().viewer.clone()
    }

    /// Signs the connection in as `viewer` (`connection_init`'s token), moving its socket
    /// share to the viewer's key.
    fn sign_in(&self, (viewer, left): SignedIn) -> Result<(), Full> {
        let client = ClientKey::new(Some(&viewer.sub), self.address);
        let mut who = self.who();
        if client != who.client {
            who.socket = self.shares.take(&client, Kind::Socket)?;
            who.client = client;
        }
        who.viewer = Some(viewer);
        who.expires = Some(tokio::time::Instant::now() + left);
        Ok(())
    }
}

/// What became of `connection_init`.
#[derive(Clone)]
pub(super) struct Init {
    /// Set when `connection_init` was accepted.
    pub(super) accepted: Arc<tokio::sync::watch::Sender<bool>>,
    /// The close frame of a refused `connection_init`: async-graphql then closes with 1002
    /// (protocol error); graphql-transport-ws says 4403 (Forbidden) for a bad token, which is
    /// what clients look for. This can go when async-graphql lets us choose.
    refused: Arc<Mutex<Option<(u16, String)>>>,
    auth: Auth,
    connection: Arc<Connection>,
    /// The budgets a refused token's failure floor is charged to (the connection's client):
    /// a bad token costs a signature check, and a client reconnecting with bad tokens must run
    /// out of budget like any other failing client.
    limiter: Option<RateLimiter>,
}

impl Init {
    pub(super) fn new(
        auth: Auth,
        connection: Arc<Connection>,
        limiter: Option<RateLimiter>,
    ) -> Self {
        Self {
            accepted: Arc::default(),
            refused: Arc::default(),
            auth,
            connection,
            limiter,
        }
    }

    /// The close frame to send instead of async-graphql's, when `connection_init` was refused.
    pub(super) fn refused_close(&self) -> Option<(u16, String)> {
        self.refused
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// When the connection's token expires, if it has one.
    pub(super) fn expires(&self) -> Option<tokio::time::Instant> {
        self.connection.expires()
    }

    /// async-graphql's `on_connection_init`: the connection's data, noting the outcome.
    pub(super) fn callback(
        &self,
    ) -> impl FnOnce(serde_json::Value) -> BoxFuture<'static, async_graphql::Result<Data>> + Send + 'static
    {
        let init = self.clone();
        move |payload| {
            async move {
                match init.connection_data(&payload).await {
                    Ok(data) => {
                        init.accepted.send_replace(true);
                        Ok(data)
                    }
                    Err((code, message)) => {
                        let mut refused = init.refused.lock().unwrap_or_else(|p| p.into_inner());
                        *refused = Some((code, message.clone()));
                        Err(async_graphql::Error::new(message))
                    }
                }
            }
            .boxed()
        }
    }

    /// The connection's data: its viewer, from `connection_init`'s bearer token
    /// (`Authorization` or `authorization`) or else from the upgrade's header; none when
    /// neither carried one. Events are public, so none is needed.
    async fn connection_data(&self, payload: &serde_json::Value) -> Result<Data, (u16, String)> {
        let header = payload
            .get("Authorization")
            .or_else(|| payload.get("authorization"))
            .and_then(serde_json::Value::as_str);
        if let Some(header) = header
            && let Some(verified) = verify(&self.auth, header).await
        {
            let signed_in = match verified {
                Ok(signed_in) => signed_in,
                Err(e) => {
                    let client = self.connection.client();
                    let budget = Budget::new(self.limiter.clone(), client, 0);
                    budget.charge_failure(header.len(), 0).await;
                    return Err((4403, format!("the bearer token was refused: {e}")));
                }
            };
            self.connection
                .sign_in(signed_in)
                .map_err(|full| (TOO_MANY_SOCKETS_CLOSE, full.to_string()))?;
        }
        let mut data = Data::default();
        if let Some(viewer) = self.connection.who().viewer.clone() {
            data.insert(viewer);
        }
        Ok(data)
    }
}
