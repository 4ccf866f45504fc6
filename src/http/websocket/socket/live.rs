//! The deliveries one socket's writer reads: the messages of each of its subscriptions gone
//! live in a cohort, polled in turn.
//!
//! Why not `futures`' `SelectAll`: it hands each stream back to a `FuturesUnordered` after every
//! item, one allocation (and a task waker of its own) per delivery, about 7 % of a delivery's
//! CPU at 1,000 subscribers (`perf`, BENCHMARKS.md, "Live comments"). A socket holds at most
//! `--max-subscriptions-per-connection` subscriptions (10 by default), so polling each of them
//! when the writer wakes costs less than that.

use std::pin::Pin;
use std::task::{Context, Poll};

use axum::extract::ws::Message;
use futures::stream::{BoxStream, Stream};

/// The live subscriptions' messages, as one stream; ends (`None`) while it holds none.
#[derive(Default)]
pub(super) struct Live {
    streams: Vec<BoxStream<'static, Message>>,
    /// Where the next poll starts, so that a busy subscription does not starve the others.
    next: usize,
}

impl Live {
    pub(super) fn push(&mut self, stream: BoxStream<'static, Message>) {
        self.streams.push(stream);
    }

    pub(super) fn is_empty(&self) -> bool {
        self.streams.is_empty()
    }
}

impl Stream for Live {
    type Item = Message;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Message>> {
        let this = self.get_mut();
        let mut polled = 0;
        while polled < this.streams.len() {
            let at = (this.next + polled) % this.streams.len();
            match this.streams[at].as_mut().poll_next(cx) {
                Poll::Ready(Some(message)) => {
                    this.next = at + 1;
                    return Poll::Ready(Some(message));
                }
                // An ended subscription leaves; the one moved into its place is polled next.
                Poll::Ready(None) => {
                    drop(this.streams.swap_remove(at));
                }
                Poll::Pending => polled += 1,
            }
        }
        if this.streams.is_empty() {
            Poll::Ready(None)
        } else {
            Poll::Pending
        }
    }
}

#[cfg(test)]
mod tests {
    use futures::StreamExt;
    use futures::stream;

    use super::*;

    fn texts(items: &[&'static str]) -> BoxStream<'static, Message> {
        let messages: Vec<Message> = items.iter().map(|t| Message::Text((*t).into())).collect();
        stream::iter(messages).boxed()
    }

    fn text(message: Message) -> String {
        match message {
            Message::Text(text) => text.to_string(),
            other => panic!("not text: {other:?}"),
        }
    }

    #[tokio::test]
    async fn takes_every_message_of_every_stream_in_turn_and_ends_when_all_did() {
        let mut live = Live::default();
        assert!(live.next().await.is_none(), "nothing to read: ended");
        live.push(texts(&["a1", "a2", "a3"]));
        live.push(texts(&["b1"]));
        live.push(texts(&[]));
        live.push(texts(&["c1", "c2"]));
        let mut got = Vec::new();
        while let Some(message) = live.next().await {
            got.push(text(message));
        }
        assert_eq!(got, ["a1", "b1", "c1", "a2", "c2", "a3"]);
        assert!(live.is_empty());
    }

    #[tokio::test]
    async fn a_pending_stream_does_not_hide_a_ready_one() {
        let mut live = Live::default();
        live.push(stream::pending().boxed());
        live.push(texts(&["ready"]));
        assert_eq!(text(live.next().await.expect("a message")), "ready");
        assert!(
            futures::FutureExt::now_or_never(live.next()).is_none(),
            "the pending stream keeps it open"
        );
    }
}
