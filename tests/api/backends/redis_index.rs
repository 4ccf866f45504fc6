//! The Redis adapter beyond the shared `PageIndex` contract (`contracts::index`): what only a
//! networked index does. An outage is reported fast, and the index recovers by itself.

use std::time::{Duration, Instant};

use dynapage::domain::{IndexEntry, RatingSet};
use dynapage::index::redis::RedisIndex;
use dynapage::index::{IndexError, PageIndex};
use dynapage::redis::RedisConfig;

use crate::support::data::upserts;
use crate::support::data::{key, rating, sku};
use crate::support::redis_server::{RedisServer, unique_prefix};

#[tokio::test]
async fn a_redis_outage_is_reported_unavailable_within_seconds_and_heals_on_return() {
    let mut server = RedisServer::start();
    let index = RedisIndex::connect(RedisConfig::new(&server.url(), &unique_prefix()))
        .await
        .expect("connect");
    let product = sku("OUTAGE");
    let entry = IndexEntry {
        verified: false,
        author: None,
        reported: false,
        sku: product.clone(),
        key: key(5_000, 1),
        rating: rating(3),
        version: 1,
        helpful: 0,
        published: true,
        status: dynapage::domain::CommentStatus::Published,
    };
    index
        .apply(&upserts(std::slice::from_ref(&entry)))
        .await
        .expect("apply");

    server.stop();
    for _ in 0..3 {
        let started = Instant::now();
        let result = index.count(&product, RatingSet::ALL).await;
        assert!(
            matches!(result, Err(IndexError::Unavailable(_))),
            "got {result:?}"
        );
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "took {:?}",
            started.elapsed()
        );
    }

    server.restart();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match index.ping().await {
            Ok(()) => break,
            Err(e) if Instant::now() < deadline => {
                let _ = e;
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(e) => panic!("the index did not recover: {e:?}"),
        }
    }
    index
        .apply(&upserts(std::slice::from_ref(&entry)))
        .await
        .expect("apply after recovery");
    assert_eq!(
        index.count(&product, RatingSet::ALL).await.expect("count"),
        1
    );
}

#[tokio::test]
async fn a_redis_that_is_down_at_start_does_not_prevent_construction() {
    let mut server = RedisServer::start();
    let url = server.url();
    server.stop();
    let index = RedisIndex::connect(RedisConfig::new(&url, &unique_prefix()))
        .await
        .expect("construction does not need Redis");
    assert!(index.ping().await.is_err());
    server.restart();
    let deadline = Instant::now() + Duration::from_secs(10);
    while index.ping().await.is_err() {
        assert!(Instant::now() < deadline, "the index did not recover");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn the_first_call_after_redis_comes_back_is_answered() {
    let mut server = RedisServer::start();
    let index = RedisIndex::connect(RedisConfig::new(&server.url(), &unique_prefix()))
        .await
        .expect("connect");
    let product = sku("COMEBACK");
    assert_eq!(
        index.count(&product, RatingSet::ALL).await.expect("count"),
        0
    );

    // Restarted while the connection sat idle: its socket died unused.
    server.restart();
    assert_eq!(
        index
            .count(&product, RatingSet::ALL)
            .await
            .expect("the first call after an idle restart"),
        0
    );

    // Restarted after calls failed during the outage (the connection's reconnect failed too).
    server.stop();
    assert!(index.count(&product, RatingSet::ALL).await.is_err());
    server.restart();
    assert_eq!(
        index
            .count(&product, RatingSet::ALL)
            .await
            .expect("the first call after an outage"),
        0
    );
}
