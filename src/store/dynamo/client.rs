//! Building the SDK configuration both DynamoDB clients share (tables and streams): endpoint,
//! region, credentials for DynamoDB Local, explicit timeouts and retries.

use std::time::Duration;

use aws_config::meta::region::RegionProviderChain;
use aws_config::retry::RetryConfig;
use aws_config::timeout::TimeoutConfig;
use aws_config::{BehaviorVersion, SdkConfig};
use aws_sdk_dynamodb::config::{Credentials, Region};

/// Region used when neither the settings nor the AWS chain name one (and for DynamoDB Local,
/// which ignores it but still needs one to sign requests).
const DEFAULT_REGION: &str = "us-east-1";

/// Where the table is and what it is called.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DynamoConfig {
    /// A custom endpoint such as DynamoDB Local (`http://localhost:8000`); `None` uses the
    /// standard AWS endpoint and credential chain.
    pub endpoint: Option<String>,
    /// The table's name.
    pub table: String,
    /// `None`: the AWS region chain, then `us-east-1`.
    pub region: Option<String>,
}

impl Default for DynamoConfig {
    fn default() -> Self {
        Self {
            endpoint: None,
            table: "comments".to_owned(),
            region: None,
        }
    }
}

/// The SDK configuration for `config`. Makes no call.
pub(super) async fn sdk_config(config: &DynamoConfig) -> SdkConfig {
    // With a custom endpoint (DynamoDB Local) the region only names the signing scope, so
    // skip the chain: its last resort asks EC2 instance metadata, slow off AWS.
    let region = match (&config.region, &config.endpoint) {
        (Some(region), _) => RegionProviderChain::first_try(Region::new(region.clone())),
        (None, Some(_)) => RegionProviderChain::first_try(Region::new(DEFAULT_REGION)),
        (None, None) => {
            RegionProviderChain::default_provider().or_else(Region::new(DEFAULT_REGION))
        }
    };
    let timeouts = TimeoutConfig::builder()
        .connect_timeout(Duration::from_secs(3))
        .operation_attempt_timeout(Duration::from_secs(5))
        .operation_timeout(Duration::from_secs(15))
        .build();
    let mut loader = aws_config::defaults(BehaviorVersion::latest())
        .region(region)
        .timeout_config(timeouts)
        .retry_config(RetryConfig::standard().with_max_attempts(3));
    if let Some(endpoint) = &config.endpoint {
        loader = loader.endpoint_url(endpoint);
        // DynamoDB Local accepts any signature; without this a laptop with no AWS
        // credentials would fail every call while the chain searched for some.
        let has_credentials = [
            "AWS_ACCESS_KEY_ID",
            "AWS_PROFILE",
            "AWS_WEB_IDENTITY_TOKEN_FILE",
        ]
        .iter()
        .any(|name| std::env::var_os(name).is_some());
        if !has_credentials {
            loader = loader.credentials_provider(Credentials::new(
                "dynapagelocal",
                "dynapagelocal",
                None,
                None,
                "dynapage-static",
            ));
        }
    }
    loader.load().await
}
