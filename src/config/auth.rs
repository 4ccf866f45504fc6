//! Who may write, and how their tokens are checked: `--auth` and the JWT settings.

use clap::{Args, ValueEnum};

use super::StoreKind;

/// How writes are authorised (`--auth`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum AuthMode {
    /// Anyone may add, edit and delete any comment (demos, or a gateway in front that checks).
    Off,
    /// Writes need a bearer token (a JWT) from the identity provider.
    Jwt,
}

/// Who may write, and how their tokens are checked.
#[derive(Args, Clone, Debug)]
pub struct AuthArgs {
    /// `jwt`: writes need a bearer token verified against --auth-jwks-url; `off`: anyone may
    /// write anything. Default `off` with the embedded store (with a warning); required with
    /// `--store dynamodb`, so that `off` is always deliberate.
    #[arg(long, env = "DYNAPAGE_AUTH", value_enum)]
    pub auth: Option<AuthMode>,
    /// The identity provider's JWKS: its `jwks_uri` (https://…), or `file:PATH` for a local
    /// file such as `dynapage token`'s `file:.dynapage/jwks.json`.
    #[arg(long, env = "DYNAPAGE_AUTH_JWKS_URL")]
    pub auth_jwks_url: Option<String>,
    /// The `iss` every token must carry, e.g. https://login.shop.example/.
    #[arg(long, env = "DYNAPAGE_AUTH_ISSUER")]
    pub auth_issuer: Option<String>,
    /// A value the token's `aud` must hold (the API's identifier at the provider).
    #[arg(long, env = "DYNAPAGE_AUTH_AUDIENCE")]
    pub auth_audience: Option<String>,
    /// The claim holding the author's display name. A token without it (or with a blank one)
    /// cannot add comments (`BAD_USER_INPUT` naming the claim): the `sub` is never published.
    #[arg(long, env = "DYNAPAGE_AUTH_NAME_CLAIM", default_value = "name")]
    pub auth_name_claim: String,
    /// The claim holding the token's roles: an array of strings or a space-separated string;
    /// a dotted path such as `realm_access.roles` reaches into an object.
    #[arg(long, env = "DYNAPAGE_AUTH_ROLES_CLAIM", default_value = "roles")]
    pub auth_roles_claim: String,
    /// The role that may edit and delete anyone's comments.
    #[arg(
        long,
        env = "DYNAPAGE_AUTH_MODERATOR_ROLE",
        default_value = "moderator"
    )]
    pub auth_moderator_role: String,
    /// The role that may answer comments publicly in the shop's name (`replyToComment`),
    /// without moderating them; moderators may answer too.
    #[arg(long, env = "DYNAPAGE_AUTH_MERCHANT_ROLE", default_value = "merchant")]
    pub auth_merchant_role: String,
    /// The role that may export and erase anyone's data (`eraseMyData` with a `subject`):
    /// the shop's privacy or support staff answering a request made by other means.
    /// Moderators may too; a person may always export and erase their own.
    #[arg(long, env = "DYNAPAGE_AUTH_PRIVACY_ROLE", default_value = "privacy")]
    pub auth_privacy_role: String,
}

impl AuthArgs {
    /// The write policy for a server on `store`; a missing setting fails naming its flag.
    pub fn auth(&self, store: StoreKind) -> anyhow::Result<crate::auth::Auth> {
        use crate::auth::{Auth, JwksSource, JwtSettings, JwtVerifier, KeyCache};
        let mode = match (self.auth, store) {
            (Some(mode), _) => mode,
            (None, StoreKind::Memory) => {
                tracing::warn!(
                    "no --auth / DYNAPAGE_AUTH set: anyone may add, edit and delete any comment \
                     (the embedded store's demo default). Use --auth jwt in production"
                );
                AuthMode::Off
            }
            (None, StoreKind::Dynamodb) => anyhow::bail!(
                "--auth / DYNAPAGE_AUTH is required with --store dynamodb: `jwt` to accept writes \
                 only with a bearer token from your identity provider, or `off` to let anyone \
                 write anything (deliberately: behind a gateway that checks, say)"
            ),
        };
        if mode == AuthMode::Off {
            return Ok(Auth::Off);
        }
        let required = |value: &Option<String>, flag: &str| {
            value
                .clone()
                .filter(|v| !v.is_empty())
                .ok_or_else(|| anyhow::anyhow!("--auth jwt needs {flag}"))
        };
        let source = JwksSource::parse(&required(
            &self.auth_jwks_url,
            "--auth-jwks-url / DYNAPAGE_AUTH_JWKS_URL",
        )?)
        .map_err(|e| anyhow::anyhow!("--auth-jwks-url / DYNAPAGE_AUTH_JWKS_URL: {e}"))?;
        let settings = JwtSettings {
            issuer: required(&self.auth_issuer, "--auth-issuer / DYNAPAGE_AUTH_ISSUER")?,
            audience: required(
                &self.auth_audience,
                "--auth-audience / DYNAPAGE_AUTH_AUDIENCE",
            )?,
            name_claim: self.auth_name_claim.clone(),
            roles_claim: self.auth_roles_claim.clone(),
            moderator_role: self.auth_moderator_role.clone(),
            merchant_role: self.auth_merchant_role.clone(),
            privacy_role: self.auth_privacy_role.clone(),
        };
        let keys = KeyCache::new(source)
            .map_err(|e| anyhow::anyhow!("cannot build the JWKS client: {e}"))?;
        Ok(Auth::Jwt(std::sync::Arc::new(JwtVerifier::new(
            settings, keys,
        ))))
    }
}
