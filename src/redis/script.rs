//! Lua scripts: how they are sent (`EVALSHA`, falling back to `EVAL`), and what they ask of an
//! ACL user (the script commands, and every command the script calls inside Redis).
//!
//! The scripts themselves (their text, keys and arguments) belong to their users: the page
//! index and the rate limiter.

use redis::{ErrorKind, FromRedisValue, ServerErrorKind, ToRedisArgs};

use super::error::CallError;
use super::{Need, RedisHandle};

/// A Lua script, run by `EVALSHA` and, when the node answers `NOSCRIPT`, by `EVAL` with its
/// text, sent to the same node.
///
/// Why not `redis::Script`: on `NOSCRIPT` it sends `SCRIPT LOAD`, which the cluster client fans
/// out to every node it holds a connection to and which fails unless every one of them answers,
/// then `EVALSHA` again. Scripts are not replicated, so a promoted replica or a restarted node
/// has none, and a failover is exactly when some node may not answer: the script call would
/// then fail although the node holding the product's keys is fine. `EVAL`, like `EVALSHA`, is
/// routed by its first key to that one node, loads the script there, and costs one round trip
/// instead of two.
#[derive(Clone, Debug)]
pub(crate) struct LuaScript {
    source: &'static str,
    hash: String,
}

impl LuaScript {
    pub(crate) fn new(source: &'static str) -> Self {
        Self {
            source,
            hash: redis::Script::new(source).get_hash().to_owned(),
        }
    }

    /// A call of this script, to fill with keys and arguments.
    pub(crate) fn call(&self) -> ScriptCall<'_> {
        ScriptCall {
            script: self,
            keys: Vec::new(),
            args: Vec::new(),
        }
    }

    /// What calling this script with `keys` and `args` sends, for the start-up check:
    /// `EVALSHA`, and `EVAL`, its fallback on `NOSCRIPT`. `ACL DRYRUN` of either checks the
    /// command and the keys, not what the script calls inside Redis: those are declared on
    /// their own, and a test holds that list to the script's text ([`commands_called`]).
    pub(crate) fn needs(&self, feature: &'static str, keys: &[String], args: &[&str]) -> [Need; 2] {
        let call = |verb: &str, body: &str| {
            let mut command = vec![verb.to_owned(), body.to_owned(), keys.len().to_string()];
            command.extend(keys.iter().cloned());
            command.extend(args.iter().map(|a| (*a).to_owned()));
            Need::new(feature, command)
        };
        [call("EVALSHA", &self.hash), call("EVAL", self.source)]
    }
}

/// One call of a [`LuaScript`]: its `KEYS` and `ARGV`.
#[derive(Debug)]
pub(crate) struct ScriptCall<'a> {
    script: &'a LuaScript,
    keys: Vec<Vec<u8>>,
    args: Vec<Vec<u8>>,
}

impl ScriptCall<'_> {
    pub(crate) fn key(&mut self, key: impl ToRedisArgs) -> &mut Self {
        self.keys.extend(key.to_redis_args());
        self
    }

    pub(crate) fn arg(&mut self, arg: impl ToRedisArgs) -> &mut Self {
        self.args.extend(arg.to_redis_args());
        self
    }

    /// Runs the script on the node that holds its first key.
    pub(crate) async fn invoke<T: FromRedisValue>(
        &self,
        handle: &RedisHandle,
    ) -> Result<T, CallError> {
        let command = |verb: &str, body: &str| {
            let mut cmd = redis::cmd(verb);
            cmd.arg(body)
                .arg(self.keys.len())
                .arg(&self.keys)
                .arg(&self.args);
            cmd
        };
        let answer = handle
            .reconnecting(|mut conn| async move {
                match command("EVALSHA", &self.script.hash)
                    .query_async(&mut conn)
                    .await
                {
                    Err(err) if err.kind() == ErrorKind::Server(ServerErrorKind::NoScript) => {
                        command("EVAL", self.script.source)
                            .query_async(&mut conn)
                            .await
                    }
                    answer => answer,
                }
            })
            .await;
        answer.map_err(super::error::classify)
    }
}

/// The commands `source` calls inside Redis (`redis.call('X', …)`, `redis.pcall`), upper-case,
/// for the tests that hold each script's declared commands to its text.
#[cfg(test)]
pub(crate) fn commands_called(source: &str) -> std::collections::BTreeSet<String> {
    let mut found = std::collections::BTreeSet::new();
    for call in ["redis.call(", "redis.pcall("] {
        for (at, _) in source.match_indices(call) {
            let rest = source[at + call.len()..].trim_start();
            let Some(quote) = rest.chars().next().filter(|c| matches!(c, '\'' | '"')) else {
                panic!("a script calls a command not named by a literal: {rest:.40}");
            };
            let name: String = rest[1..].chars().take_while(|c| *c != quote).collect();
            found.insert(name.to_ascii_uppercase());
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_commands_a_script_calls_are_read_from_its_text() {
        let source = "local t = redis.call('TIME')\nredis.pcall(\"set\", KEYS[1], t[1])\n\
                      -- redis.call('GET', k) in a comment counts too: better listed than missed\n";
        let called: Vec<String> = commands_called(source).into_iter().collect();
        assert_eq!(called, ["GET", "SET", "TIME"]);
    }

    #[test]
    fn a_scripts_needs_are_evalsha_and_its_eval_fallback_with_the_same_keys() {
        let script = LuaScript::new("return redis.call('GET', KEYS[1])");
        let [evalsha, eval] = script.needs("a test", &["p:k".to_owned()], &["7"]);
        assert_eq!(evalsha.command()[0], "EVALSHA");
        assert_eq!(evalsha.command()[2..], ["1", "p:k", "7"]);
        assert_eq!(eval.command()[1], "return redis.call('GET', KEYS[1])");
        assert_eq!(eval.command()[2..], ["1", "p:k", "7"]);
    }
}
