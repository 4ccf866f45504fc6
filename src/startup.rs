//! Turning settings into running backends: the one place that knows which implementation
//! `--store` and `--index` select, and how the index is fed for each combination.

use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::config::{BackendArgs, IndexKind, StoreKind};
use crate::index::AnyIndex;
use crate::index::memory::MemoryIndex;
use crate::store::AnyStore;
use crate::store::memory::MemoryStore;

/// The backends a command works with, and the tasks that keep the index fed.
#[derive(Debug)]
pub struct Backends {
    pub store: AnyStore,
    pub index: AnyIndex,
    /// Background tasks (the embedded change feed); they stop when the shutdown token fires.
    pub tasks: Vec<JoinHandle<()>>,
}

/// Opens the configured backends. With the embedded store, its change feed is followed into
/// the index in the background until `shutdown` fires.
pub async fn open_backends(
    args: &BackendArgs,
    shutdown: &CancellationToken,
) -> anyhow::Result<Backends> {
    let index = match args.index {
        IndexKind::Memory => AnyIndex::Memory(MemoryIndex::new()),
        IndexKind::Redis => anyhow::bail!("--index redis is not available in this build yet"),
    };
    let mut tasks = Vec::new();
    let store = match args.store {
        StoreKind::Memory => {
            let (sink, feed) = tokio::sync::mpsc::unbounded_channel();
            tasks.push(tokio::spawn(crate::sync::follow_feed(
                feed,
                index.clone(),
                shutdown.clone(),
            )));
            AnyStore::Memory(MemoryStore::new().with_change_sink(sink))
        }
        StoreKind::Dynamodb => anyhow::bail!("--store dynamodb is not available in this build yet"),
    };
    Ok(Backends {
        store,
        index,
        tasks,
    })
}
