//! `dynapage token`: a bearer token for local development, signed with a key kept in
//! `--key-dir`, whose JWKS the server reads (`auth::local`).

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use crate::auth::local::{AUDIENCE, ISSUER, LocalClaims, LocalIssuer, PURCHASE_ISSUER};

#[derive(Args, Debug)]
pub struct TokenArgs {
    /// The token's subject: who writes. Comments remember it; only they (or a moderator) may
    /// change them.
    #[arg(long)]
    sub: String,
    /// The author's name shown on their comments, put in the `name` claim (default: the
    /// subject; a server refuses `addComment` from a token without a name).
    #[arg(long)]
    name: Option<String>,
    /// A role to put in the `roles` claim; repeat for several (`--role moderator`).
    #[arg(long = "role")]
    roles: Vec<String>,
    /// Minutes the token stays valid.
    #[arg(long, default_value_t = 60, value_parser = clap::value_parser!(u64).range(1..=7 * 24 * 60))]
    minutes: u64,
    /// Prints a purchase proof instead of a sign-in token: that `--sub` bought this product
    /// (its SKU) in `--order`, for `addComment(input: { purchaseProof })`. Signed by the same
    /// local key as issuer `dynapage-local-shop` (the shop's backend, in development).
    #[arg(long, value_name = "SKU", requires = "order")]
    purchase: Option<String>,
    /// The order id a purchase proof names (with `--purchase`); the server keeps only a keyed
    /// hash of it.
    #[arg(long, value_name = "ID", requires = "purchase")]
    order: Option<String>,
    /// Where the signing key and its JWKS are kept (made on first use).
    #[arg(long, env = "DYNAPAGE_TOKEN_KEY_DIR", default_value = ".dynapage")]
    key_dir: PathBuf,
}

/// Prints the token on standard output, and on standard error how to start a server that
/// accepts it.
pub(super) fn run(args: TokenArgs) -> anyhow::Result<()> {
    // The key is written there on first use: not inside a data directory (`super::output`).
    super::output::refuse_in_data_dir(
        &args.key_dir,
        "--key-dir / DYNAPAGE_TOKEN_KEY_DIR",
        &args.key_dir,
    )?;
    let issuer = LocalIssuer::open(&args.key_dir)?;
    let ttl = Duration::from_secs(args.minutes * 60);
    if let (Some(sku), Some(order)) = (&args.purchase, &args.order) {
        println!("{}", issuer.sign_purchase(&args.sub, sku, order, ttl)?);
        eprintln!(
            "a server accepts it with: --purchase-jwks-url file:{} --purchase-issuer {PURCHASE_ISSUER}\n\
             send it as addComment(input: {{ sku: \"{sku}\", purchaseProof: \"<proof>\", … }}) with a sign-in token for {}",
            issuer.jwks_path().display(),
            args.sub
        );
        return Ok(());
    }
    let claims = LocalClaims {
        name: Some(args.name.unwrap_or_else(|| args.sub.clone())),
        sub: args.sub,
        roles: args.roles,
    };
    let token = issuer.sign(&claims, ttl)?;
    println!("{token}");
    eprintln!(
        "a server accepts it with: --auth jwt --auth-jwks-url file:{} --auth-issuer {ISSUER} --auth-audience {AUDIENCE}\n\
         send it as the header  Authorization: Bearer <token>",
        issuer.jwks_path().display()
    );
    Ok(())
}
