//! Moving comments between stores with `export` and `import` (real processes, DynamoDB
//! Local): embedded → DynamoDB → embedded gives the same export byte for byte (the moderation
//! log's entries included) and the same pages on all three; importing twice writes nothing; an interrupted import resumes without
//! duplicates; an export killed mid-way (from either store, plain or `.jsonl.zst`) resumes to
//! the same bytes as an uninterrupted one.

use std::path::Path;
use std::time::Duration;

use dynapage::domain::{
    Access, CommentPatch, ModerationDecision, ModerationReason, ReportDraft, ReportReason, Verdict,
};
use dynapage::store::CommentStore;
use dynapage::store::sqlite::SqliteStore;
use serde_json::json;

use crate::helpers::process::dynapage_command;
use crate::helpers::{TEST_CURSOR_SECRET, TestApp};
use crate::support::data::dataset;
use crate::support::dynamodb_local::{cli_flags, dynamo_store};

const PAGE: &str = r#"query($sku: String!, $ratings: [Int!], $first: Int, $last: Int, $offset: Int) {
  comments(sku: $sku, ratings: $ratings, first: $first, last: $last, offset: $offset) {
    totalCount
    edges { cursor }
    nodes { id author body rating createdAt updatedAt }
    pageInfo { hasNextPage hasPreviousPage }
  }
}"#;

/// Runs `dynapage <args>`, which must succeed, and returns its standard output.
async fn cli(args: &[&str]) -> String {
    let output = dynapage_command(args[0])
        .args(&args[1..])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .output()
        .await
        .expect("dynapage runs");
    assert!(output.status.success(), "{args:?}: {output:?}");
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn text(path: &Path) -> &str {
    path.to_str().expect("a UTF-8 path")
}

/// A data directory holding two products' comments, some edited (by an author with a `sub`)
/// and some deleted, so versions, `updatedAt` and `sub` all travel.
async fn source(dir: &Path) -> usize {
    let (store, _) = SqliteStore::open(dir, None).expect("open");
    let mut comments = dataset("MOVE-A", 300);
    comments.extend(dataset("MOVE-B", 120));
    for (i, comment) in comments.iter_mut().enumerate() {
        if i % 3 == 0 {
            comment.author_sub = Some(format!("sub-{i}"));
        }
    }
    store.put_batch(&comments).await.expect("put");
    let patch = CommentPatch::new(Some("edited, with \"quotes\" and ü"), Some(2)).expect("patch");
    for comment in comments.iter().step_by(7) {
        store
            .update(comment.id, &patch, comment.created_at_ms + 5, &Access::Any)
            .await
            .expect("update");
    }
    for comment in comments.iter().skip(1).step_by(11) {
        store
            .delete(comment.id, &Access::Any)
            .await
            .expect("delete");
    }
    // Moderation log entries, one of them about a comment deleted since (entries stay).
    let hide = Verdict::new(
        ModerationDecision::Hide,
        Some(ModerationReason::Spam),
        Some("rule 3"),
    )
    .expect("a verdict");
    for comment in comments.iter().skip(2).step_by(50) {
        store
            .moderate(comment.id, &hide, "auth0|carol", comment.created_at_ms + 9)
            .await
            .expect("hide");
        store
            .reply(
                comment.id,
                Some("We looked into it."),
                "auth0|carol",
                comment.created_at_ms + 10,
            )
            .await
            .expect("reply");
    }
    store
        .delete(comments[2].id, &Access::Any)
        .await
        .expect("delete a moderated comment");
    // Reports by two readers on three comments (open reporters travel with a comment, each
    // report on a line of its own); those of the first are dismissed (two more entries).
    let draft = ReportDraft::new(ReportReason::Spam, Some("links")).expect("a draft");
    for i in [4, 64, 124] {
        for reader in ["auth0|reader-a", "auth0|reader-b"] {
            let at = comments[i].created_at_ms + 20;
            store
                .report(comments[i].id, reader, &draft, None, at)
                .await
                .expect("a report");
        }
    }
    let keep = Verdict::new(ModerationDecision::Publish, None, None).expect("a verdict");
    store
        .moderate(
            comments[4].id,
            &keep,
            "auth0|carol",
            comments[4].created_at_ms + 30,
        )
        .await
        .expect("dismissed");
    let left = store.len();
    store.close().await;
    left
}

/// How many moderation log entries [`source`] makes.
const ENTRIES: usize = 2 * 9 + 2;
/// How many reports [`source`] makes.
const REPORTS: usize = 6;

#[tokio::test]
async fn embedded_to_dynamodb_and_back_exports_the_same_bytes_and_serves_the_same_pages() {
    let work = tempfile::tempdir().expect("a directory");
    let (d1, d2) = (work.path().join("one"), work.path().join("two"));
    let count = source(&d1).await;
    let entries = format!("{ENTRIES} moderation log entries");
    let table = dynamo_store().await;
    let flags = cli_flags(&table).await;
    let dynamo: Vec<&str> = flags.iter().map(String::as_str).collect();
    let files: Vec<_> = (1..=3)
        .map(|n| work.path().join(format!("e{n}.jsonl")))
        .collect();

    cli(&["export", "--data-dir", text(&d1), "--out", text(&files[0])]).await;
    let first = cli(&[&["import", "--in", text(&files[0])][..], &dynamo].concat()).await;
    assert!(
        first.contains(&format!("{count} comments written")) && first.contains(&entries),
        "{first}"
    );
    let again = cli(&[&["import", "--in", text(&files[0])][..], &dynamo].concat()).await;
    assert!(
        again.contains(&format!("0 comments written, {count} already there")),
        "{again}"
    );
    cli(&[&["export", "--out", text(&files[1])][..], &dynamo].concat()).await;
    cli(&["import", "--in", text(&files[1]), "--data-dir", text(&d2)]).await;
    cli(&["export", "--data-dir", text(&d2), "--out", text(&files[2])]).await;

    let bytes: Vec<Vec<u8>> = files
        .iter()
        .map(|f| std::fs::read(f).expect("read"))
        .collect();
    assert_eq!(
        bytes[0].iter().filter(|b| **b == b'\n').count(),
        count + ENTRIES + REPORTS
    );
    assert!(
        bytes[0] == bytes[1] && bytes[1] == bytes[2],
        "the three exports are equal byte for byte"
    );
    let exported = String::from_utf8(bytes[0].clone()).expect("UTF-8");
    assert!(exported.contains("\"authorSub\":\"sub-3\"") && exported.contains("\"version\":2"));
    assert!(exported.contains("{\"entry\":") && exported.contains("\"action\":\"REPLY\""));
    assert!(exported.contains("{\"report\":") && exported.contains("\"status\":\"DISMISSED\""));
    assert!(exported.contains("\"reporters\":[\"auth0|reader-a\",\"auth0|reader-b\"]"));

    let apps = [
        // Every server seals cursors with the secret the DynamoDB one needs, so pages compare
        // cursor for cursor.
        TestApp::spawn(&[
            "--data-dir",
            text(&d1),
            "--cursor-secret",
            TEST_CURSOR_SECRET,
        ])
        .await,
        TestApp::on_dynamodb(table.table(), &[]).await,
        TestApp::spawn(&[
            "--data-dir",
            text(&d2),
            "--cursor-secret",
            TEST_CURSOR_SECRET,
        ])
        .await,
    ];
    for variables in [
        json!({ "sku": "MOVE-A", "first": 7, "offset": 13 }),
        json!({ "sku": "MOVE-A", "last": 5 }),
        json!({ "sku": "MOVE-B", "first": 10, "ratings": [2, 5] }),
    ] {
        let mut pages = Vec::new();
        for app in &apps {
            pages.push(app.data(PAGE, variables.clone()).await);
        }
        assert!(
            pages[0]["comments"]["nodes"]
                .as_array()
                .is_some_and(|nodes| !nodes.is_empty()),
            "{variables}: a page with comments"
        );
        assert_eq!(pages[1], pages[0], "{variables}: DynamoDB");
        assert_eq!(pages[2], pages[0], "{variables}: the second embedded store");
    }
}

#[tokio::test]
async fn an_interrupted_import_of_a_zst_file_resumes_after_its_last_batch_without_duplicates() {
    let work = tempfile::tempdir().expect("a directory");
    let dir = work.path().join("data");
    let (store, _) = SqliteStore::open(&dir, None).expect("open");
    store
        .put_batch(&dataset("RESUME", 3_000))
        .await
        .expect("put");
    store.close().await;
    // Compressed: the import counts decompressed lines, and resumes by them.
    let (file, back) = (
        work.path().join("e.jsonl.zst"),
        work.path().join("back.jsonl.zst"),
    );
    cli(&["export", "--data-dir", text(&dir), "--out", text(&file)]).await;
    let table = dynamo_store().await;
    let flags = cli_flags(&table).await;
    let dynamo: Vec<&str> = flags.iter().map(String::as_str).collect();
    let args = [
        "--in",
        text(&file),
        "--batch",
        "100",
        // 3,000 lines take 6 s or more: the kill lands mid-way however the machine is loaded.
        "--comments-per-second",
        "500",
    ];
    let mut child = dynapage_command("import")
        .args(args)
        .args(&dynamo)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("import runs");
    let progress = work.path().join("e.jsonl.zst.import-progress");
    let mut saved = 0;
    // Up to 60 s for 500 lines: DynamoDB Local beside the whole suite took over 10 s for 200.
    for _ in 0..6_000 {
        if let Ok(text) = std::fs::read_to_string(&progress) {
            let value: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
            saved = value["lines"].as_u64().unwrap_or(0);
            if saved >= 500 {
                break;
            }
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    if let Some(status) = child.try_wait().expect("the import's status") {
        let output = child.wait_with_output().await.expect("its output");
        panic!(
            "the import ended ({status}) before it was killed, after {saved} lines: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    child.start_kill().expect("SIGKILL");
    child.wait().await.expect("the import is gone");
    assert!(saved >= 500, "the import saved its progress: {saved}");

    let resumed = cli(&[&["import"][..], &args, &dynamo].concat()).await;
    assert!(!resumed.contains("resumed after line 0,"), "{resumed}");
    assert!(
        !progress.exists(),
        "the progress file is removed at the end"
    );
    cli(&[&["export"][..], &dynamo, &["--out", text(&back)]].concat()).await;
    assert_eq!(
        std::fs::read(&file).expect("read"),
        std::fs::read(&back).expect("read")
    );
}

/// Starts `dynapage export ARGS` at 1,000 comments a second, waits until `started` says it
/// has written something worth resuming, and kills it (SIGKILL) while it still runs.
async fn kill_an_export_mid_way(args: &[&str], started: impl Fn() -> bool) {
    let mut child = dynapage_command("export")
        .args(args)
        .args(["--comments-per-second", "1000"])
        .spawn()
        .expect("export runs");
    for _ in 0..3_000 {
        if started() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(started(), "{args:?}: the export got under way");
    assert!(
        child.try_wait().expect("the export's status").is_none(),
        "{args:?}: the export was still running when it was killed"
    );
    child.start_kill().expect("SIGKILL");
    child.wait().await.expect("the export is gone");
}

fn len(path: &Path) -> u64 {
    std::fs::metadata(path).map_or(0, |m| m.len())
}

/// The embedded store of [`source`] with `n` more comments of one product, so an export at
/// 1,000 a second takes a few seconds.
async fn larger_source(dir: &Path, n: usize) -> usize {
    let before = source(dir).await;
    let (store, _) = SqliteStore::open(dir, None).expect("open");
    store.put_batch(&dataset("MOVE-C", n)).await.expect("put");
    store.close().await;
    before + n
}

#[tokio::test]
async fn an_export_of_the_embedded_store_killed_mid_way_resumes_to_the_same_bytes() {
    let work = tempfile::tempdir().expect("a directory");
    let dir = work.path().join("data");
    let count = larger_source(&dir, 2_500).await;
    for name in ["e.jsonl", "e.jsonl.zst"] {
        let (whole, out) = (
            work.path().join(format!("whole-{name}")),
            work.path().join(name),
        );
        let first = cli(&["export", "--data-dir", text(&dir), "--out", text(&whole)]).await;
        assert!(first.contains("resumed after 0,"), "{first}");
        let partial = work.path().join(format!("{name}.partial"));
        // A plain export is cut wherever its buffer was; a compressed one after a frame of
        // 1,000 lines, with the next under way.
        let enough = if name.ends_with(".zst") { 1 } else { 40_000 };
        kill_an_export_mid_way(&["--data-dir", text(&dir), "--out", text(&out)], || {
            len(&partial) >= enough
        })
        .await;
        assert!(!out.exists(), "{name}: only the partial file is there");
        let kept = len(&partial);
        let resumed = cli(&["export", "--data-dir", text(&dir), "--out", text(&out)]).await;
        assert!(
            resumed.contains(&format!("exported {count} comments"))
                && !resumed.contains("resumed after 0,"),
            "{name}: {resumed}"
        );
        assert!(
            std::fs::read(&out).expect("read") == std::fs::read(&whole).expect("read"),
            "{name}: resumed after {kept} bytes, the same bytes as the uninterrupted export"
        );
        assert!(!partial.exists() && !work.path().join(format!("{name}.export-progress")).exists());
    }
    let plain = std::fs::read(work.path().join("e.jsonl")).expect("read");
    let compressed = std::fs::read(work.path().join("e.jsonl.zst")).expect("read");
    assert!(
        compressed.len() * 3 < plain.len(),
        "zstd compresses the lines"
    );
    assert!(zstd::stream::decode_all(&compressed[..]).expect("one zstd stream") == plain);
}

#[tokio::test]
async fn a_dynamodb_export_killed_mid_scan_resumes_to_the_same_bytes_and_zst_round_trips() {
    let work = tempfile::tempdir().expect("a directory");
    let (d1, d2) = (work.path().join("one"), work.path().join("two"));
    let count = larger_source(&d1, 2_000).await;
    let embedded = work.path().join("embedded.jsonl.zst");
    cli(&["export", "--data-dir", text(&d1), "--out", text(&embedded)]).await;
    let table = dynamo_store().await;
    let flags = cli_flags(&table).await;
    let dynamo: Vec<&str> = flags.iter().map(String::as_str).collect();
    let imported = cli(&[&["import", "--in", text(&embedded)][..], &dynamo].concat()).await;
    assert!(
        imported.contains(&format!("{count} comments written")),
        "{imported}"
    );

    let (whole, out) = (
        work.path().join("whole.jsonl.zst"),
        work.path().join("d.jsonl.zst"),
    );
    cli(&[&["export", "--out", text(&whole)][..], &dynamo].concat()).await;
    assert!(
        std::fs::read(&whole).expect("read") == std::fs::read(&embedded).expect("read"),
        "DynamoDB's export equals the embedded store's, frame for frame"
    );
    // One segment, so the scan resumes inside it, after a LastEvaluatedKey.
    let args = [&["--out", text(&out), "--segments", "1"][..], &dynamo].concat();
    let progress = work.path().join("d.jsonl.zst.export-progress");
    kill_an_export_mid_way(&args, || {
        let saved: serde_json::Value = std::fs::read_to_string(&progress)
            .ok()
            .and_then(|text| serde_json::from_str(&text).ok())
            .unwrap_or_default();
        saved["scan"]["comments"].as_u64() >= Some(1_000) && saved["scan"]["resume"].is_string()
    })
    .await;
    assert!(
        len(&work.path().join("d.jsonl.zst.scan")) > 0,
        "the scan's pages were kept"
    );
    let resumed = cli(&[&["export"][..], &args].concat()).await;
    assert!(
        resumed.contains(&format!("exported {count} comments"))
            && !resumed.contains("resumed after 0,"),
        "{resumed}"
    );
    assert!(
        std::fs::read(&out).expect("read") == std::fs::read(&whole).expect("read"),
        "the resumed export is the same bytes as the uninterrupted one"
    );

    cli(&["import", "--in", text(&out), "--data-dir", text(&d2)]).await;
    let back = work.path().join("back.jsonl.zst");
    cli(&["export", "--data-dir", text(&d2), "--out", text(&back)]).await;
    assert!(
        std::fs::read(&back).expect("read") == std::fs::read(&embedded).expect("read"),
        "embedded → .jsonl.zst → DynamoDB → .jsonl.zst → embedded keeps every byte"
    );
}
