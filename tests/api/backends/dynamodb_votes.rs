//! Helpful votes in DynamoDB, beyond the contract (`contracts::votes`): many voters racing on one
//! comment through transactions, what a vote costs in capacity units (the figures in
//! BENCHMARKS.md), and vote items beside the commands that scan the table or follow its stream
//! (`reindex`, `verify`, `export`, `sync`).

use std::time::Duration;

use futures::StreamExt;

use aws_sdk_dynamodb::types::AttributeValue;
use dynapage::domain::{Access, Comment, Voter};
use dynapage::store::CommentStore;

use crate::helpers::process::{exit_code, stdout};
use crate::support::backends::Backends;
use crate::support::counters::Counters;
use crate::support::data::generated;
use crate::support::dynamodb_local::{dynamo_store, endpoint, sdk_client};
use crate::support::redis_server::shared_url;

const NOW: u64 = 1_800_000_000_000;

/// Votes in flight at once in the race.
const IN_FLIGHT: usize = 60;

/// Sixty voters, each voting three times at once, and twenty of them taking their vote back
/// at the same time: the count is the voters whose vote stands, and so is the number of vote
/// items the table holds for the comment. DynamoDB cancels transactions that meet on the comment
/// (`TransactionConflict`); the store sends them again.
#[tokio::test]
async fn sixty_racing_voters_count_once_each_whatever_the_conflicts() {
    let counters = Counters::default();
    let _recorder = metrics::set_default_local_recorder(&counters);
    let store = dynamo_store().await;
    let mut comments = generated("RACE", 1, 2);
    let (comment, warm_up) = (comments.remove(0), comments.remove(0));
    store
        .put_batch(&[comment.clone(), warm_up.clone()])
        .await
        .expect("put");
    // A fresh DynamoDB Local's first transactions run before its JIT has compiled them: a
    // few votes one after another first, so that the race meets a warm server, not one whose
    // answers to 180 transactions at once can outlast the 5 s attempt on a slow machine.
    for i in 0..20 {
        let voter = Voter::signed_in(&format!("warm-up-{i}"));
        store
            .mark_helpful(warm_up.id, &voter, true, NOW)
            .await
            .expect("a vote");
    }
    let voters: Vec<Voter> = (0..60)
        .map(|i| Voter::signed_in(&format!("voter-{i}")))
        .collect();
    let votes = voters.iter().flat_map(|v| [v, v, v]).map(|voter| {
        let store = &store;
        async move { store.mark_helpful(comment.id, voter, true, NOW).await }
    });
    // Sixty in flight at once, each voter's three side by side: DynamoDB Local runs writes one
    // at a time, and with six GSIs to keep, 180 transactions sent together can leave the last
    // waiting past the client's 5 s attempt timeout on two cores; sixty still meet on the
    // comment and conflict.
    let written: Vec<_> = futures::stream::iter(votes)
        .buffered(IN_FLIGHT)
        .collect()
        .await;
    assert_eq!(
        written
            .into_iter()
            .map(|v| v.expect("every vote succeeds"))
            .filter(|v| v.changed)
            .count(),
        60
    );
    let withdrawals = voters[..20].iter().flat_map(|v| [v, v]).map(|voter| {
        let store = &store;
        async move { store.mark_helpful(comment.id, voter, false, NOW).await }
    });
    let withdrawn: Vec<_> = futures::stream::iter(withdrawals)
        .buffered(IN_FLIGHT)
        .collect()
        .await;
    for withdrawn in withdrawn {
        withdrawn.expect("every withdrawal succeeds");
    }
    let stored = store.get_many(&[comment.id]).await.expect("read")[0]
        .clone()
        .expect("there");
    assert_eq!(stored.helpful_count, 40);
    assert_eq!(stored.version, 1 + 60 + 20, "one version per vote written");
    let mut items = 0;
    let mut resume = None;
    loop {
        let page = store.scan(0, 1, resume).await.expect("scan");
        let race = page.votes.iter().filter(|(id, _)| *id == comment.id);
        items += race.map(|(_, n)| n).sum::<u64>();
        match page.resume {
            Some(token) => resume = Some(token),
            None => break,
        }
    }
    assert_eq!(items, 40, "one vote item per standing vote");
    eprintln!(
        "transactions sent again after a conflict: {}",
        counters.get("dynapage_store_transaction_conflicts_total")
    );
}

/// What a vote costs, as DynamoDB reports it (`ReturnConsumedCapacity`): a transactional write
/// is two write units per KB begun of each item written; the vote item is written twice (in
/// the table and in GSI `byVoter`, a person's votes), and the comment seven times: in the
/// table, in its two GSIs by time (which project every attribute), and twice in each GSI by
/// helpful votes, whose sort key (`helpfulRank`) the vote moves, which DynamoDB charges as a
/// deletion and an insertion: `2 × (2 + 7 × ⌈KB⌉)`. The
/// batched read of a page's votes is at most one read unit per key (each under 4 KB, strongly
/// consistent), found or not.
#[tokio::test]
async fn a_vote_costs_two_write_units_per_kb_of_each_item_it_writes() {
    let counters = Counters::default();
    let _recorder = metrics::set_default_local_recorder(&counters);
    let store = dynamo_store().await;
    let mut rows = Vec::new();
    for (body_bytes, expected_units) in [(100, 18), (1_500, 32), (3_500, 60)] {
        let comment = Comment {
            body: "x".repeat(body_bytes),
            ..generated("COST", body_bytes as u64, 1).remove(0)
        };
        store
            .put_batch(std::slice::from_ref(&comment))
            .await
            .expect("put");
        let before = counters.get("dynapage_store_write_units_total");
        store
            .mark_helpful(comment.id, &Voter::signed_in("ann"), true, NOW)
            .await
            .expect("a vote");
        let units = counters.get("dynapage_store_write_units_total") - before;
        rows.push(format!("body {body_bytes} B: {units} WCU"));
        assert_eq!(units, expected_units, "body of {body_bytes} bytes");
    }
    let page = generated("COST-PAGE", 7, 20);
    store.put_batch(&page).await.expect("put");
    let ids: Vec<_> = page.iter().map(|c| c.id).collect();
    let ann = Voter::signed_in("ann");
    for comment in &page[..5] {
        store
            .mark_helpful(comment.id, &ann, true, NOW)
            .await
            .expect("a vote");
    }
    let before = counters.get("dynapage_store_read_units_total");
    let voted = store.helpful_votes(ann.id, &ids).await.expect("votes");
    let units = counters.get("dynapage_store_read_units_total") - before;
    assert_eq!(voted.iter().filter(|v| **v).count(), 5);
    rows.push(format!("votes of a page of 20 (5 voted): {units} RCU"));
    eprintln!("{}", rows.join("\n"));
    assert!(units <= 20, "one unit per key at most: {units}");
}

/// A table with votes: `sync` applies each vote's comment change (the index holds the new
/// version: no drift) and skips the vote items' own records; `reindex` and `export` read only
/// comments; `verify` checks every count against its votes, says how many votes are left of
/// deleted comments, and fails on a count that disagrees.
#[tokio::test]
async fn the_commands_read_a_table_with_votes_and_verify_holds_counts_to_votes() {
    let backends = Backends::on(&shared_url()).await;
    let mut sync = backends.spawn_sync();
    let comments = generated("VOTED", 3, 12);
    backends
        .store
        .put_batch(&comments)
        .await
        .expect("put_batch");
    for (i, comment) in comments.iter().enumerate().take(6) {
        for v in 0..=i {
            let voter = Voter::signed_in(&format!("v{v}"));
            backends
                .store
                .mark_helpful(comment.id, &voter, true, NOW)
                .await
                .expect("a vote");
        }
    }
    backends.until_no_drift("votes through the stream").await;
    crate::helpers::process::terminate(&mut sync, Duration::from_secs(10)).await;

    let rebuilt = backends.run("reindex", &[]).await;
    assert_eq!(exit_code(&rebuilt), Some(0), "{rebuilt:?}");
    let verified = backends.run("verify", &[]).await;
    assert_eq!(exit_code(&verified), Some(0), "{}", stdout(&verified));
    assert!(
        stdout(&verified).contains(
            "helpful counts: every count equals its votes (12 comments, 21 votes; 0 votes of deleted comments)"
        ),
        "{}",
        stdout(&verified)
    );
    let only = backends.run("verify", &["--sku", "VOTED"]).await;
    assert_eq!(exit_code(&only), Some(0), "{}", stdout(&only));
    assert!(stdout(&only).contains("helpful counts: not checked"));

    let dir = tempfile::tempdir().expect("a temporary directory");
    let file = dir.path().join("comments.jsonl");
    let exported = backends
        .run("export", &["--out", file.to_str().expect("utf-8")])
        .await;
    assert_eq!(exit_code(&exported), Some(0), "{exported:?}");
    let lines = std::fs::read_to_string(&file).expect("the export");
    assert_eq!(lines.lines().count(), 12, "comments only, no vote items");

    // A count written past the store, and a voted comment deleted.
    let client = sdk_client(&endpoint().await);
    client
        .update_item()
        .table_name(backends.store.table())
        .key("id", AttributeValue::S(comments[2].id.to_string()))
        .update_expression("SET helpfulCount = :n")
        .expression_attribute_values(":n", AttributeValue::N("9".into()))
        .send()
        .await
        .expect("a hand edit");
    backends
        .store
        .delete(comments[5].id, &Access::Any)
        .await
        .expect("deleted");
    let drifted = backends.run("verify", &[]).await;
    let text = stdout(&drifted);
    assert_eq!(exit_code(&drifted), Some(1), "{text}");
    assert!(
        text.contains(&format!(
            "HELPFUL COUNT VOTED {}: helpfulCount=9 votes=3",
            comments[2].id
        )),
        "{text}"
    );
    assert!(
        text.contains(
            "1 counts differ from their votes (11 comments, 15 votes; 6 votes of deleted comments)"
        ),
        "{text}"
    );
}
