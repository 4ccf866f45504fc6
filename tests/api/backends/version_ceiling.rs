//! A comment's version has a ceiling (`MAX_VERSION`, 2^53 − 2) that every store, the index and
//! `import` hold: a write past it is refused with an error naming the comment (nothing
//! written, nothing wrapped); the versions up to it, and the deletion one past it, are exact
//! in every copy (the Redis index compares them as Lua doubles); `import` refuses a line past
//! it with the line's number; a box imported at the ceiling and written to still starts.

use dynapage::domain::{
    Access, ChangeEvent, Comment, CommentPatch, IndexEntry, MAX_VERSION, RatingSet, Voter,
};
use dynapage::index::memory::MemoryIndex;
use dynapage::index::redis::RedisIndex;
use dynapage::index::{Held, PageIndex, Stale};
use dynapage::redis::RedisConfig;
use dynapage::store::memory::MemoryStore;
use dynapage::store::{CommentStore, StoreError};
use serde_json::{Value, json};

use crate::helpers::process::dynapage_command;
use crate::helpers::{DELETE_COMMENT, EDIT_COMMENT, TestApp, error_codes};
use crate::support::data::dataset;
use crate::support::dynamodb_local::dynamo_store;
use crate::support::redis_server::{shared_url, unique_prefix};
use crate::support::sqlite::sqlite_store;

contract_suite! {
    backends: {
        memory => async { MemoryStore::new() },
        dynamodb => dynamo_store(),
        sqlite => sqlite_store(),
    },
    behaviours: [
        a_comment_at_the_highest_version_refuses_edits_and_votes_and_writes_nothing,
        the_last_write_below_the_ceiling_is_made_and_read_back_exactly,
    ],
}

contract_suite! {
    backends: {
        memory_index => async { MemoryIndex::new() },
        redis_index => async {
            RedisIndex::connect(RedisConfig::new(&shared_url(), &unique_prefix()))
                .await
                .expect("a Redis index")
        },
    },
    behaviours: [the_index_tells_versions_apart_up_to_the_ceiling_and_its_deletion],
}

const NOW: u64 = 1_800_000_000_000;

fn voter(name: &str) -> Voter {
    Voter::anonymous(&format!("ip:{name}"))
}

/// Comments of `sku` stored at `versions`, one each.
async fn stored_at<S: CommentStore>(store: &S, sku: &str, versions: &[u64]) -> Vec<Comment> {
    let comments: Vec<Comment> = dataset(sku, versions.len())
        .into_iter()
        .zip(versions)
        .map(|(comment, &version)| Comment { version, ..comment })
        .collect();
    store.put_batch(&comments).await.expect("put_batch");
    comments
}

async fn read<S: CommentStore>(store: &S, comment: &Comment) -> Comment {
    store.get_many(&[comment.id]).await.expect("get_many")[0]
        .clone()
        .expect("still there")
}

fn is_ceiling(result: Result<impl std::fmt::Debug, StoreError>, comment: &Comment) -> bool {
    match result {
        Err(StoreError::VersionCeiling(refused)) => {
            assert_eq!(refused.id, comment.id);
            assert!(
                refused.to_string().contains(&comment.id.to_string()),
                "{refused}"
            );
            true
        }
        other => panic!("not refused at the ceiling: {other:?}"),
    }
}

pub async fn a_comment_at_the_highest_version_refuses_edits_and_votes_and_writes_nothing<
    S: CommentStore,
>(
    store: S,
) {
    let [top, other] = stored_at(&store, "CEILING", &[MAX_VERSION, 1])
        .await
        .try_into()
        .expect("two comments");
    let patch = CommentPatch::new(Some("past the ceiling"), Some(1)).expect("patch");
    assert!(is_ceiling(
        store.update(top.id, &patch, NOW, &Access::Any).await,
        &top
    ));
    assert!(is_ceiling(
        store.mark_helpful(top.id, &voter("ann"), true, NOW).await,
        &top
    ));
    assert_eq!(read(&store, &top).await, top, "nothing was written");
    assert_eq!(
        store
            .helpful_votes(voter("ann").id, &[top.id])
            .await
            .expect("votes"),
        [false],
        "the refused vote left no vote behind"
    );
    // Its neighbours are written as ever, and the comment itself can still be deleted.
    let edited = store
        .update(other.id, &patch, NOW, &Access::Any)
        .await
        .expect("an edit of another comment");
    assert_eq!(edited.version, 2);
    assert_eq!(
        store.delete(top.id, &Access::Any).await.expect("delete"),
        top
    );
}

pub async fn the_last_write_below_the_ceiling_is_made_and_read_back_exactly<S: CommentStore>(
    store: S,
) {
    let [edited, voted] = stored_at(&store, "BELOW", &[MAX_VERSION - 1, MAX_VERSION - 1])
        .await
        .try_into()
        .expect("two comments");
    let patch = CommentPatch::new(Some("the last edit"), None).expect("patch");
    let last = store
        .update(edited.id, &patch, NOW, &Access::Any)
        .await
        .expect("the last version");
    assert_eq!(
        (last.version, last.body.as_str()),
        (MAX_VERSION, "the last edit")
    );
    assert_eq!(read(&store, &edited).await, last);
    let vote = store
        .mark_helpful(voted.id, &voter("bo"), true, NOW)
        .await
        .expect("the last vote");
    assert_eq!(
        (vote.comment.version, vote.comment.helpful_count),
        (MAX_VERSION, 1)
    );
    // Taking the vote back would be one more write: refused by the store's own condition
    // (DynamoDB's is in the transaction, with no read before it), and the vote stays.
    assert!(is_ceiling(
        store.mark_helpful(voted.id, &voter("bo"), false, NOW).await,
        &voted
    ));
    assert_eq!(read(&store, &voted).await.helpful_count, 1);
    // The vote as it already is changes nothing, so it is not refused.
    let again = store
        .mark_helpful(voted.id, &voter("bo"), true, NOW)
        .await
        .expect("a vote that changes nothing");
    assert!(!again.changed);
}

pub async fn the_index_tells_versions_apart_up_to_the_ceiling_and_its_deletion<I: PageIndex>(
    index: I,
) {
    let comment = &dataset("INDEXED-CEILING", 1)[0];
    let entry = |version| IndexEntry {
        version,
        ..IndexEntry::from(comment)
    };
    let upsert = |version| ChangeEvent::Upsert {
        old: None,
        new: entry(version),
    };
    let refused = |held| vec![Stale { event: 0, held }];
    assert_eq!(
        index
            .apply(&[upsert(MAX_VERSION - 1)])
            .await
            .expect("apply"),
        []
    );
    assert_eq!(
        index.apply(&[upsert(MAX_VERSION)]).await.expect("apply"),
        []
    );
    assert_eq!(
        index.entries(&comment.sku).await.expect("entries"),
        [entry(MAX_VERSION)],
        "read back to the last digit"
    );
    assert_eq!(
        index
            .apply(&[upsert(MAX_VERSION - 1)])
            .await
            .expect("apply"),
        refused(Held::Live {
            version: MAX_VERSION
        }),
        "one version older is older"
    );
    let deletion = ChangeEvent::removal(entry(MAX_VERSION));
    assert_eq!(deletion.version(), MAX_VERSION + 1);
    assert_eq!(index.apply(&[deletion]).await.expect("apply"), []);
    assert_eq!(
        index.apply(&[upsert(MAX_VERSION)]).await.expect("apply"),
        refused(Held::Deleted {
            version: MAX_VERSION + 1
        }),
        "the deletion wins over the last version"
    );
    assert_eq!(
        index
            .count(&comment.sku, RatingSet::ALL)
            .await
            .expect("count"),
        0
    );
}

/// One export line of a comment of `sku` at `version` (a JSON number, so any size).
fn line(sku: &str, n: u64, version: &str) -> String {
    let comment = &dataset(sku, n as usize + 1)[n as usize];
    let mut value = json!({
        "id": comment.id.to_string(),
        "sku": sku,
        "author": "imported",
        "authorSub": null,
        "body": format!("comment {n}"),
        "rating": 4,
        "createdAtMs": comment.created_at_ms,
        "updatedAtMs": null,
        "version": 0,
    })
    .to_string();
    value = value.replace("\"version\":0", &format!("\"version\":{version}"));
    value
}

/// `dynapage import --in FILE --data-dir DIR`: whether it succeeded, and its stdout and stderr.
async fn import(file: &std::path::Path, dir: &std::path::Path) -> (bool, String) {
    let output = dynapage_command("import")
        .args(["--in", file.to_str().expect("UTF-8")])
        .args(["--data-dir", dir.to_str().expect("UTF-8")])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .output()
        .await
        .expect("import runs");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    (output.status.success(), text)
}

const PAGE: &str = "query($sku: String!) { comments(sku: $sku, first: 10) { totalCount nodes { id body helpfulCount } } }";
const MARK: &str = "mutation($id: ID!, $helpful: Boolean!) { markHelpful(input: { commentId: $id, helpful: $helpful }) { comment { helpfulCount } } }";

async fn page(app: &TestApp, sku: &str) -> Value {
    app.data(PAGE, json!({ "sku": sku })).await["comments"].clone()
}

#[tokio::test]
async fn import_refuses_a_line_past_the_highest_version_naming_the_line_and_writes_nothing_of_its_batch()
 {
    let work = tempfile::tempdir().expect("a directory");
    for past in [
        (MAX_VERSION + 1).to_string(),
        i64::MAX.to_string(),
        (1u64 << 63).to_string(),
        u64::MAX.to_string(),
        "18446744073709551616".to_owned(),
        "0".to_owned(),
    ] {
        let file = work.path().join(format!("past-{past}.jsonl"));
        let dir = work.path().join(format!("box-{past}"));
        std::fs::write(
            &file,
            [line("PAST", 0, "1"), line("PAST", 1, &past)].join("\n"),
        )
        .expect("write");
        let (ok, said) = import(&file, &dir).await;
        assert!(!ok, "{past}: {said}");
        assert!(said.contains("line 2"), "{past}: {said}");
        assert!(!said.contains("panicked"), "{past}: {said}");
        // The box starts, and holds nothing of the refused batch.
        let app = TestApp::spawn(&["--data-dir", dir.to_str().expect("UTF-8")]).await;
        assert_eq!(page(&app, "PAST").await["totalCount"], 0, "{past}");
        app.stop().await.expect("a clean stop");
    }
    let file = work.path().join("at-the-ceiling.jsonl");
    std::fs::write(&file, line("PAST", 0, &MAX_VERSION.to_string())).expect("write");
    let (ok, said) = import(&file, &work.path().join("top")).await;
    assert!(ok && said.contains("1 comments written"), "{said}");
}

#[tokio::test]
async fn a_box_imported_at_the_highest_versions_refuses_writes_past_them_and_starts_again() {
    let work = tempfile::tempdir().expect("a directory");
    let (file, dir) = (work.path().join("top.jsonl"), work.path().join("box"));
    std::fs::write(
        &file,
        [
            line("TOP", 0, &(MAX_VERSION - 1).to_string()),
            line("TOP", 1, &MAX_VERSION.to_string()),
        ]
        .join("\n"),
    )
    .expect("write");
    let (ok, said) = import(&file, &dir).await;
    assert!(ok, "{said}");
    let dir_arg = dir.to_str().expect("UTF-8");
    let app = TestApp::spawn(&["--data-dir", dir_arg]).await;
    let nodes = page(&app, "TOP").await["nodes"].clone();
    let id = |body: &str| {
        nodes
            .as_array()
            .expect("nodes")
            .iter()
            .find(|n| n["body"] == body)
            .expect("imported")["id"]
            .clone()
    };
    let (below, top) = (id("comment 0"), id("comment 1"));
    // One write left below the ceiling: a vote takes it.
    app.data(MARK, json!({ "id": below, "helpful": true }))
        .await;
    for (query, variables) in [
        (MARK, json!({ "id": below, "helpful": false })),
        (MARK, json!({ "id": top, "helpful": true })),
        (
            EDIT_COMMENT,
            json!({ "id": top, "body": "past the ceiling" }),
        ),
    ] {
        let refused = app.graphql(query, variables.clone()).await;
        assert_eq!(
            error_codes(&refused),
            ["FORBIDDEN"],
            "{variables}: {refused}"
        );
        let message = refused["errors"][0]["message"].as_str().expect("a message");
        assert!(message.contains("highest a comment may reach"), "{message}");
    }
    app.data(DELETE_COMMENT, json!({ "id": top })).await;
    let before = page(&app, "TOP").await;
    assert_eq!(before["totalCount"], 1);
    assert_eq!(before["nodes"][0]["helpfulCount"], 1);
    app.stop().await.expect("a clean stop");

    let app = TestApp::spawn(&["--data-dir", dir_arg]).await;
    assert_eq!(
        page(&app, "TOP").await,
        before,
        "the box starts again as it was"
    );
    app.add_comment(None, "TOP", "after the restart", 5).await;
    assert_eq!(page(&app, "TOP").await["totalCount"], 2);
    app.stop().await.expect("a clean stop");
}

#[tokio::test]
async fn a_row_past_the_highest_version_stops_start_up_naming_the_row() {
    let dir = tempfile::tempdir().expect("a data directory");
    let dir_arg = dir.path().to_str().expect("UTF-8");
    let app = TestApp::spawn(&["--data-dir", dir_arg]).await;
    app.add_comment(None, "ROW", "after the restart", 5).await;
    app.stop().await.expect("a clean stop");
    let conn = rusqlite::Connection::open(dir.path().join("comments.sqlite3")).expect("open");
    let id: Vec<u8> = conn
        .query_row("SELECT id FROM comments", [], |row| row.get(0))
        .expect("the row");
    conn.execute(
        "UPDATE comments SET version = ?1",
        [i64::try_from(MAX_VERSION + 1).expect("fits")],
    )
    .expect("a version past the ceiling");
    drop(conn);
    let stderr = crate::helpers::process::serve_fails_to_start(&["--data-dir", dir_arg]).await;
    assert!(
        stderr.contains("the version is not between 1 and"),
        "{stderr}"
    );
    let id = dynapage::domain::CommentId::from_bytes(id.try_into().expect("16 bytes"));
    assert!(stderr.contains(&id.to_string()), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}
