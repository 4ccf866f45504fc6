//! One box for real (`serve --data-dir`): the durable embedded store keeps comments across
//! restarts, feeds live subscribers like the in-memory store, has one owner, and refuses a
//! damaged or foreign database with a clear error instead of a panic. The crash test is in
//! `one_box::crash`.

use std::path::Path;

use serde_json::{Value, json};

use crate::helpers::process::serve_fails_to_start;
use crate::helpers::websocket::Client;
use crate::helpers::{Api, EDIT_COMMENT, TestApp};

const EVENTS: &str = r#"subscription Events($sku: String!) {
  commentEvents(sku: $sku) { kind totalCount edge { node { id body rating } } }
}"#;
const PAGE: &str = "query($sku: String!) { comments(sku: $sku, first: 10) { totalCount nodes { id body rating } } }";

/// `serve --data-dir DIR` on a random port.
async fn on_disk(dir: &Path) -> TestApp {
    TestApp::spawn(&["--data-dir", dir.to_str().expect("a UTF-8 path")]).await
}

async fn add(app: &TestApp, sku: &str, body: &str) -> String {
    app.add_comment(None, sku, body, 4).await
}

async fn page(app: &TestApp, sku: &str) -> Value {
    app.data(PAGE, json!({ "sku": sku })).await["comments"].clone()
}

#[tokio::test]
async fn comments_survive_a_restart_and_live_subscribers_see_every_write() {
    let dir = tempfile::tempdir().expect("a data directory");
    let app = on_disk(dir.path()).await;
    assert_eq!(
        page(&app, "BOX").await["totalCount"],
        0,
        "no demo data on disk"
    );
    let mut client = Client::ready(&app).await;
    client
        .subscribe_to("1", EVENTS, json!({ "sku": "BOX" }))
        .await;
    let id = add(&app, "BOX", "kept").await;
    let added = client.event().await;
    assert_eq!(
        (added["kind"].clone(), added["totalCount"].clone()),
        (json!("ADDED"), json!(1))
    );
    add(&app, "BOX", "also kept").await;
    client.event().await;
    app.data(EDIT_COMMENT, json!({ "id": id, "body": "edited" }))
        .await;
    let updated = client.event().await;
    assert_eq!(updated["kind"], "UPDATED");
    assert_eq!(updated["edge"]["node"]["body"], "edited");
    let before = page(&app, "BOX").await;
    // An open socket holds the server's state, and with it the directory's lock, until it closes.
    drop(client);
    app.stop().await.expect("a clean stop");

    let app = on_disk(dir.path()).await;
    assert_eq!(page(&app, "BOX").await, before);
    assert_eq!(before["totalCount"], 2);
    assert_eq!(before["nodes"][1]["body"], "edited");
    app.stop().await.expect("a clean stop");
}

#[tokio::test]
async fn a_second_server_on_the_same_data_dir_is_refused_and_the_first_keeps_serving() {
    let dir = tempfile::tempdir().expect("a data directory");
    let app = on_disk(dir.path()).await;
    let path = dir.path().to_str().expect("a UTF-8 path");
    let stderr = serve_fails_to_start(&["--data-dir", path]).await;
    assert!(
        stderr.contains("another dynapage process") && stderr.contains("owns the data directory"),
        "{stderr}"
    );
    assert!(
        stderr.contains("--data-dir / DYNAPAGE_DATA_DIR"),
        "{stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
    add(&app, "BOX", "the owner still writes").await;
    assert_eq!(page(&app, "BOX").await["totalCount"], 1);
    app.stop().await.expect("a clean stop");
}

#[tokio::test]
async fn the_store_is_closed_once_its_last_handle_is_dropped_and_its_directory_opens_again() {
    use dynapage::store::CommentStore as _;
    use dynapage::store::sqlite::SqliteStore;
    use std::time::Duration;

    let dir = tempfile::tempdir().expect("a data directory");
    let (store, _) = SqliteStore::open(dir.path(), None).expect("open");
    let other = store.clone();
    let closed = store.closed();
    drop(store);
    other
        .ping()
        .await
        .expect("the writer runs while a handle is left");
    let mut waiting = Box::pin(closed.wait());
    assert!(
        tokio::time::timeout(Duration::from_millis(200), &mut waiting)
            .await
            .is_err(),
        "not closed while a handle is left"
    );
    assert!(SqliteStore::open(dir.path(), None).is_err(), "still locked");
    drop(other);
    tokio::time::timeout(Duration::from_secs(5), waiting)
        .await
        .expect("closed once the last handle is gone");
    let (reopened, _) = SqliteStore::open(dir.path(), None).expect("the directory is free");
    reopened.close().await;
}

/// What `serve --data-dir dir` says when it refuses to start; never a panic.
async fn refused(dir: &Path) -> String {
    let stderr = serve_fails_to_start(&["--data-dir", dir.to_str().expect("UTF-8")]).await;
    assert!(!stderr.contains("panicked"), "{stderr}");
    stderr
}

#[tokio::test]
async fn a_damaged_or_foreign_database_file_is_a_clear_error_not_a_panic() {
    let garbage = tempfile::tempdir().expect("a data directory");
    std::fs::write(
        garbage.path().join("comments.sqlite3"),
        b"this is not a database, just some bytes that are long enough to be read as a header......",
    )
    .expect("write");
    let stderr = refused(garbage.path()).await;
    assert!(stderr.contains("is not a dynapage database"), "{stderr}");

    let foreign = tempfile::tempdir().expect("a data directory");
    let conn = rusqlite::Connection::open(foreign.path().join("comments.sqlite3")).expect("open");
    conn.execute_batch(
        "CREATE TABLE invoices (id INTEGER PRIMARY KEY); INSERT INTO invoices VALUES (1);",
    )
    .expect("a foreign database");
    drop(conn);
    let stderr = refused(foreign.path()).await;
    assert!(stderr.contains("another program"), "{stderr}");

    let not_ours = tempfile::tempdir().expect("a directory");
    std::fs::write(not_ours.path().join("notes.txt"), "mine").expect("write");
    let stderr = refused(not_ours.path()).await;
    assert!(stderr.contains("holds no dynapage data"), "{stderr}");
    assert_eq!(
        std::fs::read_dir(not_ours.path()).expect("list").count(),
        2,
        "nothing but the lock file was added"
    );

    let stderr = serve_fails_to_start(&[
        "--data-dir",
        not_ours.path().to_str().expect("UTF-8"),
        "--store",
        "dynamodb",
        "--auth",
        "off",
    ])
    .await;
    assert!(
        stderr.contains("cannot be used with --store dynamodb"),
        "{stderr}"
    );
}

#[tokio::test]
async fn a_damaged_row_is_named_in_the_error() {
    let dir = tempfile::tempdir().expect("a data directory");
    let app = on_disk(dir.path()).await;
    let id = add(&app, "BOX", "soon damaged").await;
    app.stop().await.expect("a clean stop");
    let conn = rusqlite::Connection::open(dir.path().join("comments.sqlite3")).expect("open");
    conn.execute("UPDATE comments SET rating = 9", [])
        .expect("damage the row");
    drop(conn);
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    let stderr = refused(dir.path()).await;
    assert!(
        stderr.contains("is damaged: the rating is not 1..5"),
        "{stderr}"
    );
    let raw = comment_id(&id);
    assert!(stderr.contains(&raw), "the row's id {raw}: {stderr}");
}

/// The comment id inside a global id (`Comment:<id>`, base64url).
pub fn comment_id(global: &str) -> String {
    use base64::Engine;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(global)
        .expect("a base64url global id");
    String::from_utf8(bytes)
        .expect("UTF-8")
        .trim_start_matches("Comment:")
        .to_owned()
}

#[tokio::test]
async fn a_backup_taken_while_the_server_writes_restores_by_starting_a_server_on_it() {
    let dir = tempfile::tempdir().expect("a data directory");
    let app = on_disk(dir.path()).await;
    for i in 0..50 {
        add(&app, "BOX", &format!("before the backup {i}")).await;
    }
    let api = Api::clone(&app);
    let writing = tokio::spawn(async move {
        for i in 0..200 {
            api.add_comment(None, "BOX", &format!("during {i}"), 2)
                .await;
        }
    });
    let work = tempfile::tempdir().expect("a directory");
    let copy = work.path().join("backup.sqlite3");
    let status = crate::helpers::process::dynapage_command("backup")
        .args(["--data-dir", dir.path().to_str().expect("UTF-8")])
        .args(["--out", copy.to_str().expect("UTF-8")])
        .status()
        .await
        .expect("backup runs");
    assert!(status.success());
    writing.await.expect("the writes went on");
    assert_eq!(page(&app, "BOX").await["totalCount"], 250);

    let restored = work.path().join("restored");
    std::fs::create_dir(&restored).expect("mkdir");
    std::fs::copy(&copy, restored.join("comments.sqlite3")).expect("restore");
    let verify = crate::helpers::process::dynapage_command("verify")
        .args(["--data-dir", restored.to_str().expect("UTF-8")])
        .status()
        .await
        .expect("verify runs");
    assert!(verify.success(), "the copy is consistent");
    let restored_app = on_disk(&restored).await;
    let total = page(&restored_app, "BOX").await["totalCount"]
        .as_u64()
        .expect("a count");
    assert!((50..=250).contains(&total), "{total}");
    add(&restored_app, "BOX", "written into the restored copy").await;
    assert_eq!(page(&restored_app, "BOX").await["totalCount"], total + 1);
    restored_app.stop().await.expect("a clean stop");
    app.stop().await.expect("a clean stop");
}
