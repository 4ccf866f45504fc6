//! The client's side of a socket: its messages as async-graphql reads them, and when it was
//! last heard (for the keep-alive's silence check).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use axum::extract::ws::{Message, WebSocket};
use futures::stream::{SplitStream, StreamExt};

use super::Ending;

/// The client's messages as async-graphql reads them, noting when each (pongs included) was
/// heard; the stream ends at the socket's first error. A message over [`super::super::MESSAGE_BYTES`]
/// ends the connection with 1009 ("message too big", RFC 6455 §7.4.1) and the cap in the
/// reason: without it the client saw the socket drop with no close frame (1006), and no cause.
pub(super) fn incoming(
    stream: SplitStream<WebSocket>,
    heard: &Heard,
    ending: &Ending,
) -> impl futures::Stream<Item = Vec<u8>> + Unpin + Send + 'static {
    let heard = heard.clone();
    let ending = ending.clone();
    stream
        .take_while(move |message| {
            if message.as_ref().is_err_and(too_long) {
                let reason = format!(
                    "a message is larger than {} bytes, the most this server accepts",
                    super::super::MESSAGE_BYTES
                );
                ending.end(Some((1009, reason)));
            }
            futures::future::ready(message.is_ok())
        })
        .inspect(move |_| heard.now())
        .map(|message| match message {
            Ok(Message::Text(text)) => text.as_bytes().to_vec(),
            Ok(Message::Binary(bytes)) => bytes.to_vec(),
            _ => Vec::new(),
        })
        .filter(|bytes| futures::future::ready(!bytes.is_empty()))
}

/// Whether a read failed on a message (or frame) over the socket's cap.
fn too_long(error: &axum::Error) -> bool {
    use std::error::Error as _;
    let cause = error
        .source()
        .and_then(|e| e.downcast_ref::<tungstenite::Error>());
    matches!(
        cause,
        Some(tungstenite::Error::Capacity(
            tungstenite::error::CapacityError::MessageTooLong { .. }
        ))
    )
}

/// When the client last sent anything, in milliseconds since the socket opened.
#[derive(Clone)]
pub(super) struct Heard {
    opened: Instant,
    ms: Arc<AtomicU64>,
}

impl Heard {
    pub(super) fn new() -> Self {
        Self {
            opened: Instant::now(),
            ms: Arc::default(),
        }
    }

    /// The client was heard just now.
    pub(super) fn now(&self) {
        let ms = u64::try_from(self.opened.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.ms.store(ms, Ordering::Relaxed);
    }

    /// How long the client has said nothing.
    pub(super) fn silent(&self) -> Duration {
        let heard = Duration::from_millis(self.ms.load(Ordering::Relaxed));
        self.opened.elapsed().saturating_sub(heard)
    }
}
