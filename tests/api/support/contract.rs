//! How a contract suite is declared: one list of behaviours, each an `async fn` generic over
//! the trait, run as one `#[tokio::test]` per backend and behaviour (STYLE 4). The store and the
//! index suites are both built with [`contract_suite!`] (the index's through `index_contract!`,
//! which names its backends once for the files it is split into), so a behaviour added to either
//! list runs against every backend of that trait, and a test that only makes sense for one
//! backend lives in that backend's own module instead (`backends::dynamodb_store`,
//! `backends::redis_index`).

/// Declares `mod <backend> { #[tokio::test] async fn <behaviour>() }` for every backend and
/// behaviour. Each backend is an expression of a future that yields a fresh backend (its own
/// table or key prefix), so tests never share state; it is evaluated in the calling module.
///
/// ```ignore
/// contract_suite! {
///     backends: { memory => async { MemoryStore::new() }, dynamodb => dynamo_store() },
///     behaviours: [create_refuses_an_existing_id, an_unknown_partition_reads_empty],
/// }
/// ```
macro_rules! contract_suite {
    (
        backends: { $($backend:ident => $make:expr),+ $(,)? },
        behaviours: $behaviours:tt $(,)?
    ) => {
        $( contract_suite!(@backend $backend, $make, $behaviours); )+
    };
    (@backend $backend:ident, $make:expr, [$($behaviour:ident),+ $(,)?]) => {
        mod $backend {
            $(
                #[tokio::test]
                async fn $behaviour() {
                    let backend = {
                        use super::*;
                        $make
                    };
                    super::$behaviour(backend.await).await;
                }
            )+
        }
    };
}
