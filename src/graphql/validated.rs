//! What the schema for texts validated before answers in place of async-graphql's validation.
//!
//! A text that passed validation once runs on a schema that checks no rule again
//! (`build_schema_for_validated_texts`, `build_schema_for_validated_plain_texts`; its variables
//! are held to their types first, `graphql::variables`). async-graphql's fastest validation
//! mode, `ValidationMode::Fast`, still walks the whole document, looking up every field's type
//! by name (SipHash per lookup) to count a complexity and a depth that nothing here reads: the schema sets no `limit_complexity` and no
//! `limit_depth` (`http::admission` limits those on the parsed document, `graphql::pricing`
//! prices it), and the cache control it gathers is not used (`http::caching` decides). That
//! walk was 24,400 instructions on a page of 20 and 63,100 with the numbered pager (callgrind;
//! BENCHMARKS.md, "An uncached page's instructions"). [`Validated`] answers the validation step
//! with an empty result instead.
//!
//! It is an async-graphql extension, the one hook async-graphql gives validation, and with an
//! extension present async-graphql sends every field it resolves through the extension chain
//! (`extensions.resolve`): a page asked through fragments cost 27 % more on it. So only plain
//! documents run on it (`graphql::plain_document`: no fragment, every list written by the
//! plain paths), where async-graphql resolves a handful of fields and the walk was the larger
//! cost; BENCHMARKS.md has both.
//!
//! This can go when async-graphql keeps a validated document, or lets a request skip validation.

use std::sync::Arc;

use async_graphql::extensions::{Extension, ExtensionContext, ExtensionFactory, NextValidation};
use async_graphql::{ServerError, ValidationResult};

/// Answers validation with an empty result, for texts validated before.
pub(super) struct Validated;

impl ExtensionFactory for Validated {
    fn create(&self) -> Arc<dyn Extension> {
        Arc::new(Validated)
    }
}

#[async_graphql::async_trait::async_trait]
impl Extension for Validated {
    async fn validation(
        &self,
        _ctx: &ExtensionContext<'_>,
        _next: NextValidation<'_>,
    ) -> Result<ValidationResult, Vec<ServerError>> {
        Ok(ValidationResult {
            cache_control: async_graphql::CacheControl::default(),
            complexity: 0,
            depth: 0,
        })
    }
}
