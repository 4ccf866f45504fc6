//! Hostile cursors through the GraphQL endpoint: arbitrary strings, and valid cursors of other
//! products or filters with bytes flipped, cut or appended. Every one answers `BAD_CURSOR` with
//! no data: never a panic, never a page of another product or filter.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use proptest::prelude::*;
use serde_json::{Value, json};

use crate::helpers::{DEMO_SKU, PAGE_QUERY, TestApp, error_codes};

#[test]
fn hostile_cursors_always_answer_bad_cursor() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let app = runtime.block_on(TestApp::embedded(60));
    // Valid cursors, but of other connections: another product, and this product filtered.
    let foreign: Vec<String> = runtime.block_on(async {
        let mut cursors = app
            .page("HELMET_REPLICA", json!({ "first": 20 }))
            .await
            .cursors;
        cursors.extend(
            app.page(DEMO_SKU, json!({ "first": 20, "ratings": [5] }))
                .await
                .cursors,
        );
        cursors
    });
    let strategy = prop_oneof![
        ".{0,100}".prop_map(|s| (s, None)),
        (
            any::<prop::sample::Index>(),
            prop::collection::vec((any::<prop::sample::Index>(), 0u8..=255), 0..3),
            any::<bool>()
        )
            .prop_map(|(pick, flips, cut)| (String::new(), Some((pick, flips, cut)))),
    ];
    let cases = std::sync::atomic::AtomicU32::new(0);
    proptest!(ProptestConfig::with_cases(400), |((raw, mutation) in strategy, backward in any::<bool>())| {
        let cursor = match mutation {
            None => raw,
            Some((pick, flips, cut)) => {
                let mut bytes = URL_SAFE_NO_PAD.decode(pick.get(&foreign)).expect("our cursor decodes");
                for (at, mask) in flips {
                    let i = at.index(bytes.len());
                    bytes[i] ^= mask;
                }
                if cut {
                    bytes.pop();
                }
                URL_SAFE_NO_PAD.encode(bytes)
            }
        };
        let args = if backward { json!({ "sku": DEMO_SKU, "last": 5, "before": cursor }) } else { json!({ "sku": DEMO_SKU, "first": 5, "after": cursor }) };
        let response = runtime.block_on(app.graphql(PAGE_QUERY, args));
        prop_assert_eq!(error_codes(&response), vec!["BAD_CURSOR".to_owned()], "{:#}", response);
        prop_assert_eq!(&response["data"], &Value::Null);
        cases.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    });
    assert_eq!(cases.into_inner(), 400, "every case reached the server");
}
