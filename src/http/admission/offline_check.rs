//! Every check a request passes before anything reads the store, as one call without a server:
//! the bracket count and the parse (`graphql::nesting`), the request check of a transport
//! (`check`: operation kinds, depth, aliases, selections, required variables, a subscription's
//! shape), the price (`graphql::pricing`), and async-graphql's validation and execution on a
//! schema without data (every field that would read fails: nothing is read).
//!
//! Why it exists: it is what the fuzz target (`fuzz/fuzz_targets/request_check.rs`) drives, so
//! that whatever text, variables and transport a client sends, the whole check must end, and
//! never panic or overflow its stack; the hostile-request suite
//! (`tests/api/admission/hostile.rs`) sends the same inputs to the real binary. The limits are
//! the server's defaults.

use super::check::{Transport, check_request};
use super::documents::DocumentCache;
use crate::graphql::field_errors::OutputTypes;
use crate::graphql::pricing::Priced;
use crate::graphql::{ApiSchema, build_schema};
use crate::http::HttpOptions;
use crate::pagination::PagingSettings;

/// The server's checks with its default limits, and a schema to validate against.
pub struct OfflineCheck {
    documents: DocumentCache,
    options: HttpOptions,
    types: OutputTypes,
    settings: PagingSettings,
    schema: ApiSchema,
}

/// How far a request got.
#[derive(Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Refused by the request check, with its `extensions.code`.
    Refused(&'static str),
    /// Passed the check, with its price (`None`: it does not parse, which async-graphql
    /// reports), and whether async-graphql then ran it (it passed validation).
    Checked {
        /// The document's price; `None` when it does not parse.
        price: Option<Priced>,
        /// Whether async-graphql ran it (it passed validation).
        ran: bool,
    },
}

impl std::fmt::Debug for OfflineCheck {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OfflineCheck").finish_non_exhaustive()
    }
}

impl Default for OfflineCheck {
    fn default() -> Self {
        let schema = ApiSchema::Standalone(build_schema(None));
        let types = OutputTypes::from_sdl(&schema.sdl()).unwrap_or_default();
        Self {
            documents: DocumentCache::new(64),
            options: HttpOptions::default(),
            types,
            settings: PagingSettings::default(),
            schema,
        }
    }
}

impl OfflineCheck {
    /// Checks `request` as `transport` would, prices it and, if it passed, validates and runs
    /// it on the schema without data.
    pub async fn check(
        &self,
        mut request: async_graphql::Request,
        transport: Transport,
    ) -> Outcome {
        let checked = match check_request(&mut request, transport, &self.documents, &self.options) {
            Ok(checked) => checked,
            Err(rejection) => return Outcome::Refused(rejection.code()),
        };
        let price = checked
            .parsed
            .as_ref()
            .map(|parsed| parsed.price(&self.types, &request, &self.settings));
        let response = match transport {
            Transport::WebSocket => {
                use futures::StreamExt;
                let mut stream = self.schema.execute_stream(request);
                stream.next().await.unwrap_or_default()
            }
            Transport::Post | Transport::Get => self.schema.execute(request).await,
        };
        let ran = crate::http::transport::executed(&response);
        Outcome::Checked { price, ran }
    }

    /// [`Self::check`] of a raw text and variables (a JSON object, as a client sends them).
    pub async fn check_text(&self, text: &str, variables: &str, transport: Transport) -> Outcome {
        let variables = serde_json::from_str::<serde_json::Value>(variables)
            .ok()
            .map(async_graphql::Variables::from_json)
            .unwrap_or_default();
        let request = async_graphql::Request::new(text).variables(variables);
        self.check(request, transport).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn each_stage_answers_for_what_reaches_it() {
        let check = OfflineCheck::default();
        let deep = format!(
            "{{ __typename(a: {}1{}) }}",
            "[".repeat(500),
            "]".repeat(500)
        );
        assert_eq!(
            check.check_text(&deep, "{}", Transport::Post).await,
            Outcome::Refused("GRAPHQL_VALIDATION_FAILED")
        );
        assert_eq!(
            check
                .check_text("{ __typename }", "{}", Transport::WebSocket)
                .await,
            Outcome::Refused("BAD_REQUEST"),
            "only subscriptions over WebSocket"
        );
        let page = r#"query($n: Int) { comments(sku: "A", first: $n) { nodes { id } } }"#;
        let priced = check.check_text(page, r#"{"n": 5}"#, Transport::Get).await;
        assert_eq!(
            priced,
            Outcome::Checked {
                price: Some(Priced::Cost(5 * 2 + 1)),
                ran: true
            },
            "priced, validated and run (its field fails without data)"
        );
        let unknown = check.check_text("{ nope }", "{}", Transport::Post).await;
        assert_eq!(
            unknown,
            Outcome::Checked {
                price: Some(Priced::Unknown),
                ran: false
            }
        );
        let broken = check.check_text("{ a(", "{}", Transport::Post).await;
        assert_eq!(
            broken,
            Outcome::Checked {
                price: None,
                ran: false
            }
        );
    }
}
