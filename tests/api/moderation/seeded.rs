//! `seed --hidden-percent`: the seeded hidden comments are in the table, in no public list and
//! in no count, and `reindex` and `verify` agree (DynamoDB Local and Redis).

use serde_json::Value;

use crate::helpers::process::exit_code;
use crate::support::backends::Backends;

#[tokio::test]
async fn seeded_hidden_comments_are_stored_but_in_no_list_and_verify_is_clean() {
    let backends = Backends::new().await;
    let sku = "SEEDED_HIDDEN";
    let seeded = backends
        .run(
            "seed",
            &["--sku", sku, "--count", "300", "--hidden-percent", "10"],
        )
        .await;
    assert_eq!(exit_code(&seeded), Some(0), "{seeded:?}");
    for command in ["reindex", "verify"] {
        let ran = backends.run(command, &["--sku", sku]).await;
        assert_eq!(exit_code(&ran), Some(0), "{command}: {ran:?}");
    }
    let app = backends.serve(&[]).await;
    assert_eq!(
        app.total(sku, Value::Null).await,
        270,
        "ten of every hundred hidden"
    );
    app.stop().await.expect("clean stop");
}
