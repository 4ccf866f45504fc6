//! The bodies that tell a connection's [`Activity`] where its requests are: a request body
//! that fails once its deadline passes, and a response body whose end (or drop) ends the
//! request.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::Bytes;
use hyper::body::{Body, Frame, Incoming, SizeHint};
use tokio::time::{Instant, Sleep};

use super::watch::Activity;
use crate::error::BoxError;

/// The error a request body answers once its deadline has passed (`--body-timeout-ms`).
#[derive(Debug, thiserror::Error)]
#[error("the request body did not arrive within {0} ms (--body-timeout-ms)")]
pub struct BodyTimeout(pub u128);

/// A request body that must end by a deadline.
#[derive(Debug)]
pub(super) struct DeadlineBody {
    inner: Incoming,
    /// `None` once the body ended or failed (and for a request without a body).
    deadline: Option<Deadline>,
    timeout: Duration,
    activity: Arc<Activity>,
}

/// When a body must have ended, and its timer, made the first time the body has to wait: most
/// bodies arrive with their head, and need no timer at all.
#[derive(Debug)]
struct Deadline {
    at: Instant,
    timer: Option<Pin<Box<Sleep>>>,
}

impl Deadline {
    fn missed(&mut self, cx: &mut Context<'_>) -> bool {
        let at = self.at;
        let timer = self
            .timer
            .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(at)));
        timer.as_mut().poll(cx).is_ready()
    }
}

impl DeadlineBody {
    /// `inner`, failing `timeout` after `started` unless it has ended by then.
    pub(super) fn new(
        inner: Incoming,
        started: Instant,
        timeout: Duration,
        activity: Arc<Activity>,
    ) -> Self {
        let deadline = (!inner.is_end_stream()).then(|| Deadline {
            at: started + timeout,
            timer: None,
        });
        Self {
            inner,
            deadline,
            timeout,
            activity,
        }
    }

    fn ended(&mut self) {
        if self.deadline.take().is_some() {
            self.activity.body_ended();
        }
    }
}

impl Body for DeadlineBody {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = self.get_mut();
        match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Ready(None) => {
                this.ended();
                Poll::Ready(None)
            }
            Poll::Ready(Some(Ok(frame))) => {
                if this.inner.is_end_stream() {
                    this.ended();
                }
                Poll::Ready(Some(Ok(frame)))
            }
            Poll::Ready(Some(Err(error))) => {
                this.ended();
                Poll::Ready(Some(Err(error.into())))
            }
            Poll::Pending => {
                let missed = this
                    .deadline
                    .as_mut()
                    .is_some_and(|deadline| deadline.missed(cx));
                if !missed {
                    return Poll::Pending;
                }
                this.deadline = None;
                this.activity.body_timed_out();
                Poll::Ready(Some(Err(BodyTimeout(this.timeout.as_millis()).into())))
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// A response body whose end, or drop, ends its request for the connection's [`Activity`].
#[derive(Debug)]
pub(super) struct TrackedBody {
    inner: axum::body::Body,
    activity: Arc<Activity>,
}

impl TrackedBody {
    pub(super) fn new(inner: axum::body::Body, activity: Arc<Activity>) -> Self {
        Self { inner, activity }
    }
}

impl Drop for TrackedBody {
    fn drop(&mut self) {
        self.activity.response_ended();
    }
}

impl Body for TrackedBody {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.get_mut().inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
