//! The key prefix (`--redis-prefix`), which every key of a deployment starts with, so several
//! deployments or test runs share one Redis and an ACL user can be limited to `~<prefix>*`.
//!
//! Under the prefix, each Redis user owns one namespace and spells its keys itself; none reads
//! or scans another's:
//!
//! | namespace | owner |
//! |---|---|
//! | `<prefix>idx:{<sku>}:…` | the page index (`index::redis`) |
//! | `<prefix>{changes}` | the change log of live comments (`live::redis_log`) |
//! | `<prefix>sync:<table>:<shardId>` | the stream consumer's checkpoints (`sync::checkpoint`) |
//! | `<prefix>rl:{<client>}:…` | the rate limiter's buckets (`ratelimit::redis`) |
//! | `<prefix>pq:{apq}…` | automatic persisted queries (`persisted::redis`) |

use std::fmt;

/// A deployment's key prefix.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyPrefix(String);

impl KeyPrefix {
    /// The prefix `prefix`, as given (it may be empty).
    pub fn new(prefix: &str) -> Self {
        Self(prefix.to_owned())
    }

    /// The prefix itself.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// `<prefix><rest>`.
    pub fn key(&self, rest: impl fmt::Display) -> String {
        format!("{}{rest}", self.0)
    }

    /// The `SCAN MATCH` pattern of `rest` (a glob) under this prefix, whose own glob
    /// characters are escaped, so a prefix such as `test[1]:` matches itself.
    pub fn pattern(&self, rest: &str) -> String {
        let mut out = String::with_capacity(self.0.len() + rest.len());
        for c in self.0.chars() {
            if matches!(c, '*' | '?' | '[' | ']' | '\\') {
                out.push('\\');
            }
            out.push(c);
        }
        out.push_str(rest);
        out
    }

    /// `key` without this prefix, `None` when it does not start with it.
    pub fn strip<'a>(&self, key: &'a str) -> Option<&'a str> {
        key.strip_prefix(self.0.as_str())
    }
}

impl fmt::Display for KeyPrefix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pattern_escapes_the_glob_characters_of_the_prefix_only() {
        let prefix = KeyPrefix::new("t[1]*:");
        assert_eq!(
            prefix.pattern("idx:{*}:r[1-5]"),
            "t\\[1\\]\\*:idx:{*}:r[1-5]"
        );
        assert_eq!(prefix.key("rl:{a}:c"), "t[1]*:rl:{a}:c");
        assert_eq!(prefix.strip("t[1]*:sync:x"), Some("sync:x"));
        assert_eq!(prefix.strip("other:sync:x"), None);
    }
}
