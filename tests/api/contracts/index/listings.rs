//! What the commands read of the index (`verify`, `reindex`, `/readyz`): a product's entries
//! newest first, the products that have members, and a ping.

use dynapage::domain::ChangeEvent;
use dynapage::index::PageIndex;

use super::model::{Model, dataset};
use crate::support::data::{Rng, sku, upserts};

index_contract! {
    entries_are_listed_newest_first_with_their_ratings,
    products_lists_only_products_with_members,
    ping_answers_while_the_index_is_up,
}

async fn entries_are_listed_newest_first_with_their_ratings<I: PageIndex>(index: I) {
    let mut rng = Rng::new(6);
    let product = sku("LISTED");
    let data = dataset(&mut rng, &product, 300, 30);
    index.apply(&upserts(&data)).await.expect("apply");

    let entries = index.entries(&product).await.expect("entries");
    assert_eq!(entries, Model::of(&data).entries(&product));
    assert!(
        entries.windows(2).all(|w| w[0].key > w[1].key),
        "strictly newest first"
    );
    assert_eq!(
        index.entries(&sku("NOBODY")).await.expect("entries"),
        vec![]
    );
}

async fn products_lists_only_products_with_members<I: PageIndex>(index: I) {
    let mut rng = Rng::new(7);
    let names = ["B-2", "A.1", "C_3"];
    let mut all = Vec::new();
    for name in names {
        let data = dataset(&mut rng, &sku(name), 5, 3);
        index.apply(&upserts(&data)).await.expect("apply");
        all.push(data);
    }
    let removals: Vec<ChangeEvent> = all[2]
        .iter()
        .map(|e| ChangeEvent::removal(e.clone()))
        .collect();
    index.apply(&removals).await.expect("apply");

    assert_eq!(
        index.products().await.expect("products"),
        vec![sku("A.1"), sku("B-2")]
    );
}

async fn ping_answers_while_the_index_is_up<I: PageIndex>(index: I) {
    index.ping().await.expect("ping");
}
