//! The schema's one async-graphql extension. async-graphql calls every registered extension
//! around every field it resolves (one boxed future each, measured at about a sixth of a
//! field-heavy query's time in a debug build), so the hooks this API needs share one extension
//! instead of each adding a call per field: the rate-limit check on `validation` (`budget`) and
//! the schema's description on `resolve` (`schema_description`).

use std::sync::Arc;

use async_graphql::extensions::{
    Extension, ExtensionContext, ExtensionFactory, NextResolve, NextValidation, ResolveInfo,
};
use async_graphql::{ServerError, ServerResult, ValidationResult, Value};

use super::{budget, schema_description};

/// Registers the hooks on the schema.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct SchemaHooks;

impl ExtensionFactory for SchemaHooks {
    fn create(&self) -> Arc<dyn Extension> {
        Arc::new(SchemaHooks)
    }
}

#[async_trait::async_trait]
impl Extension for SchemaHooks {
    async fn validation(
        &self,
        ctx: &ExtensionContext<'_>,
        next: NextValidation<'_>,
    ) -> Result<ValidationResult, Vec<ServerError>> {
        budget::on_validation(ctx, next).await
    }

    async fn resolve(
        &self,
        ctx: &ExtensionContext<'_>,
        info: ResolveInfo<'_>,
        next: NextResolve<'_>,
    ) -> ServerResult<Option<Value>> {
        match schema_description::answer(&info) {
            Some(answer) => Ok(Some(answer)),
            None => next.run(ctx, info).await,
        }
    }
}
