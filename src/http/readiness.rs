//! `/readyz`: whether the store and the index answer. The route is public and each check asks
//! DynamoDB (or the embedded store) and Redis, so checks are shared: one runs at a time, and
//! its answer serves every probe for [`FRESH`] after it, however many probes come.

use std::time::{Duration, Instant};

use tokio::sync::Mutex;

use crate::graphql::ApiState;
use crate::index::PageIndex;
use crate::store::CommentStore;

/// How long a backend may take to answer before it counts as unavailable.
const TIMEOUT: Duration = Duration::from_secs(2);

/// How long one check's answer serves later probes.
const FRESH: Duration = Duration::from_secs(1);

/// Whether the store and the index answered, and when that was asked.
#[derive(Clone, Copy, Debug)]
pub(super) struct Answer {
    pub(super) store: bool,
    pub(super) index: bool,
    at: Instant,
}

/// The last check's answer; its lock is held while a check runs, so probes that come meanwhile
/// wait for that check instead of starting their own.
#[derive(Debug, Default)]
pub(super) struct Readiness {
    last: Mutex<Option<Answer>>,
}

impl Readiness {
    /// The last answer if it is fresh, else a new check's.
    pub(super) async fn check(&self, api: &ApiState) -> Answer {
        let mut last = self.last.lock().await;
        if let Some(answer) = *last
            && answer.at.elapsed() < FRESH
        {
            return answer;
        }
        let (store, index) = tokio::join!(
            tokio::time::timeout(TIMEOUT, api.engine.store().ping()),
            tokio::time::timeout(TIMEOUT, api.engine.index().ping()),
        );
        let answer = Answer {
            store: matches!(store, Ok(Ok(()))),
            index: matches!(index, Ok(Ok(()))),
            at: Instant::now(),
        };
        *last = Some(answer);
        answer
    }
}
