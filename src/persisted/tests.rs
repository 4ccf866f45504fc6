use super::*;

const PAGE: &str = "query Page { product(sku: \"A\") { sku } }";
const OTHER: &str = "query Other { product(sku: \"B\") { sku } }";

fn extension(hash: &str) -> async_graphql::Value {
    async_graphql::Value::from_json(serde_json::json!({"version": 1, "sha256Hash": hash}))
        .expect("a value")
}

fn trusted() -> Manifest {
    Manifest::parse(&serde_json::json!({ "page": PAGE }).to_string()).expect("loads")
}

async fn resolve(
    documents: &PersistedDocuments,
    query: &str,
    id: Option<&str>,
    hash: Option<&str>,
) -> Result<Resolved, Refused> {
    let extension = hash.map(extension);
    documents
        .resolve(Asked {
            query,
            document_id: id,
            persisted_query: extension.as_ref(),
        })
        .await
}

#[tokio::test]
async fn an_automatic_persisted_query_is_found_once_registered() {
    let documents = PersistedDocuments::new(None, false, 1024, None, 4096);
    let hash = sha256_hex(PAGE);
    let miss = resolve(&documents, "", None, Some(&hash)).await;
    assert_eq!(miss, Err(Refused::NotFound));
    let sent = resolve(&documents, PAGE, None, Some(&hash)).await;
    assert_eq!(sent, Ok(Resolved::Register(hash.clone())));
    let client = ClientKey::new(None, std::net::Ipv4Addr::LOCALHOST.into());
    assert_eq!(
        documents.register(&client, &hash, PAGE).await,
        Registered::Kept
    );
    let hit = resolve(&documents, "", None, Some(&hash.to_ascii_uppercase())).await;
    assert_eq!(hit, Ok(Resolved::Stored(Arc::from(PAGE))));
    let wrong = resolve(&documents, OTHER, None, Some(&hash)).await;
    assert_eq!(wrong, Err(Refused::HashMismatch));
    assert_eq!(
        resolve(&documents, OTHER, None, None).await,
        Ok(Resolved::AsSent)
    );
}

#[tokio::test]
async fn long_texts_bad_extensions_and_a_disabled_store_are_refused() {
    let small = PersistedDocuments::new(None, false, 1024, None, 10);
    let hash = sha256_hex(PAGE);
    assert!(matches!(
        resolve(&small, PAGE, None, Some(&hash)).await,
        Err(Refused::TooLarge { max: 10, .. })
    ));
    assert!(matches!(
        resolve(&small, "", None, Some("abc")).await,
        Err(Refused::Malformed(_))
    ));
    let off = PersistedDocuments::new(None, false, 0, None, 4096);
    assert_eq!(
        resolve(&off, "", None, Some(&hash)).await,
        Err(Refused::NotSupported)
    );
}

#[tokio::test]
async fn trusted_documents_run_by_id_and_hash_and_only_they_when_required() {
    let hash = sha256_hex(PAGE);
    let open = PersistedDocuments::new(Some(trusted()), false, 1024, None, 4096);
    let stored = Ok(Resolved::Stored(Arc::from(PAGE)));
    assert_eq!(resolve(&open, "", Some("page"), None).await, stored);
    let by_sha = format!("sha256:{hash}");
    assert_eq!(resolve(&open, "", Some(&by_sha), None).await, stored);
    assert_eq!(resolve(&open, "", None, Some(&hash)).await, stored);
    assert_eq!(
        resolve(&open, "", Some("nope"), None).await,
        Err(Refused::NotInList("nope".into()))
    );
    assert!(matches!(
        resolve(&open, PAGE, Some("page"), None).await,
        Err(Refused::Malformed(_))
    ));
    assert_eq!(
        resolve(&open, OTHER, None, None).await,
        Ok(Resolved::AsSent)
    );

    let closed = PersistedDocuments::new(Some(trusted()), true, 1024, None, 4096);
    assert_eq!(
        resolve(&closed, PAGE, None, None).await,
        Ok(Resolved::AsSent)
    );
    assert_eq!(
        resolve(&closed, OTHER, None, None).await,
        Err(Refused::NotInSafelist)
    );
    let other = sha256_hex(OTHER);
    assert_eq!(
        resolve(&closed, OTHER, None, Some(&other)).await,
        Err(Refused::NotInSafelist)
    );
    assert!(matches!(
        resolve(&closed, "", None, Some(&other)).await,
        Err(Refused::NotInList(_))
    ));
}

#[tokio::test]
async fn each_client_registers_only_its_share_and_a_kept_text_takes_none() {
    use crate::ratelimit::{BucketSpec, MemoryLimiter, RateLimits};
    let two_an_hour = RateLimits {
        cost: Some(BucketSpec {
            per_second: 2.0 / 3600.0,
            burst: 2.0,
        }),
        writes: None,
    };
    let limiter = RateLimiter::Memory(Arc::new(MemoryLimiter::new(two_an_hour)));
    let documents = PersistedDocuments::new(None, false, 4096, None, 4096)
        .with_registration_limit(Some(limiter));
    let (one, other) = (
        ClientKey::new(None, "192.0.2.1".parse().expect("ip")),
        ClientKey::new(None, "192.0.2.2".parse().expect("ip")),
    );
    let texts: Vec<String> = (0..3).map(|n| format!("{{ a{n} }}")).collect();
    let hash = |text: &str| sha256_hex(text);
    for text in &texts[..2] {
        assert_eq!(
            documents.register(&one, &hash(text), text).await,
            Registered::Kept
        );
    }
    assert_eq!(
        documents.register(&one, &hash(&texts[2]), &texts[2]).await,
        Registered::OverLimit,
        "a third text in the hour"
    );
    assert!(!documents.keeps(&hash(&texts[2])));
    assert_eq!(
        documents.register(&one, &hash(&texts[0]), &texts[0]).await,
        Registered::Kept,
        "a text kept already costs no share"
    );
    assert_eq!(
        documents
            .register(&other, &hash(&texts[2]), &texts[2])
            .await,
        Registered::Kept,
        "another client has its own share"
    );
}
