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
    documents.register(&hash, PAGE).await;
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
