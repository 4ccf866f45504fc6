//! The reads of many products at once (`rating_counts_many`, `product_versions`): a group of
//! commands per product, sent by `RedisHandle::query_groups` in one pipeline on a single node
//! and in one pipeline per hash slot on a Cluster, all at once (a pipeline, like an `MGET`, may
//! not cross slots there; a product's keys share one).

use super::RedisIndex;
use super::replies::per_product;
use crate::domain::{AuthorList, Rating, RatingSet, Sku};
use crate::index::{IndexError, ProductVersion, new_epoch};

impl RedisIndex {
    /// The keys `count` reads for `ratings`: the selected ratings' two sets by time each
    /// (without votes, with votes), rating 1 first.
    pub(super) fn sets(&self, sku: &Sku, ratings: RatingSet) -> Vec<String> {
        ratings
            .iter()
            .flat_map(|r| [self.keys.rating(sku, r), self.keys.voted(sku, r)])
            .collect()
    }

    /// Each product's ten sets by time (per rating, its comments without helpful votes and those
    /// with them; led by one of them, for its slot) and their `ZCARD`s, or with `since` their
    /// `ZCOUNT`s from that score (`createdAt` in epoch milliseconds) on.
    fn count_groups(&self, skus: &[Sku], since: Option<u64>) -> Vec<(String, Vec<redis::Cmd>)> {
        skus.iter()
            .map(|sku| {
                let sets = self.sets(sku, RatingSet::ALL);
                let counts = sets
                    .iter()
                    .map(|set| match since {
                        None => redis::Cmd::zcard(set),
                        Some(ms) => redis::Cmd::zcount(set, ms, "+inf"),
                    })
                    .collect();
                (sets[0].clone(), counts)
            })
            .collect()
    }

    /// `[ones, …, fives]` of each product, in `skus`' order: all of them, or those created at
    /// `since` (epoch milliseconds) or later.
    pub(super) async fn counts_of(
        &self,
        skus: &[Sku],
        since: Option<u64>,
    ) -> Result<Vec<[u64; 5]>, IndexError> {
        let groups = self.count_groups(skus, since);
        per_product(self.redis.query_groups(&groups).await?, skus.len())
    }

    /// The round trips [`Self::counts_of`] makes: one, or one per slot on a Cluster.
    pub(super) fn counts_round_trips(&self, skus: &[Sku]) -> u64 {
        let leaders = skus.iter().map(|sku| self.keys.rating(sku, Rating::ALL[0]));
        self.redis.group_round_trips(leaders)
    }

    /// Each product's version (number 0 for none) and its epoch, in `skus`' order: a `GET` of
    /// each of its two keys per product (one round trip), and for the products that have
    /// no epoch yet one more round trip that makes one (`SET NX`, then `GET`, so that readers
    /// racing to make it all read the one that won).
    pub(super) async fn versions_of(
        &self,
        skus: &[Sku],
    ) -> Result<Vec<ProductVersion>, IndexError> {
        let groups: Vec<(String, Vec<redis::Cmd>)> = skus
            .iter()
            .map(|sku| {
                let number = self.keys.product_version(sku);
                let epoch = redis::Cmd::get(self.keys.version_epoch(sku));
                (number.clone(), vec![redis::Cmd::get(number), epoch])
            })
            .collect();
        let replies: Vec<Option<u64>> = self.redis.query_groups(&groups).await?;
        let replies: Vec<(Option<u64>, Option<u64>)> = replies
            .chunks(2)
            .map(|pair| (pair[0], pair.get(1).copied().flatten()))
            .collect();
        let missing: Vec<usize> = (replies.iter().enumerate())
            .filter(|(_, (_, epoch))| epoch.is_none())
            .map(|(i, _)| i)
            .collect();
        let made = if missing.is_empty() {
            Vec::new()
        } else {
            let unmade: Vec<&Sku> = missing.iter().map(|&i| &skus[i]).collect();
            self.make_epochs(&unmade).await?
        };
        let mut made = missing.into_iter().zip(made).peekable();
        Ok((replies.into_iter().enumerate())
            .map(|(i, (number, epoch))| {
                let epoch = match made.peek() {
                    Some((at, _)) if *at == i => made.next().map_or(0, |(_, e)| e),
                    _ => epoch.unwrap_or(0),
                };
                ProductVersion {
                    epoch,
                    number: number.unwrap_or(0),
                }
            })
            .collect())
    }

    /// Makes an epoch for each of `skus` that has none (`SET NX` of a fresh random number)
    /// and reads the one that holds.
    async fn make_epochs(&self, skus: &[&Sku]) -> Result<Vec<u64>, IndexError> {
        let groups: Vec<(String, Vec<redis::Cmd>)> = skus
            .iter()
            .map(|sku| {
                let key = self.keys.version_epoch(sku);
                let mut set = redis::cmd("SET");
                set.arg(&key).arg(new_epoch()).arg("NX");
                let get = redis::Cmd::get(&key);
                (key, vec![set, get])
            })
            .collect();
        let replies: Vec<redis::Value> = self.redis.query_groups(&groups).await?;
        (replies.iter().skip(1).step_by(2))
            .map(|reply| {
                redis::from_redis_value_ref::<Option<u64>>(reply)
                    .ok()
                    .flatten()
                    .ok_or_else(|| {
                        IndexError::Internal("a version epoch vanished as it was made".into())
                    })
            })
            .collect()
    }
}

/// What `apply.lua` is told a list's missing version starts from (`ARGV[2]`): this machine's
/// clock in microseconds since the epoch, or `none` for an author's list (`AuthorList`), which
/// keeps no version: no response with one is ever cached (it is a signed-in viewer's), and a
/// key per small list would be most of its memory.
pub(super) fn version_start(list: &Sku) -> String {
    if AuthorList::from_index_name(list.as_str()).is_some() {
        return "none".to_owned();
    }
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX))
        .to_string()
}
