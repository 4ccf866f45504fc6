//! The benchmarks, one module each, composed of the shared pieces (`processes`, `services`,
//! `server`, `wrk`, `graphql`, `proc_stat`, `redis_info`, `machine`, `report`, `stats`).

pub mod ab;
pub mod auth;
pub mod author_memory;
pub mod criterion;
pub mod demo_cost;
pub mod erase_person;
pub mod federation;
pub mod hit_cost;
pub mod idle_sockets;
pub mod index_big_product;
pub mod index_cpu;
pub mod index_lua_callgrind;
pub mod index_script;
pub mod lambda_sync;
pub mod live;
pub mod load;
pub mod load_tables;
pub mod orders;
pub mod page_cost;
pub mod page_numbers;
pub mod plot;
pub mod postgraphile;
pub mod queue_cost;
pub mod rate_limit;
pub mod rating_summaries;
pub mod response_cache;
pub mod rounds;
pub mod rounds_table;
pub mod soak;
pub mod sync_lag;
pub mod verified;
pub mod vote_memory;
pub mod votes;

/// Which backends a benchmark of both runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Backends {
    /// The embedded backends, then DynamoDB Local + Redis
    All,
    /// `serve --demo-comments`: the in-process store and index
    Embedded,
    /// DynamoDB Local + redis-server
    Dynamodb,
}

impl Backends {
    pub fn embedded(self) -> bool {
        self != Self::Dynamodb
    }

    pub fn dynamodb(self) -> bool {
        self != Self::Embedded
    }
}

/// The SKU of the demo product (`serve --demo-comments`) and of the seeded ones.
pub const SKU: &str = "DAFT_PUNK_TSHIRT";

/// A page's selection in `load`, `page-numbers` and `orders`: five fields of each of 20 edges, and
/// `pageInfo`.
pub const PAGE_SELECTION: &str = "edges { cursor node { id author body rating createdAt } } pageInfo { hasNextPage hasPreviousPage startCursor endCursor }";

/// The offset of the deep page: 1,000,000, or 90% of a product too small for it (a whole
/// page's worth below the end).
pub fn deep_offset(comments: u64) -> u64 {
    if comments >= 1_000_100 {
        1_000_000
    } else {
        comments * 9 / 10 / 20 * 20
    }
}

/// A duration in whole seconds on the command line: `10`, `10s` or `2m`.
pub fn parse_seconds(text: &str) -> Result<u64, String> {
    let (number, scale) = match text.strip_suffix('m') {
        Some(minutes) => (minutes, 60),
        None => (text.strip_suffix('s').unwrap_or(text), 1),
    };
    number
        .parse::<u64>()
        .map(|n| n * scale)
        .map_err(|_| format!("{text:?} is not a duration such as 10, 10s or 2m"))
}

#[cfg(test)]
mod tests {
    #[test]
    fn durations_read_in_seconds() {
        assert_eq!(super::parse_seconds("10s"), Ok(10));
        assert_eq!(super::parse_seconds("45"), Ok(45));
        assert_eq!(super::parse_seconds("2m"), Ok(120));
        assert!(super::parse_seconds("soon").is_err());
    }

    #[test]
    fn the_deep_offset_is_a_million_or_nine_tenths_of_a_small_product() {
        assert_eq!(super::deep_offset(1_100_000), 1_000_000);
        assert_eq!(super::deep_offset(100_000), 90_000);
        assert_eq!(super::deep_offset(1_010), 900);
    }
}
