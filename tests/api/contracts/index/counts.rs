//! What the index counts: a product's comments in any rating subset, each rating's count, the
//! counts and the versions of many products in one read (`ratingSummaries`, the response
//! cache), each as the model says.

use dynapage::domain::RatingSet;
use dynapage::index::PageIndex;

use super::model::{Model, all_rating_subsets, dataset, set};
use crate::support::data::{Rng, sku, upserts};

index_contract! {
    count_sums_the_selected_rating_sets,
    rating_counts_are_each_rating_s_count,
    rating_counts_of_many_products_are_each_product_s_in_the_order_asked,
    versions_of_many_products_are_each_product_s_and_move_with_its_changes,
}

async fn count_sums_the_selected_rating_sets<I: PageIndex>(index: I) {
    let mut rng = Rng::new(1);
    let data = dataset(&mut rng, &sku("COUNTED"), 200, 40);
    index.apply(&upserts(&data)).await.expect("apply");
    let model = Model::of(&data);

    for ratings in all_rating_subsets() {
        let count = index.count(&sku("COUNTED"), ratings).await.expect("count");
        assert_eq!(count, model.count(ratings), "ratings {ratings:?}");
    }
    let unknown = index
        .count(&sku("NOBODY"), RatingSet::ALL)
        .await
        .expect("count");
    assert_eq!(unknown, 0, "a product without comments counts zero");
}

async fn rating_counts_are_each_rating_s_count<I: PageIndex>(index: I) {
    let mut rng = Rng::new(31);
    let data = dataset(&mut rng, &sku("RATED"), 150, 30);
    index.apply(&upserts(&data)).await.expect("apply");
    let model = Model::of(&data);
    let counts = index
        .rating_counts(&sku("RATED"))
        .await
        .expect("rating_counts");
    let expected: Vec<u64> = (1..=5).map(|r| model.count(set(&[r]))).collect();
    assert_eq!(counts.to_vec(), expected);
    assert_eq!(counts.iter().sum::<u64>(), 150);
    assert_eq!(
        index
            .rating_counts(&sku("NOBODY"))
            .await
            .expect("rating_counts"),
        [0; 5]
    );
}

/// `ratingSummaries`' read: every product's counts in the order asked, repeats and products
/// without comments included (on a Cluster the products' sets live in different slots).
async fn rating_counts_of_many_products_are_each_product_s_in_the_order_asked<I: PageIndex>(
    index: I,
) {
    let mut rng = Rng::new(37);
    let products: Vec<_> = (0..12).map(|i| sku(&format!("SHELF_{i}"))).collect();
    let mut expected = Vec::new();
    for (i, product) in products.iter().enumerate() {
        let data = dataset(&mut rng, product, 5 + 7 * i, 10);
        index.apply(&upserts(&data)).await.expect("apply");
        let model = Model::of(&data);
        expected.push(
            (1..=5)
                .map(|r| model.count(set(&[r])))
                .collect::<Vec<u64>>(),
        );
    }
    let mut asked = products.clone();
    asked.reverse();
    asked.push(sku("NOBODY"));
    asked.push(products[3].clone());
    let counts = index
        .rating_counts_many(&asked)
        .await
        .expect("rating_counts_many");
    assert_eq!(counts.len(), asked.len());
    for (product, counts) in asked.iter().zip(&counts) {
        let want = match products.iter().position(|p| p == product) {
            Some(i) => expected[i].clone(),
            None => vec![0; 5],
        };
        assert_eq!(counts.to_vec(), want, "{product:?}");
        let one = index.rating_counts(product).await.expect("rating_counts");
        assert_eq!(&one, counts, "the same as one product's counts");
    }
    assert!(
        index
            .rating_counts_many(&[])
            .await
            .expect("none")
            .is_empty()
    );
}

/// The response cache's read: every product's version in the order asked (on a Cluster the
/// products' keys live in different slots), 0 for a product never changed, the same epoch on
/// every read, and a change to one product moves its version only.
async fn versions_of_many_products_are_each_product_s_and_move_with_its_changes<I: PageIndex>(
    index: I,
) {
    let mut rng = Rng::new(41);
    let products: Vec<_> = (0..12).map(|i| sku(&format!("SHELF_{i}"))).collect();
    for product in &products {
        let data = dataset(&mut rng, product, 3, 10);
        index.apply(&upserts(&data)).await.expect("apply");
    }
    let mut asked = products.clone();
    asked.push(sku("NOBODY"));
    let before = index.product_versions(&asked).await.expect("versions");
    assert_eq!(before.len(), asked.len());
    assert_eq!(before[12].number, 0, "a product never changed");
    for (product, version) in asked.iter().zip(&before) {
        let one = index.product_versions(std::slice::from_ref(product)).await;
        assert_eq!(
            one.expect("a version"),
            vec![*version],
            "{product:?}: epoch and number"
        );
    }
    let data = dataset(&mut rng, &products[5], 1, 10);
    index.apply(&upserts(&data)).await.expect("apply");
    let after = index.product_versions(&asked).await.expect("versions");
    for (i, (b, a)) in before.iter().zip(&after).enumerate() {
        assert_eq!(
            a != b,
            i == 5,
            "only the changed product's version moves: {i}"
        );
    }
    assert!(index.product_versions(&[]).await.expect("none").is_empty());
}
