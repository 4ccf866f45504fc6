//! The bodies that tell a connection's [`Activity`] where its requests are: a request body
//! that fails once its deadline passes, and a response body whose end (or drop) ends the
//! request.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

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
pub struct DeadlineBody {
    inner: Incoming,
    /// `None` once the body ended or failed (and for a request without a body).
    deadline: Option<Pin<Box<Sleep>>>,
    timeout_ms: u128,
    activity: Arc<Activity>,
}

impl DeadlineBody {
    /// `inner`, failing at `deadline` unless it has ended by then.
    pub fn new(inner: Incoming, deadline: Instant, activity: Arc<Activity>) -> Self {
        let timeout_ms = deadline
            .saturating_duration_since(Instant::now())
            .as_millis();
        let deadline =
            (!inner.is_end_stream()).then(|| Box::pin(tokio::time::sleep_until(deadline)));
        Self {
            inner,
            deadline,
            timeout_ms,
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
                    .is_some_and(|deadline| deadline.as_mut().poll(cx).is_ready());
                if !missed {
                    return Poll::Pending;
                }
                this.deadline = None;
                this.activity.body_timed_out();
                Poll::Ready(Some(Err(BodyTimeout(this.timeout_ms).into())))
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
pub struct TrackedBody {
    inner: axum::body::Body,
    activity: Arc<Activity>,
}

impl TrackedBody {
    pub fn new(inner: axum::body::Body, activity: Arc<Activity>) -> Self {
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
