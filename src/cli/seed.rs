//! `dynapage seed --sku S --count N`: generated comments for one product, written in batches
//! with a progress bar, streamed so that millions never sit in memory at once.

use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};

use crate::backoff::Backoff;
use crate::config::{BackendArgs, StoreKind};
use crate::domain::Comment;
use crate::domain::Sku;
use crate::generate::CommentGenerator;
use crate::store::{CommentStore, StoreError};
use crate::sync::FIRST_RETRY;

/// Comments generated and written per step; the store batches further (25 per DynamoDB call).
const CHUNK: usize = 2_000;

/// Tries of one step against a store that is unavailable (a timeout, throttling).
const PUT_ATTEMPTS: u32 = 5;

/// The arguments of `dynapage seed`.
#[derive(Args, Debug)]
pub struct SeedArgs {
    /// The product's SKU.
    #[arg(long, env = "DYNAPAGE_SEED_SKU")]
    sku: String,
    /// How many comments to write.
    #[arg(long, env = "DYNAPAGE_SEED_COUNT")]
    count: u64,
    /// Fixes the generated sequence; the same seed writes the same comments.
    #[arg(long, env = "DYNAPAGE_SEED", default_value_t = 1)]
    seed: u64,
    /// Lengthens every body to this many bytes (at most 4,000) with more generated sentences,
    /// for measuring long comments; 0 keeps the short bodies (20 to 60 bytes). Ids, ratings,
    /// authors and times stay those of the same `--seed` without it.
    #[arg(long, env = "DYNAPAGE_SEED_BODY_BYTES", default_value_t = 0, value_parser = clap::value_parser!(u16).range(0..=4000))]
    body_bytes: u16,
    /// Writes this percentage of the comments hidden (reason `SPAM`): the first N of every
    /// hundred in the generated sequence, spread over the whole list; the rest are published.
    /// For measuring what unpublished comments cost a public page (nothing: they are in no
    /// public partition or set) and for trying the moderation features on a seeded store.
    #[arg(long, env = "DYNAPAGE_SEED_HIDDEN_PERCENT", default_value_t = 0, value_parser = clap::value_parser!(u8).range(0..=100))]
    hidden_percent: u8,
    /// Gives the comments this many signed-in authors (`authorSub` `seed-author-<k>`, comment
    /// `i` written by author `i mod N`), so they fill the authors' lists (`Viewer.comments`) as
    /// comments written with tokens do; 0 (the default) writes them without one, as under
    /// `--auth off`. For measuring what the authors' lists cost.
    #[arg(long, env = "DYNAPAGE_SEED_AUTHORS", default_value_t = 0)]
    authors: u64,
    /// Writes this percentage of the comments as verified purchases (the first N of every
    /// hundred in the generated sequence, each with a made-up order), so they fill the
    /// product's verified lists (`verified: true`) as comments with purchase proofs do. For
    /// measuring what the verified lists cost.
    #[arg(long, env = "DYNAPAGE_SEED_VERIFIED_PERCENT", default_value_t = 0, value_parser = clap::value_parser!(u8).range(0..=100))]
    verified_percent: u8,
    #[command(flatten)]
    backend: BackendArgs,
}

/// Runs `dynapage seed`: writes the generated comments into the persistent store `args` names.
/// Fails on the in-memory store without `--data-dir`, on a bad `--sku`, and on a write that
/// fails.
pub async fn run(args: SeedArgs) -> anyhow::Result<()> {
    anyhow::ensure!(
        args.backend.store != StoreKind::Memory || args.backend.data_dir.is_some(),
        "seed writes to a persistent store: pass --store dynamodb or --data-dir PATH (the in-memory demo lives inside `serve`, which seeds its own demo data)"
    );
    let sku = Sku::parse(&args.sku).context("--sku")?;
    let store = crate::startup::open_store(&args.backend).await?;
    let progress = ProgressBar::new(args.count).with_style(
        ProgressStyle::with_template(
            "{spinner} {pos}/{len} comments [{bar:40}] {per_sec} eta {eta}",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let generated = Generated {
        count: args.count,
        seed: args.seed,
        body_bytes: args.body_bytes.into(),
        hidden_percent: args.hidden_percent,
        authors: args.authors,
        verified_percent: args.verified_percent,
    };
    write_comments(&store, &sku, generated, &progress).await?;
    progress.finish();
    Ok(())
}

/// When the newest generated comment was written: fixed, so that the same `--seed` writes the
/// same comments into any store and pages can be compared across backends.
pub const NEWEST_GENERATED_MS: u64 = 1_767_225_600_000; // 2026-01-01T00:00:00Z

/// Which generated comments to write: how many, the generator's seed and the bodies' length
/// (0: the generator's short ones).
#[derive(Clone, Copy, Debug)]
pub struct Generated {
    /// How many comments to write.
    pub count: u64,
    /// The generator's seed: the same seed writes the same comments.
    pub seed: u64,
    /// Each body's length in bytes (at most 4,000); 0 keeps the generator's short bodies (20 to 60
    /// bytes).
    pub body_bytes: usize,
    /// The percentage written hidden: comment `i` of the sequence is hidden when `i % 100` is
    /// below it.
    pub hidden_percent: u8,
    /// How many signed-in authors write them (comment `i`'s is `seed-author-<i mod authors>`);
    /// 0: none.
    pub authors: u64,
    /// The percentage written as verified purchases: comment `i` is verified (a made-up order,
    /// hashed with a public key) when `i % 100` is below it.
    pub verified_percent: u8,
}

/// The key seeded verified purchases' made-up orders are hashed with: public, as they are.
const SEED_ORDER_KEY: &[u8] = b"dynapage-seeded-orders-are-made-up-so-this-key-is-public";

impl Generated {
    /// `count` comments of `seed` with short bodies, all published.
    pub fn new(count: u64, seed: u64) -> Self {
        Self {
            count,
            seed,
            body_bytes: 0,
            hidden_percent: 0,
            authors: 0,
            verified_percent: 0,
        }
    }
}

/// Writes the `generated` comments of `sku` (newest at [`NEWEST_GENERATED_MS`]), reporting
/// progress on `progress` and as a log line every 10%.
pub async fn write_comments<S: CommentStore>(
    store: &S,
    sku: &Sku,
    generated: Generated,
    progress: &ProgressBar,
) -> anyhow::Result<()> {
    let started = Instant::now();
    let Generated {
        count,
        seed,
        body_bytes,
        hidden_percent,
        authors,
        verified_percent,
    } = generated;
    let order_key = crate::domain::OrderKey::new(SEED_ORDER_KEY)?;
    let hidden = crate::domain::Moderation {
        status: crate::domain::CommentStatus::Hidden,
        reason: Some(crate::domain::ModerationReason::Spam),
        note: None,
        decided_at_ms: Some(NEWEST_GENERATED_MS),
    };
    let mut comments = CommentGenerator::new(sku.clone(), seed, NEWEST_GENERATED_MS)
        .with_body_bytes(body_bytes)
        .take(usize::try_from(count)?)
        .enumerate()
        .map(|(i, mut comment)| {
            if i % 100 < usize::from(hidden_percent) {
                comment.moderation = hidden.clone();
            }
            if authors > 0 {
                comment.author_sub = Some(format!("seed-author-{}", i as u64 % authors));
            }
            if i % 100 < usize::from(verified_percent) {
                let order = format!("seed-{seed}-{i}");
                comment.purchase = Some(crate::domain::OrderHash::of(&order_key, &order, sku));
            }
            comment
        });
    let mut written = 0u64;
    let mut next_report = count / 10;
    loop {
        let chunk: Vec<_> = comments.by_ref().take(CHUNK).collect();
        if chunk.is_empty() {
            break;
        }
        put_retrying(store, &chunk)
            .await
            .with_context(|| format!("writing comments of {sku}"))?;
        written += chunk.len() as u64;
        progress.set_position(written);
        if written >= next_report {
            tracing::info!(
                sku = sku.as_str(),
                written,
                count,
                elapsed_ms = started.elapsed().as_millis() as u64,
                "seeding"
            );
            next_report += (count / 10).max(1);
        }
    }
    tracing::info!(
        sku = sku.as_str(),
        written,
        elapsed_ms = started.elapsed().as_millis() as u64,
        "seeded"
    );
    Ok(())
}

/// Writes `chunk`, again after a pause while the store is unavailable: the same puts again
/// change nothing, and a seed of millions should not end at one slow call.
pub async fn put_retrying<S: CommentStore>(store: &S, chunk: &[Comment]) -> Result<(), StoreError> {
    let mut backoff = Backoff::new(FIRST_RETRY, Duration::from_secs(5));
    let never = tokio_util::sync::CancellationToken::new();
    for _ in 1..PUT_ATTEMPTS {
        match store.put_batch(chunk).await {
            Err(StoreError::Unavailable(error)) => {
                tracing::warn!(%error, "seeding: the store is unavailable; retrying");
                backoff.wait(&never).await;
            }
            done => return done,
        }
    }
    store.put_batch(chunk).await
}
