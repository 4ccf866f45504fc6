//! The Redis user's permissions, checked at start-up: every process dry-runs (`ACL DRYRUN`) the
//! commands it declared as its configured user, on a real `redis-server`, so a missing
//! permission stops it at start-up naming the command and what needs it, instead of failing
//! later (a `sync` without `XADD` used to retry its first batch for ever). And the book's ACL
//! line held to what the processes declare.

use std::collections::BTreeSet;
use std::process::Output;
use std::time::Duration;

use dynapage::config::StoreKind;
use dynapage::redis::{
    AclCheck, DRYRUN_RULE, FirstContact, KeyPrefix, Need, RedisConfig, RedisHandle, own_needs,
};
use dynapage::startup::Process;
use dynapage::store::CommentStore;

use crate::helpers::process::exit_code;
use crate::helpers::repo::repo_file;
use crate::support::backends::Backends;
use crate::support::data::generated;
use crate::support::redis_cluster::shared_cluster_urls;
use crate::support::redis_server::{RedisServer, connect, shared_url, unique_prefix};

/// Every kind of process, with the settings that change what it sends.
fn every_process() -> Vec<(Process, StoreKind)> {
    let mut processes = Vec::new();
    for store in [StoreKind::Memory, StoreKind::Dynamodb] {
        for sync in [false, true] {
            for rate_limits in [false, true] {
                processes.push((Process::Serve { sync, rate_limits }, store));
            }
        }
    }
    for process in [
        Process::Seed,
        Process::Sync,
        Process::LambdaSync,
        Process::Reindex,
        Process::Verify,
    ] {
        processes.push((process, StoreKind::Dynamodb));
    }
    processes
}

/// Every command some process sends, the connection layer's own included (Cluster or not).
fn every_need(prefix: &str) -> Vec<Need> {
    let prefix = KeyPrefix::new(prefix);
    let mut needs = own_needs(true);
    for (process, store) in every_process() {
        for need in process.redis_needs(store, &prefix, "comments") {
            if !needs.contains(&need) {
                needs.push(need);
            }
        }
    }
    needs
}

/// The `ACL SETUSER dynapage …` line of `docs/operations/redis-tls-acl.md`.
fn documented_acl_line() -> String {
    let page = repo_file("docs/operations/redis-tls-acl.md");
    let lines: Vec<&str> = page
        .lines()
        .filter(|line| line.starts_with("ACL SETUSER dynapage "))
        .collect();
    assert_eq!(
        lines.len(),
        1,
        "one ACL line in docs/operations/redis-tls-acl.md: {lines:?}"
    );
    lines[0].to_owned()
}

/// The command rules of the book's ACL line (`-@all`, then `+command` each), without the
/// user, password and key pattern, which each test sets itself.
pub fn documented_command_rules() -> Vec<String> {
    documented_acl_line()
        .split_whitespace()
        .filter(|rule| rule.starts_with('+') || rule.starts_with("-@"))
        .map(str::to_owned)
        .collect()
}

/// `ACL SETUSER` arguments of a user limited to `prefix`'s keys and the book's commands,
/// less `without` (`+xadd`).
pub fn acl_rules(user: &str, password: &str, prefix: &str, without: &[&str]) -> Vec<String> {
    let mut rules = vec![
        user.to_owned(),
        "on".to_owned(),
        format!(">{password}"),
        "resetkeys".to_owned(),
        format!("~{prefix}*"),
        "resetchannels".to_owned(),
    ];
    let commands = documented_command_rules();
    for without in without {
        assert!(
            commands.iter().any(|c| c == without),
            "{without} is in the book's line"
        );
    }
    rules.extend(
        commands
            .into_iter()
            .filter(|c| !without.contains(&c.as_str())),
    );
    rules
}

/// Creates `rules`' user on the Redis at `url`, as its default user.
async fn create_user(url: &str, rules: &[String]) {
    let mut admin = connect(url).await;
    redis::cmd("ACL")
        .arg("SETUSER")
        .arg(rules)
        .exec_async(&mut admin)
        .await
        .expect("ACL SETUSER");
}

/// What the start-up check answers for `needs` on `urls`.
async fn first_contact(urls: &str, prefix: &str, needs: &[Need]) -> FirstContact {
    RedisHandle::open(RedisConfig::new(urls, prefix))
        .expect("a valid configuration")
        .first_contact(needs)
        .await
        .expect("the settings and the user are accepted")
}

#[test]
fn the_documented_acl_line_allows_exactly_what_the_processes_declare() {
    let declared: BTreeSet<String> = every_need("dynapage:")
        .iter()
        .map(Need::acl_name)
        .chain([DRYRUN_RULE.to_owned()])
        .collect();
    let line = documented_acl_line();
    assert!(line.contains(" resetkeys ~dynapage:* "), "{line}");
    let rules = documented_command_rules();
    assert_eq!(rules.first().map(String::as_str), Some("-@all"), "{line}");
    let allowed: BTreeSet<String> = rules
        .iter()
        .filter_map(|rule| rule.strip_prefix('+'))
        .map(str::to_owned)
        .collect();
    assert_eq!(allowed, declared, "the book's ACL line: {line}");
}

#[tokio::test]
async fn every_declared_command_dry_runs_on_a_single_node_and_on_every_master_of_a_cluster() {
    // Every command once, the connection layer's own (`PING`, `CLUSTER SLOTS`) included.
    let needs = every_need(&unique_prefix());
    let expected = needs.len();
    let single = first_contact(&shared_url(), &unique_prefix(), &needs).await;
    let FirstContact::Answered(AclCheck::Done { allowed, unchecked }) = single else {
        panic!("checked on a single node: {single:?}");
    };
    assert_eq!((allowed, unchecked), (expected, Vec::<String>::new()));

    let cluster = first_contact(&shared_cluster_urls(), &unique_prefix(), &needs).await;
    let FirstContact::Answered(AclCheck::Done { allowed, unchecked }) = cluster else {
        panic!("checked on a Cluster: {cluster:?}");
    };
    assert_eq!((allowed, unchecked), (expected, Vec::<String>::new()));
}

#[tokio::test]
async fn a_user_with_the_documented_line_may_run_everything_and_one_without_acl_dryrun_is_not_checked()
 {
    let redis = RedisServer::start();
    let prefix = unique_prefix();
    let needs = every_need(&prefix);
    create_user(&redis.url(), &acl_rules("documented", "pw", &prefix, &[])).await;
    let url = redis.url().replace("redis://", "redis://documented:pw@");
    let contact = first_contact(&url, &prefix, &needs).await;
    assert!(
        matches!(&contact, FirstContact::Answered(AclCheck::Done { unchecked, .. }) if unchecked.is_empty()),
        "{contact:?}"
    );

    let without = format!("+{DRYRUN_RULE}");
    create_user(
        &redis.url(),
        &acl_rules("blind", "pw", &prefix, &[&without]),
    )
    .await;
    let url = redis.url().replace("redis://", "redis://blind:pw@");
    let contact = first_contact(&url, &prefix, &needs).await;
    let FirstContact::Answered(AclCheck::Skipped(reason)) = contact else {
        panic!("not checked without ACL DRYRUN: {contact:?}");
    };
    assert!(reason.contains(DRYRUN_RULE), "{reason}");
}

/// Runs `command` with `backends`' flags and `extra` as `user` (created with the book's line
/// less `without`), which must stop at start-up; its standard error.
async fn refused_at_start_up(
    redis: &RedisServer,
    command: &str,
    extra: &[&str],
    without: &str,
) -> String {
    let mut backends = Backends::on(&redis.url()).await;
    let comments = generated("ACL_REFUSED", 5, 20);
    backends.store.put_batch(&comments).await.expect("seed");
    let user = format!("no_{}", without.trim_start_matches('+'));
    create_user(
        &redis.url(),
        &acl_rules(&user, "pw", &backends.prefix, &[without]),
    )
    .await;
    let url = redis
        .url()
        .replace("redis://", &format!("redis://{user}:pw@"));
    backends.args = backends.args_with_redis_url(&url);
    let run = tokio::time::timeout(Duration::from_secs(60), backends.run(command, extra));
    let output: Output = run
        .await
        .unwrap_or_else(|_| panic!("`{command}` as {user} stops at start-up instead of running"));
    assert_eq!(exit_code(&output), Some(1), "{output:?}");
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[tokio::test]
async fn sync_as_a_user_without_xadd_stops_at_start_up_naming_xadd_and_the_change_log() {
    let redis = RedisServer::start();
    let message = refused_at_start_up(&redis, "sync", &[], "+xadd").await;
    assert!(
        message.contains("the Redis user `no_xadd` may not run: XADD, needed by"),
        "{message}"
    );
    assert!(
        message.contains("the change log of live comments"),
        "{message}"
    );
    assert!(
        message.contains("--redis-url / DYNAPAGE_REDIS_URL"),
        "{message}"
    );
}

#[tokio::test]
async fn reindex_as_a_user_without_zadd_which_only_apply_lua_sends_stops_at_start_up() {
    let redis = RedisServer::start();
    let message = refused_at_start_up(&redis, "reindex", &[], "+zadd").await;
    assert!(
        message.contains("the Redis user `no_zadd` may not run: ZADD, needed by"),
        "{message}"
    );
    assert!(message.contains("inside apply.lua"), "{message}");
}

#[tokio::test]
async fn serve_as_a_user_without_xrange_stops_at_start_up_naming_the_resume_of_subscriptions() {
    let redis = RedisServer::start();
    let serve = [
        "--listen",
        "127.0.0.1:0",
        "--auth",
        "off",
        "--cursor-secret",
        crate::helpers::TEST_CURSOR_SECRET,
    ];
    let message = refused_at_start_up(&redis, "serve", &serve, "+xrange").await;
    assert!(
        message.contains("the Redis user `no_xrange` may not run: XRANGE, needed by"),
        "{message}"
    );
    assert!(
        message.contains("resumed subscriptions, given what they missed from the change log"),
        "{message}"
    );
}
