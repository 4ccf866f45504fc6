//! The embedded store's demo data, which `serve` writes at start-up (`--demo-comments`): three
//! products of generated comments (half of them verified purchases), the first of them large, waited for until the index holds
//! them all, so the first page a visitor asks for is whole.

use std::time::{Duration, Instant};

use indicatif::ProgressBar;

use crate::domain::{RatingSet, Sku};
use crate::index::PageIndex;
use crate::store::AnyStore;

/// The embedded demo: `(sku, comments, seed)`. The first one's size is `--demo-comments`.
const DEMO_PRODUCTS: [(&str, u64, u64); 3] = [
    ("DAFT_PUNK_TSHIRT", 250_000, 1),
    ("HELMET_REPLICA", 1_234, 2),
    ("VINYL_RAM", 12, 3),
];

/// Writes the demo products and waits until the index has caught up with them.
pub(super) async fn seed<I: PageIndex>(
    store: &AnyStore,
    index: &I,
    first_size: u64,
) -> anyhow::Result<()> {
    let started = Instant::now();
    for (i, (sku, count, seed)) in DEMO_PRODUCTS.into_iter().enumerate() {
        let sku = Sku::parse(sku)?;
        let count = if i == 0 { first_size } else { count };
        // Half of them verified purchases, so the demo shows the badge and the filter.
        let generated = crate::cli::seed::Generated {
            verified_percent: 50,
            ..crate::cli::seed::Generated::new(count, seed)
        };
        crate::cli::seed::write_comments(store, &sku, generated, &ProgressBar::hidden()).await?;
        let deadline = Instant::now() + Duration::from_secs(120);
        while index.count(&sku, RatingSet::ALL).await? < count {
            anyhow::ensure!(
                Instant::now() < deadline,
                "the index did not catch up with the demo data of {sku}"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
    tracing::info!(
        elapsed_ms = started.elapsed().as_millis() as u64,
        "demo data ready"
    );
    Ok(())
}
