//! Redis over TLS and as an ACL user, as managed Redis (ElastiCache, MemoryDB, Upstash, Redis
//! Cloud) requires: `rediss://` with the test's own CA (`--redis-ca-file`) on a single node and
//! on a Cluster whose nodes speak only TLS, the start-up errors of settings that can never work,
//! and every command (`serve`, `sync`, `reindex`, `verify`) run by a user limited to its key
//! prefix and the commands dynapage sends: the ACL line the book lists (read from
//! `docs/operations/redis-tls-acl.md` by `redis_acl`), on a single node and on every node of a Cluster.

use std::time::Duration;

use dynapage::store::CommentStore;
use serde_json::{Value, json};

use crate::backends::redis_acl::acl_rules;
use crate::helpers::process::{exit_code, stdout};
use crate::helpers::process::{serve_fails_to_start, terminate};
use crate::helpers::{DEMO_SKU, TestApp};
use crate::support::backends::Backends;
use crate::support::data::generated;
use crate::support::redis_cluster::{RedisCluster, cli, shared_cluster_urls};
use crate::support::redis_server::{RedisServer, connect};
use crate::support::redis_tls::TlsRedis;

/// Writes `count` comments of `sku` to the table, then runs `reindex` and `verify` (no drift)
/// and serves `totalCount` and a deep page, all with `backends`' flags.
async fn reindex_verify_and_serve(backends: &Backends, sku: &str, count: usize) {
    let comments = generated(sku, 3, count);
    dynapage::cli::seed::put_retrying(&backends.store, &comments)
        .await
        .expect("seed");
    let rebuilt = backends.run("reindex", &[]).await;
    assert_eq!(exit_code(&rebuilt), Some(0), "{rebuilt:?}");
    assert!(
        stdout(&rebuilt).contains(&format!("reindexed {count} comments")),
        "{rebuilt:?}"
    );
    let verified = backends.run("verify", &[]).await;
    assert_eq!(exit_code(&verified), Some(0), "{}", stdout(&verified));
    let total = count as u64;
    backends
        .assert_serves_a_deep_page(sku, total - 50, total)
        .await;
}

#[tokio::test]
async fn serve_counts_and_jumps_through_a_tls_redis_trusted_by_its_ca_file() {
    let redis = TlsRedis::start();
    let (url, ca) = (redis.url(), redis.ca_file().display().to_string());
    let app = TestApp::spawn(&[
        "--demo-comments",
        "600",
        "--index",
        "redis",
        "--redis-url",
        &url,
        "--redis-ca-file",
        &ca,
    ])
    .await;
    app.until_total(DEMO_SKU, Value::Null, 600).await;
    let deep = app
        .data(
            "query($sku: String!) { comments(sku: $sku, first: 20, offset: 550) { totalCount edges { cursor } } }",
            json!({ "sku": DEMO_SKU }),
        )
        .await;
    assert_eq!(deep["comments"]["totalCount"], 600);
    assert_eq!(deep["comments"]["edges"].as_array().map(Vec::len), Some(20));
    app.stop().await.expect("the server stops");
}

#[tokio::test]
async fn plaintext_to_a_tls_port_stops_serve_at_start_up_saying_to_use_rediss() {
    let redis = TlsRedis::start();
    let url = redis.plaintext_url();
    let message = serve_fails_to_start(&["--index", "redis", "--redis-url", &url]).await;
    assert!(
        message.contains("--redis-url / DYNAPAGE_REDIS_URL"),
        "{message}"
    );
    assert!(message.contains("rediss://"), "{message}");
}

#[tokio::test]
async fn a_tls_redis_with_a_private_ca_is_refused_without_its_ca_file_or_with_a_file_that_is_no_ca()
{
    let redis = TlsRedis::start();
    let url = redis.url();
    let message = serve_fails_to_start(&["--index", "redis", "--redis-url", &url]).await;
    assert!(message.contains("TLS handshake failed"), "{message}");
    assert!(
        message.contains("--redis-ca-file / DYNAPAGE_REDIS_CA_FILE"),
        "{message}"
    );

    let not_a_ca = redis.key_file().display().to_string();
    let message = serve_fails_to_start(&[
        "--index",
        "redis",
        "--redis-url",
        &url,
        "--redis-ca-file",
        &not_a_ca,
    ])
    .await;
    assert!(
        message.contains("--redis-ca-file / DYNAPAGE_REDIS_CA_FILE"),
        "{message}"
    );
    assert!(message.contains("holds no PEM certificate"), "{message}");
}

#[tokio::test]
async fn an_acl_user_limited_to_its_prefix_runs_serve_sync_reindex_and_verify() {
    let redis = RedisServer::start();
    let mut backends = Backends::on(&redis.url()).await;
    let mut admin = connect(&redis.url()).await;
    redis::cmd("ACL")
        .arg("SETUSER")
        .arg(acl_rules("dynapage", "s3cret", &backends.prefix, &[]))
        .exec_async(&mut admin)
        .await
        .expect("ACL SETUSER");
    let acl_url = redis.url().replace("redis://", "redis://dynapage:s3cret@");
    backends.args = backends.args_with_redis_url(&acl_url);

    // The user really is limited: a key outside its prefix is refused.
    let user = redis::Client::open(acl_url.as_str()).expect("user url");
    let mut user = user
        .get_multiplexed_async_connection()
        .await
        .expect("the user logs in");
    let outside: redis::RedisResult<Option<String>> = redis::cmd("GET")
        .arg("elsewhere")
        .query_async(&mut user)
        .await;
    assert_eq!(
        outside.expect_err("outside the prefix").code(),
        Some("NOPERM")
    );

    let comments = generated("ACL_LIMITED", 7, 300);
    backends.store.put_batch(&comments).await.expect("seed");
    let rebuilt = backends.run("reindex", &[]).await;
    assert_eq!(exit_code(&rebuilt), Some(0), "{rebuilt:?}");
    assert!(
        stdout(&rebuilt).contains("reindexed 300 comments"),
        "{rebuilt:?}"
    );

    let mut worker = backends.spawn_sync();
    let more = generated("ACL_LIMITED", 8, 40);
    backends.store.put_batch(&more).await.expect("write more");
    backends.until_no_drift("the ACL user's sync").await;
    let status = terminate(&mut worker, Duration::from_secs(10)).await;
    assert!(status.success(), "the sync worker exits 0: {status}");

    let verified = backends.run("verify", &[]).await;
    assert_eq!(exit_code(&verified), Some(0), "{}", stdout(&verified));

    backends
        .assert_serves_a_deep_page("ACL_LIMITED", 300, 340)
        .await;

    // Nothing dynapage sent was denied.
    let denied: Vec<redis::Value> = redis::cmd("ACL")
        .arg("LOG")
        .query_async(&mut admin)
        .await
        .expect("ACL LOG");
    assert_eq!(
        denied.len(),
        1,
        "only the test's own GET is denied: {denied:?}"
    );
}

#[tokio::test]
async fn an_acl_user_in_the_urls_of_a_cluster_runs_serve_reindex_and_verify() {
    let urls = shared_cluster_urls();
    let mut backends = Backends::on(&urls).await;
    let rules = acl_rules("dynapage_cluster", "s3cret", &backends.prefix, &[]);
    let mut setuser = vec!["ACL", "SETUSER"];
    setuser.extend(rules.iter().map(String::as_str));
    for url in urls.split(',') {
        let port: u16 = url
            .rsplit(':')
            .next()
            .and_then(|p| p.parse().ok())
            .expect("a port");
        assert_eq!(cli(port, &setuser).trim(), "OK", "ACL SETUSER on {port}");
    }
    let acl_urls = urls.replace("redis://", "redis://dynapage_cluster:s3cret@");
    backends.args = backends.args_with_redis_url(&acl_urls);
    reindex_verify_and_serve(&backends, "ACL_CLUSTER", 200).await;

    // A password the nodes refuse stops start-up on a Cluster as on a single node.
    let wrong = urls.replace("redis://", "redis://dynapage_cluster:wrong@");
    let message = serve_fails_to_start(&["--index", "redis", "--redis-url", &wrong]).await;
    assert!(message.contains("user:password@"), "{message}");
}

#[tokio::test]
async fn serve_reindex_and_verify_work_on_a_cluster_whose_nodes_speak_only_tls() {
    let cluster = RedisCluster::start_tls();
    let (urls, ca) = (cluster.urls(), cluster.ca_file());
    let backends = Backends::on_tls(&urls, &ca).await;
    reindex_verify_and_serve(&backends, "TLS_CLUSTER", 300).await;

    // The nodes have no plaintext port, and the CA is needed: both are start-up errors.
    let plaintext = urls.replace("rediss://", "redis://");
    let message = serve_fails_to_start(&["--index", "redis", "--redis-url", &plaintext]).await;
    assert!(message.contains("rediss://"), "{message}");
    let message = serve_fails_to_start(&["--index", "redis", "--redis-url", &urls]).await;
    assert!(message.contains("TLS handshake failed"), "{message}");
}

#[tokio::test]
async fn a_wrong_password_or_a_user_without_ping_stops_serve_at_start_up() {
    let redis = RedisServer::start();
    let mut admin = connect(&redis.url()).await;
    redis::cmd("ACL")
        .arg(&["SETUSER", "noping", "on", ">pw", "~*", "-@all", "+get"][..])
        .exec_async(&mut admin)
        .await
        .expect("ACL SETUSER");
    for (credentials, said) in [
        ("nobody:wrong@", "authentication failed"),
        ("noping:pw@", "'ping'"),
    ] {
        let url = redis
            .url()
            .replace("redis://", &format!("redis://{credentials}"));
        let message = serve_fails_to_start(&["--index", "redis", "--redis-url", &url]).await;
        assert!(
            message.contains("--redis-url / DYNAPAGE_REDIS_URL"),
            "{message}"
        );
        assert!(message.contains("user:password@"), "{message}");
        assert!(message.contains(said), "{message}");
    }
}
