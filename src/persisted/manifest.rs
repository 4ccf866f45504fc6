//! Trusted documents: the manifest a client build writes (`--trusted-documents FILE`), read
//! once at start-up. Three formats are read, told apart by their shape:
//!
//! * Apollo's persisted query manifest (`@apollo/generate-persisted-query-manifest`):
//!   `{"format": "apollo-persisted-query-manifest", "version": 1, "operations": [{"id",
//!   "name", "type", "body"}]}`;
//! * Relay's `persisted_queries.json` (`relay-compiler` with `persistConfig`): `{"<id>":
//!   "<text>"}`;
//! * GraphQL Code Generator's `persistedDocuments` output: `{"<hash>": "<text>"}`, the hash
//!   written `sha256:<hex>` or bare.
//!
//! Each document is parsed here, once: a request that names it skips the parse (the parsed
//! form is pinned in the server's document cache). A document is found by the id its manifest
//! gives it and by `sha256:<hex>` of its text (the GraphQL-over-HTTP persisted documents
//! proposal), and its bare hex is what an automatic persisted query sends.

use std::collections::HashMap;
use std::sync::Arc;

use async_graphql::parser::types::ExecutableDocument;

use super::sha256_hex;

/// One trusted document: its text and its parse.
#[derive(Debug)]
pub struct TrustedDocument {
    /// The document's text, as the manifest holds it.
    pub text: Arc<str>,
    /// The text, parsed once at start-up.
    pub document: Arc<ExecutableDocument>,
}

/// The documents of a manifest.
#[derive(Debug, Default)]
pub struct Manifest {
    /// By the manifest's own id (Relay's, Apollo's, codegen's key).
    by_id: HashMap<String, Arc<TrustedDocument>>,
    /// By the SHA-256 of the text, lowercase hex.
    by_hash: HashMap<String, Arc<TrustedDocument>>,
}

/// Why a manifest could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum ManifestError {
    /// The file is not JSON, or not an Apollo manifest's JSON when it has a `format`.
    #[error("is not JSON: {0}")]
    Json(#[from] serde_json::Error),
    /// The JSON has none of the three formats' shapes.
    #[error(
        "is neither an Apollo persisted query manifest nor a JSON object of id to document text \
         (Relay's persisted_queries.json, GraphQL Code Generator's persisted documents)"
    )]
    Shape,
    /// A document's text is not a valid GraphQL document.
    #[error("document `{id}` does not parse: {error}")]
    Syntax {
        /// The document's id in the manifest.
        id: String,
        /// The parser's message.
        error: String,
    },
    /// A document's id is a SHA-256 (bare or `sha256:`) other than its text's.
    #[error(
        "document `{id}` is named by a SHA-256 that is not its text's (its text's is {actual})"
    )]
    WrongHash {
        /// The document's id in the manifest.
        id: String,
        /// The SHA-256 of its text, lowercase hex.
        actual: String,
    },
    /// The manifest lists no document.
    #[error("holds no document")]
    Empty,
}

#[derive(serde::Deserialize)]
struct ApolloManifest {
    format: String,
    version: u32,
    operations: Vec<ApolloOperation>,
}

#[derive(serde::Deserialize)]
struct ApolloOperation {
    id: String,
    body: String,
}

impl Manifest {
    /// Reads a manifest of any of the three formats.
    pub fn parse(json: &str) -> Result<Self, ManifestError> {
        let value: serde_json::Value = serde_json::from_str(json)?;
        let serde_json::Value::Object(map) = value else {
            return Err(ManifestError::Shape);
        };
        let pairs: Vec<(String, String)> = if map.contains_key("format") {
            let apollo: ApolloManifest = serde_json::from_value(serde_json::Value::Object(map))?;
            if apollo.format != "apollo-persisted-query-manifest" || apollo.version != 1 {
                return Err(ManifestError::Shape);
            }
            apollo
                .operations
                .into_iter()
                .map(|o| (o.id, o.body))
                .collect()
        } else {
            map.into_iter()
                .map(|(id, text)| match text {
                    serde_json::Value::String(text) => Ok((id, text)),
                    _ => Err(ManifestError::Shape),
                })
                .collect::<Result<_, _>>()?
        };
        if pairs.is_empty() {
            return Err(ManifestError::Empty);
        }
        let mut manifest = Self::default();
        for (id, text) in pairs {
            manifest.add(id, text)?;
        }
        Ok(manifest)
    }

    fn add(&mut self, id: String, text: String) -> Result<(), ManifestError> {
        let hash = sha256_hex(&text);
        // An id that says it is a SHA-256 must be the text's: otherwise the manifest and the
        // clients disagree on what a hash names.
        let claimed = id.strip_prefix("sha256:").unwrap_or(&id);
        if claimed.len() == 64
            && claimed.bytes().all(|b| b.is_ascii_hexdigit())
            && !claimed.eq_ignore_ascii_case(&hash)
        {
            return Err(ManifestError::WrongHash { id, actual: hash });
        }
        let document =
            crate::graphql::nesting::parse(&text).map_err(|e| ManifestError::Syntax {
                id: id.clone(),
                error: e.to_string(),
            })?;
        let trusted = Arc::new(TrustedDocument {
            text: Arc::from(text),
            document: Arc::new(document),
        });
        self.by_hash.insert(hash, Arc::clone(&trusted));
        self.by_id.insert(id, trusted);
        Ok(())
    }

    /// The document a request's `documentId` names: `sha256:<hex>` of its text, or the id its
    /// manifest gives it.
    pub fn by_document_id(&self, id: &str) -> Option<&Arc<TrustedDocument>> {
        id.strip_prefix("sha256:")
            .and_then(|hex| self.by_hash(hex))
            .or_else(|| self.by_id.get(id))
    }

    /// The document whose text has this SHA-256 (hex, either case).
    pub fn by_hash(&self, hex: &str) -> Option<&Arc<TrustedDocument>> {
        self.by_hash
            .get(hex)
            .or_else(|| self.by_hash.get(&hex.to_ascii_lowercase()))
    }

    /// Every document, once each.
    pub fn documents(&self) -> impl Iterator<Item = &Arc<TrustedDocument>> {
        self.by_hash.values()
    }

    /// How many distinct documents.
    pub fn len(&self) -> usize {
        self.by_hash.len()
    }

    /// Whether the manifest holds no document (never, once parsed).
    pub fn is_empty(&self) -> bool {
        self.by_hash.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PAGE: &str = "query Page { product(sku: \"A\") { sku } }";

    #[test]
    fn reads_the_three_formats_and_finds_documents_by_id_and_hash() {
        let hash = sha256_hex(PAGE);
        let apollo = serde_json::json!({
            "format": "apollo-persisted-query-manifest", "version": 1,
            "operations": [{"id": hash, "name": "Page", "type": "query", "body": PAGE}],
        });
        let relay = serde_json::json!({ "5f1c0a5e7d": PAGE });
        let codegen = serde_json::json!({ format!("sha256:{hash}"): PAGE });
        for (json, id) in [
            (apollo, hash.clone()),
            (relay, "5f1c0a5e7d".to_owned()),
            (codegen, format!("sha256:{hash}")),
        ] {
            let manifest = Manifest::parse(&json.to_string()).expect("loads");
            assert_eq!(manifest.len(), 1);
            let by_id = manifest.by_document_id(&id).expect("by its id");
            assert_eq!(&*by_id.text, PAGE);
            let by_sha = manifest.by_document_id(&format!("sha256:{hash}"));
            assert!(by_sha.is_some(), "by sha256:<hex>");
            assert!(manifest.by_hash(&hash.to_ascii_uppercase()).is_some());
            assert!(manifest.by_document_id("sha256:00").is_none());
        }
    }

    #[test]
    fn refuses_bad_manifests_with_reasons() {
        let wrong = serde_json::json!({ format!("sha256:{}", "0".repeat(64)): PAGE });
        assert!(matches!(
            Manifest::parse(&wrong.to_string()),
            Err(ManifestError::WrongHash { .. })
        ));
        let syntax = serde_json::json!({ "a": "query {" });
        assert!(matches!(
            Manifest::parse(&syntax.to_string()),
            Err(ManifestError::Syntax { .. })
        ));
        assert!(matches!(Manifest::parse("[]"), Err(ManifestError::Shape)));
        assert!(matches!(
            Manifest::parse("{\"a\": 1}"),
            Err(ManifestError::Shape)
        ));
        assert!(matches!(Manifest::parse("{}"), Err(ManifestError::Empty)));
        assert!(matches!(Manifest::parse("{"), Err(ManifestError::Json(_))));
        let other = serde_json::json!({"format": "x", "version": 1, "operations": []});
        assert!(matches!(
            Manifest::parse(&other.to_string()),
            Err(ManifestError::Shape)
        ));
    }
}
