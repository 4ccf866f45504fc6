//! `import` treats its file as hostile input (real processes, DynamoDB Local): of several
//! lines of one id in one batch the newest version is written whatever their order, on both
//! stores; author and body are held to the API's text rules (cleaned, or the line refused
//! with its number); a line longer than any comment's is refused without being read whole
//! (fed through a FIFO that never ends it); a refused line stops the import after the
//! batches before it, and a rerun resumes there. After each, a normal client is served.

use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};

use dynapage::domain::{Comment, CommentId};
use dynapage::store::CommentStore;
use dynapage::store::sqlite::SqliteStore;
use serde_json::{Value, json};

use crate::helpers::TestApp;
use crate::helpers::process::dynapage_command;
use crate::support::data::dataset;
use crate::support::dynamodb_local::{cli_flags, dynamo_store};

/// The export line of `comment` with `version` and `body` (and `author`), as JSON.
fn line(comment: &Comment, version: u64, author: &str, body: &str) -> String {
    json!({
        "id": comment.id.to_string(),
        "sku": comment.sku.as_str(),
        "author": author,
        "authorSub": null,
        "body": body,
        "rating": 3,
        "createdAtMs": comment.created_at_ms,
        "updatedAtMs": null,
        "version": version,
    })
    .to_string()
}

fn text(path: &Path) -> &str {
    path.to_str().expect("a UTF-8 path")
}

/// Runs `dynapage import --in FILE ARGS`: whether it succeeded, and what it printed.
async fn import(file: &Path, args: &[&str]) -> (bool, String) {
    let output = dynapage_command("import")
        .args(["--in", text(file)])
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .output()
        .await
        .expect("import runs");
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(!said.contains("panicked"), "{said}");
    (output.status.success(), said)
}

/// The comments `dir`'s store holds of `ids`, opened after the import ended.
async fn held(dir: &Path, ids: &[CommentId]) -> Vec<Option<Comment>> {
    let (store, _) = SqliteStore::open(dir, None).expect("open");
    let found = store.get_many(ids).await.expect("get_many");
    store.close().await;
    found
}

const PAGE: &str =
    "query($sku: String!) { comments(sku: $sku, first: 10) { totalCount nodes { author body } } }";

/// Starts a server on `dir`, checks that a normal client reads `sku` and writes to it, and
/// returns the page as it was before that write.
async fn served(dir: &Path, sku: &str) -> Value {
    let app = TestApp::spawn(&["--data-dir", text(dir)]).await;
    let page = app.data(PAGE, json!({ "sku": sku })).await["comments"].clone();
    app.add_comment(None, sku, "a normal write", 5).await;
    let total = page["totalCount"].as_u64().expect("a count");
    assert_eq!(
        app.data(PAGE, json!({ "sku": sku })).await["comments"]["totalCount"],
        total + 1
    );
    app.stop().await.expect("a clean stop");
    page
}

#[tokio::test]
async fn the_newest_line_of_an_id_wins_in_one_batch_whatever_the_order_on_both_stores() {
    let work = tempfile::tempdir().expect("a directory");
    let [a, b, c] = dataset("DUPLICATES", 3).try_into().expect("three");
    // `cat new.jsonl old.jsonl | import`: the new line first, and an equal version later.
    let lines = [
        line(&a, 3, "ann", "a, newest"),
        line(&b, 1, "bo", "b, old"),
        line(&a, 1, "ann", "a, oldest"),
        line(&b, 2, "bo", "b, new"),
        line(&a, 2, "ann", "a, middle"),
        line(&c, 1, "cy", "c, first of equals"),
        line(&c, 1, "cy", "c, second of equals"),
    ];
    let file = work.path().join("duplicates.jsonl");
    std::fs::write(&file, lines.join("\n")).expect("write");
    let want = [(3, "a, newest"), (2, "b, new"), (1, "c, first of equals")];
    let ids = [a.id, b.id, c.id];
    let seen = |found: Vec<Option<Comment>>| -> Vec<(u64, String)> {
        found
            .into_iter()
            .map(|c| c.expect("imported"))
            .map(|c| (c.version, c.body))
            .collect()
    };
    let want: Vec<(u64, String)> = want.iter().map(|(v, b)| (*v, b.to_string())).collect();

    let dir = work.path().join("box");
    let (ok, said) = import(&file, &["--data-dir", text(&dir)]).await;
    assert!(ok, "{said}");
    assert!(said.contains("3 comments written"), "{said}");
    assert!(said.contains("4 older lines of an id replaced"), "{said}");
    assert_eq!(seen(held(&dir, &ids).await), want);
    // A second import writes nothing, and older lines in later batches change nothing.
    let (ok, said) = import(&file, &["--data-dir", text(&dir), "--batch", "1"]).await;
    assert!(ok && said.contains("0 comments written"), "{said}");
    assert_eq!(seen(held(&dir, &ids).await), want);
    let page = served(&dir, "DUPLICATES").await;
    assert_eq!(page["totalCount"], 3);

    // DynamoDB refuses a BatchWriteItem with two puts of one key; the batch holds one.
    let table = dynamo_store().await;
    let flags = cli_flags(&table).await;
    let dynamo: Vec<&str> = flags.iter().map(String::as_str).collect();
    let (ok, said) = import(&file, &dynamo).await;
    assert!(ok && said.contains("3 comments written"), "{said}");
    assert_eq!(seen(table.get_many(&ids).await.expect("get_many")), want);
}

#[tokio::test]
async fn import_cleans_texts_like_the_api_and_refuses_the_lines_it_would_refuse() {
    let work = tempfile::tempdir().expect("a directory");
    let [first, second] = dataset("RULES", 2).try_into().expect("two");
    let dir = work.path().join("box");
    let file = work.path().join("cleaned.jsonl");
    std::fs::write(
        &file,
        [
            line(
                &first,
                1,
                "\u{202E}nna ",
                "fine\r\nwith a \u{9B}2J C1 CSI\u{7}",
            ),
            line(&second, 1, "bo", "plain"),
        ]
        .join("\n"),
    )
    .expect("write");
    let (ok, said) = import(&file, &["--data-dir", text(&dir)]).await;
    assert!(ok && said.contains("1 texts cleaned"), "{said}");
    let cleaned = held(&dir, &[first.id]).await[0].clone().expect("imported");
    assert_eq!(
        (cleaned.author.as_str(), cleaned.body.as_str()),
        ("nna", "fine\nwith a 2J C1 CSI")
    );

    let third = &dataset("RULES", 3)[2];
    for (what, author, body) in [
        ("an empty author", String::new(), "fine".to_owned()),
        (
            "a blank author",
            "\u{200B}\u{3164} ".to_owned(),
            "fine".to_owned(),
        ),
        (
            "an invisible body",
            "cy".to_owned(),
            "\u{2061}\u{1BCA0}\u{FFF9}".to_owned(),
        ),
        ("a body over the limit", "cy".to_owned(), "x".repeat(4_001)),
        (
            "an author over the limit",
            "c".repeat(101),
            "fine".to_owned(),
        ),
    ] {
        let file = work.path().join("refused.jsonl");
        std::fs::write(
            &file,
            [
                line(&first, 1, "ann", "again"),
                line(third, 1, &author, &body),
            ]
            .join("\n"),
        )
        .expect("write");
        let (ok, said) = import(&file, &["--data-dir", text(&dir)]).await;
        assert!(!ok, "{what}: {said}");
        assert!(said.contains("line 2:"), "{what}: {said}");
        assert!(
            said.contains("`author`") || said.contains("`body`"),
            "{what}: {said}"
        );
        assert_eq!(held(&dir, &[third.id]).await, [None], "{what}");
    }
    // The issue's 200,000-character body: longer than any comment's line.
    let file = work.path().join("huge.jsonl");
    std::fs::write(&file, line(third, 1, "cy", &"x".repeat(200_000))).expect("write");
    let (ok, said) = import(&file, &["--data-dir", text(&dir)]).await;
    assert!(!ok && said.contains("line 1 is longer than"), "{said}");

    let page = served(&dir, "RULES").await;
    assert_eq!(page["totalCount"], 2);
}

#[tokio::test]
async fn a_line_that_never_ends_is_refused_after_the_bound_without_being_read_whole() {
    let work = tempfile::tempdir().expect("a directory");
    let fifo = work.path().join("endless.jsonl");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo runs");
    assert!(made.success());
    let first = dataset("ENDLESS", 1)[0].clone();
    let head = format!("{}\n", line(&first, 1, "ann", "before the endless line"));
    let writer = {
        let fifo = fifo.clone();
        std::thread::spawn(move || {
            let mut pipe = std::fs::OpenOptions::new()
                .write(true)
                .open(&fifo)
                .expect("the reader opens the FIFO");
            pipe.write_all(head.as_bytes()).expect("the first line");
            let chunk = vec![b'x'; 64 * 1024];
            let mut sent = head.len() as u64;
            // Until the reader goes away (a broken pipe), or far past any bound.
            while sent < 4 << 30 {
                match pipe.write(&chunk) {
                    Ok(n) => sent += n as u64,
                    Err(_) => break,
                }
            }
            sent
        })
    };
    let dir = work.path().join("box");
    let started = Instant::now();
    let (ok, said) = import(&fifo, &["--data-dir", text(&dir)]).await;
    let sent = writer.join().expect("the writer ends");
    assert!(!ok, "{said}");
    assert!(said.contains("line 2 is longer than"), "{said}");
    assert!(
        sent < 8 << 20,
        "the import stopped reading at the bound: {sent} bytes were taken"
    );
    assert!(started.elapsed() < Duration::from_secs(30));
    let page = served(&dir, "ENDLESS").await;
    assert_eq!(page["totalCount"], 0, "nothing of the refused batch");
}

#[tokio::test]
async fn a_refused_line_stops_the_import_after_the_batches_before_it_and_a_rerun_resumes_there() {
    let work = tempfile::tempdir().expect("a directory");
    let comments = dataset("RESUMED", 5);
    let good: Vec<String> = comments
        .iter()
        .map(|c| line(c, 1, "ann", &format!("body of {}", c.id)))
        .collect();
    let bad = line(&comments[4], 1, "", "no author");
    let file = work.path().join("mended.jsonl");
    let dir = work.path().join("box");
    let args = ["--data-dir", text(&dir), "--batch", "2"];
    std::fs::write(&file, [&good[..4], &[bad]].concat().join("\n")).expect("write");
    let (ok, said) = import(&file, &args).await;
    assert!(!ok, "{said}");
    assert!(said.contains("line 5:"), "{said}");
    assert!(said.contains("resumes after line 4"), "{said}");
    let ids: Vec<CommentId> = comments.iter().map(|c| c.id).collect();
    let found = held(&dir, &ids).await;
    assert_eq!(
        found.iter().map(Option::is_some).collect::<Vec<_>>(),
        [true, true, true, true, false],
        "the two whole batches before the line are written"
    );

    std::fs::write(&file, good.join("\n")).expect("mend the line");
    let (ok, said) = import(&file, &args).await;
    assert!(ok, "{said}");
    assert!(
        said.contains("1 comments written") && said.contains("resumed after line 4"),
        "{said}"
    );
    assert!(held(&dir, &ids).await.iter().all(Option::is_some));
    assert_eq!(served(&dir, "RESUMED").await["totalCount"], 5);
}

/// A moderation log line is held to the same care: a line with an unknown action, a foreign
/// field or a note over the limit is refused with its number, and nothing of its batch is
/// written.
#[tokio::test]
async fn import_refuses_a_damaged_moderation_log_line() {
    let work = tempfile::tempdir().expect("a directory");
    let [first] = dataset("LOGGED", 1).try_into().expect("one");
    let dir = work.path().join("box");
    let good = format!(
        r#"{{"entry":"01KDWCA0000000000000000001","comment":"{}","sku":"LOGGED","actor":"auth0|carol","action":"HIDE","previousStatus":"PUBLISHED","status":"HIDDEN","reason":"SPAM","atMs":1767225600000}}"#,
        first.id
    );
    for (what, bad) in [
        ("an unknown action", good.replace("HIDE", "ERASE")),
        (
            "a foreign field",
            good.replace("\"atMs\"", "\"extra\":1,\"atMs\""),
        ),
        (
            "a note over the limit",
            good.replace(
                "\"atMs\"",
                &format!("\"note\":\"{}\",\"atMs\"", "x".repeat(4_001)),
            ),
        ),
    ] {
        let file = work.path().join("log.jsonl");
        std::fs::write(&file, [line(&first, 1, "ann", "kept?"), bad].join("\n")).expect("write");
        let (ok, said) = import(&file, &["--data-dir", text(&dir)]).await;
        assert!(!ok && said.contains("line 2:"), "{what}: {said}");
        assert!(
            held(&dir, &[first.id]).await[0].is_none(),
            "{what}: nothing written"
        );
    }
    let file = work.path().join("log.jsonl");
    std::fs::write(&file, [line(&first, 1, "ann", "kept"), good].join("\n")).expect("write");
    let (ok, said) = import(&file, &["--data-dir", text(&dir)]).await;
    assert!(ok && said.contains("1 moderation log entries"), "{said}");
}
