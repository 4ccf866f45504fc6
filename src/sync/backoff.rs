//! Waiting that a shutdown can interrupt: exponential backoff for retries, and racing a call
//! against the shutdown token. Shared by the embedded feed and the stream consumer.

use std::time::Duration;

use tokio_util::sync::CancellationToken;

/// `future`'s output, or `None` if `shutdown` fires first (the future is then dropped).
pub(crate) async fn until_cancelled<T>(
    future: impl std::future::Future<Output = T>,
    shutdown: &CancellationToken,
) -> Option<T> {
    tokio::select! {
        output = future => Some(output),
        () = shutdown.cancelled() => None,
    }
}

pub(crate) async fn sleep_or_cancel(pause: Duration, shutdown: &CancellationToken) -> bool {
    tokio::select! {
        () = tokio::time::sleep(pause) => true,
        () = shutdown.cancelled() => false,
    }
}

/// Exponential backoff from 50 ms up to a ceiling.
#[derive(Debug)]
pub(crate) struct Backoff {
    next: Duration,
    max: Duration,
}

impl Backoff {
    const FIRST: Duration = Duration::from_millis(50);

    pub(crate) fn new(max: Duration) -> Self {
        Self {
            next: Self::FIRST,
            max,
        }
    }

    pub(crate) fn reset(&mut self) {
        self.next = Self::FIRST;
    }

    /// Sleeps the next pause; `false` if `shutdown` fired meanwhile.
    pub(crate) async fn wait(&mut self, shutdown: &CancellationToken) -> bool {
        let pause = self.next;
        self.next = (self.next * 2).min(self.max);
        sleep_or_cancel(pause, shutdown).await
    }
}
