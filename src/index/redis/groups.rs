//! The reads of many products at once (`rating_counts_many`, `product_versions`): a group of
//! commands per product, sent by `RedisHandle::query_groups` in one pipeline on a single node
//! and in one pipeline per hash slot on a Cluster, all at once (a pipeline, like an `MGET`, may
//! not cross slots there; a product's keys share one).

use super::RedisIndex;
use super::replies::per_product;
use crate::domain::{Rating, RatingSet, Sku};
use crate::index::IndexError;

impl RedisIndex {
    /// Each product's five rating sets (led by one of them, for its slot) and their `ZCARD`s.
    fn count_groups(&self, skus: &[Sku]) -> Vec<(String, Vec<redis::Cmd>)> {
        skus.iter()
            .map(|sku| {
                let sets = self.sets(sku, RatingSet::ALL);
                let zcards = sets.iter().map(redis::Cmd::zcard).collect();
                (sets[0].clone(), zcards)
            })
            .collect()
    }

    /// `[ones, …, fives]` of each product, in `skus`' order.
    pub(super) async fn counts_of(&self, skus: &[Sku]) -> Result<Vec<[u64; 5]>, IndexError> {
        let groups = self.count_groups(skus);
        per_product(self.redis.query_groups(&groups).await?, skus.len())
    }

    /// The round trips [`Self::counts_of`] makes: one, or one per slot on a Cluster.
    pub(super) fn counts_round_trips(&self, skus: &[Sku]) -> u64 {
        let leaders = skus.iter().map(|sku| self.keys.rating(sku, Rating::ALL[0]));
        self.redis.group_round_trips(leaders)
    }

    /// Each product's version (0 for none), in `skus`' order: one `GET` per product.
    pub(super) async fn versions_of(&self, skus: &[Sku]) -> Result<Vec<u64>, IndexError> {
        let groups: Vec<(String, Vec<redis::Cmd>)> = skus
            .iter()
            .map(|sku| {
                let key = self.keys.product_version(sku);
                let get = redis::Cmd::get(&key);
                (key, vec![get])
            })
            .collect();
        let versions: Vec<Option<u64>> = self.redis.query_groups(&groups).await?;
        Ok(versions.into_iter().map(|v| v.unwrap_or(0)).collect())
    }
}
