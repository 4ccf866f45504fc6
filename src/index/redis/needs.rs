//! The commands the page index sends, for the start-up check (`crate::redis::Need`): shaped
//! like the real ones, keys included, so `ACL DRYRUN` checks the user's key patterns too.
//! The commands its scripts call inside Redis are listed on their own (a dry run of `EVALSHA`
//! does not look inside), and a test holds those lists to the scripts' text.

use super::keys::{Keys, member};
use super::{APPLY, READ, READ_CHUNK};
use crate::domain::{CommentId, Rating, Sku, SortKey};
use crate::redis::{KeyPrefix, LuaScript, Need};

const COUNTS: &str = "the page index's counts (totalCount, rating counts)";
const READ_SCRIPT: &str = "the page index's deep offsets and page numbers (read.lua)";
const INSIDE_READS: &str = "the page index's read.lua, inside Redis";
const APPLY_SCRIPT: &str = "the page index's writes (apply.lua)";
const INSIDE_APPLY: &str = "the page index's writes, inside apply.lua";
const VERSIONS: &str = "the response cache's product versions";
const SCANS: &str = "verify and reindex, which read the whole index";
const REPORT: &str = "the transparency report (moderationStats)";

/// A product, a comment and their keys, to shape the commands with.
struct Sample {
    keys: Keys,
    sku: Sku,
    member: String,
}

impl Sample {
    fn new(prefix: &KeyPrefix) -> Self {
        let sku = Sku::parse("ACL_DRYRUN").unwrap_or_else(|_| unreachable!("a valid SKU"));
        let key = SortKey::new(0, CommentId::from_parts(0, 0))
            .unwrap_or_else(|_| unreachable!("a valid sort key"));
        Self {
            keys: Keys::new(prefix),
            member: String::from_utf8_lossy(&member(&key)).into_owned(),
            sku,
        }
    }

    fn rating_set(&self) -> String {
        self.keys.rating(&self.sku, Rating::ALL[0])
    }

    fn rating_sets(&self) -> Vec<String> {
        self.keys.ratings(&self.sku).to_vec()
    }

    fn versions(&self) -> String {
        self.keys.versions(&self.sku)
    }

    fn product_version(&self) -> String {
        self.keys.product_version(&self.sku)
    }

    fn tombstone(&self) -> String {
        self.keys.tombstone(&self.sku, CommentId::from_parts(0, 0))
    }
}

/// What serving pages sends: counts, the read script, and what it calls.
pub fn needs_to_read(prefix: &KeyPrefix) -> Vec<Need> {
    let sample = Sample::new(prefix);
    let sets = sample.rating_sets();
    let mut needs = vec![
        Need::new(COUNTS, ["ZCARD".to_owned(), sample.rating_set()]),
        Need::new(REPORT, ["ZCOUNT", &sample.rating_set(), "0", "+inf"]),
        // The shop's report lists the products first, as `verify` does.
        Need::new(REPORT, scan_products(&sample)),
    ];
    needs.extend(LuaScript::new(READ).needs(
        READ_SCRIPT,
        &sets,
        &[
            "desc", "", "", "0", "none", "", "", "20", "newest", "none", "0",
        ],
    ));
    needs.extend(read_scripts_call(&sample));
    let epoch = sample.keys.version_epoch(&sample.sku);
    needs.extend([
        Need::new(VERSIONS, ["GET".to_owned(), sample.product_version()]),
        Need::new(VERSIONS, ["SET", &epoch, "1", "NX"].map(str::to_owned)),
        Need::new(VERSIONS, ["GET".to_owned(), epoch]),
    ]);
    needs
}

/// What applying changes and repairs sends: `apply.lua`, and what it calls.
pub fn needs_to_write(prefix: &KeyPrefix) -> Vec<Need> {
    let sample = Sample::new(prefix);
    let mut keys = sample.rating_sets();
    keys.extend([
        sample.versions(),
        sample.tombstone(),
        sample.product_version(),
    ]);
    let member = sample.member.as_str();
    let args = ["3600000", "1", "u", member, "0", "1", "1", "n", "0"];
    let mut needs = LuaScript::new(APPLY)
        .needs(APPLY_SCRIPT, &keys, &args)
        .to_vec();
    needs.extend(apply_calls(&sample));
    needs
}

/// What `verify` and `reindex` send to read the whole index: `SCAN` for the products (on
/// every master of a Cluster), `HSCAN` and `ZRANGE` for a product's entries.
pub fn needs_to_scan(prefix: &KeyPrefix) -> Vec<Need> {
    let sample = Sample::new(prefix);
    let chunk = READ_CHUNK.to_string();
    vec![
        Need::new(SCANS, scan_products(&sample)),
        Need::new(SCANS, ["HSCAN", &sample.versions(), "0", "COUNT", &chunk]),
        Need::new(
            SCANS,
            ["ZRANGE", &sample.rating_set(), "0", &chunk, "WITHSCORES"],
        ),
    ]
}

/// The `SCAN` that lists the products (`PageIndex::products`).
fn scan_products(sample: &Sample) -> [String; 6] {
    let pattern = sample.keys.rating_pattern();
    ["SCAN", "0", "MATCH", &pattern, "COUNT", "1000"].map(str::to_owned)
}

/// What `read.lua` (with `select.lua` and `pick.lua`) calls inside Redis.
fn read_scripts_call(sample: &Sample) -> Vec<Need> {
    let set = sample.rating_set();
    let set = set.as_str();
    let member = sample.member.as_str();
    vec![
        Need::new(INSIDE_READS, ["ZCARD", set]),
        Need::new(INSIDE_READS, ["ZCOUNT", set, "-inf", "+inf"]),
        Need::new(INSIDE_READS, ["ZRANGE", set, "0", "0", "WITHSCORES"]),
        Need::new(INSIDE_READS, ["ZSCORE", set, member]),
    ]
}

/// What `apply.lua` calls inside Redis.
fn apply_calls(sample: &Sample) -> Vec<Need> {
    let (set, versions, tombstone) = (sample.rating_set(), sample.versions(), sample.tombstone());
    let (set, versions, tombstone) = (set.as_str(), versions.as_str(), tombstone.as_str());
    let member = sample.member.as_str();
    let version = sample.product_version();
    let version = version.as_str();
    vec![
        Need::new(INSIDE_APPLY, ["EXISTS", version]),
        Need::new(INSIDE_APPLY, ["SET", version, "1"]),
        Need::new(INSIDE_APPLY, ["INCR", version]),
        Need::new(INSIDE_APPLY, ["GET", tombstone]),
        Need::new(INSIDE_APPLY, ["SET", tombstone, "2", "PX", "3600000"]),
        Need::new(INSIDE_APPLY, ["DEL", tombstone]),
        Need::new(INSIDE_APPLY, ["ZSCORE", set, member]),
        Need::new(INSIDE_APPLY, ["ZADD", set, "0", member]),
        Need::new(INSIDE_APPLY, ["ZREM", set, member]),
        Need::new(INSIDE_APPLY, ["HGET", versions, member]),
        Need::new(INSIDE_APPLY, ["HSET", versions, member, "2"]),
        Need::new(INSIDE_APPLY, ["HDEL", versions, member]),
    ]
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;
    use crate::redis::commands_called;

    fn names(needs: &[Need]) -> BTreeSet<String> {
        needs.iter().map(Need::name).collect()
    }

    #[test]
    fn the_commands_declared_inside_each_script_are_exactly_those_it_calls() {
        let sample = Sample::new(&KeyPrefix::new("p:"));
        assert_eq!(names(&read_scripts_call(&sample)), commands_called(READ));
        assert_eq!(names(&apply_calls(&sample)), commands_called(APPLY));
    }

    #[test]
    fn every_declared_key_is_under_the_prefix() {
        let prefix = KeyPrefix::new("dp:");
        for need in [
            needs_to_read(&prefix),
            needs_to_write(&prefix),
            needs_to_scan(&prefix),
        ]
        .concat()
        {
            let command = need.command();
            let (key, stem) = match command[0].as_str() {
                "EVALSHA" | "EVAL" => (&command[3], "dp:idx:{ACL_DRYRUN}:"),
                "SCAN" => (&command[3], "dp:idx:{*}:"),
                _ => (&command[1], "dp:idx:{ACL_DRYRUN}:"),
            };
            assert!(key.starts_with(stem), "{command:?}");
        }
    }
}
