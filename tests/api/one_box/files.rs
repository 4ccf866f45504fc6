//! The files of one box for real, against the real binary beside a real `serve --data-dir`
//! process: the commands that write a file the user names refuse the live data directory
//! (however the path is spelled, `--force` or not) and an existing file without `--force`,
//! while the server keeps serving, restarts, and holds every acknowledged write; the
//! directory is `0700` and its files `0600` whatever the umask; the lock holds after its file
//! is deleted; a zero-length database is refused, never taken for a new store.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use serde_json::json;

use crate::helpers::RATE_LIMITS_OFF;
use crate::helpers::process::{ServerProcess, free_port};

const PAGE: &str = "{ comments(sku: \"FILES\", first: 100) { totalCount nodes { body } } }";

/// A `dynapage serve --data-dir` process, started under a umask, its standard error in a file.
struct Server {
    process: ServerProcess,
    stderr: tempfile::NamedTempFile,
}

fn text(path: &Path) -> &str {
    path.to_str().expect("a UTF-8 path")
}

/// `dynapage ARGS` run with `umask` (through `sh`, which sets it and execs the binary).
fn command(umask: &str, args: &[&str]) -> tokio::process::Command {
    let mut command = tokio::process::Command::new("sh");
    command
        .args(["-c", "umask \"$0\" && exec \"$@\"", umask])
        .arg(env!("CARGO_BIN_EXE_dynapage"))
        .args(args)
        .env("RUST_LOG", "warn")
        .stdin(Stdio::null())
        .kill_on_drop(true);
    command
}

/// Runs `dynapage ARGS` to its end: whether it succeeded, and its stdout and stderr.
async fn run(args: &[&str]) -> (bool, String) {
    let output = command("022", args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .await
        .expect("dynapage runs");
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(!said.contains("panicked"), "{args:?}: {said}");
    (output.status.success(), said)
}

impl Server {
    async fn start(dir: &Path, umask: &str) -> Self {
        let stderr = tempfile::NamedTempFile::new().expect("a log file");
        let log = stderr.reopen().expect("the log file");
        let mut serve = command(umask, &["serve"]);
        serve.stdout(Stdio::null()).stderr(Stdio::from(log));
        let args = [
            &RATE_LIMITS_OFF[..],
            &["--demo-comments", "0", "--data-dir", text(dir)],
        ];
        let server = Self {
            process: ServerProcess::spawned(serve, &args.concat()),
            stderr,
        };
        assert!(
            server.process.becomes_healthy().await,
            "the server did not start: {}",
            server.log()
        );
        server
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.stderr.path()).unwrap_or_default()
    }

    /// Adds a comment and returns once the server acknowledged it.
    async fn add(&self, body: &str) {
        self.process.add_comment(None, "FILES", body, 4).await;
    }

    async fn bodies(&self) -> Vec<String> {
        let page = self.process.data(PAGE, json!({})).await;
        let mut bodies: Vec<String> = page["comments"]["nodes"]
            .as_array()
            .expect("nodes")
            .iter()
            .map(|n| n["body"].as_str().expect("a body").to_owned())
            .collect();
        bodies.sort();
        bodies
    }

    async fn stop(mut self) {
        let status = self.process.terminate(Duration::from_secs(15)).await;
        assert!(status.success(), "{status}: {}", self.log());
    }
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path)
        .unwrap_or_else(|e| panic!("{path:?}: {e}"))
        .permissions()
        .mode()
        & 0o777
}

#[tokio::test]
async fn commands_refuse_to_write_into_the_live_data_directory_and_the_server_keeps_every_write() {
    let work = tempfile::tempdir().expect("a directory");
    let dir = work.path().join("data");
    let server = Server::start(&dir, "022").await;
    server.add("acknowledged before").await;
    let database = dir.join("comments.sqlite3");
    std::fs::create_dir(dir.join("sub")).expect("a subdirectory of the data directory");
    std::os::unix::fs::symlink(&dir, work.path().join("link")).expect("a link to it");
    let spelled = [
        database.clone(),
        dir.join("comments.sqlite3-wal"),
        dir.join("backup.sqlite3"),
        dir.join("sub/../comments.sqlite3"),
        work.path().join("link/comments.sqlite3"),
        work.path().join("elsewhere/../data/comments.sqlite3"),
    ];
    std::fs::create_dir(work.path().join("elsewhere")).expect("mkdir");
    for out in &spelled {
        for force in [&[][..], &["--force"][..]] {
            let attempts: [Vec<&str>; 3] = [
                vec!["backup", "--data-dir", text(&dir), "--out", text(out)],
                vec!["export", "--data-dir", text(&dir), "--out", text(out)],
                vec!["export-schema", "--output", text(out)],
            ];
            for attempt in attempts {
                let args = [&attempt[..], force].concat();
                let (ok, said) = run(&args).await;
                assert!(!ok, "{args:?}: {said}");
                assert!(
                    said.contains("is inside the data directory"),
                    "{args:?}: {said}"
                );
            }
        }
        // The server writes on between the attempts, and answers every one.
        server
            .add(&format!("acknowledged after {}", out.display()))
            .await;
    }
    let (ok, said) = run(&["token", "--sub", "a", "--key-dir", text(&dir.join("keys"))]).await;
    assert!(
        !ok && said.contains("is inside the data directory"),
        "{said}"
    );
    let (ok, said) = run(&[
        "import",
        "--in",
        text(&dir.join("in.jsonl")),
        "--data-dir",
        text(&dir),
    ])
    .await;
    assert!(
        !ok && said.contains("is inside the data directory"),
        "{said}"
    );
    // Nothing was left beside the database.
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .expect("list")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "comments.sqlite3",
            "comments.sqlite3-shm",
            "comments.sqlite3-wal",
            "dynapage.lock",
            "sub"
        ]
    );

    let before = server.bodies().await;
    assert_eq!(before.len(), 1 + spelled.len());
    server.stop().await;
    let (ok, said) = run(&["verify", "--data-dir", text(&dir)]).await;
    assert!(ok, "the database is whole: {said}");
    let server = Server::start(&dir, "022").await;
    assert_eq!(server.bodies().await, before, "every acknowledged write");
    server.add("written after the restart").await;
    server.stop().await;
}

#[tokio::test]
async fn an_existing_output_is_replaced_only_with_force() {
    let work = tempfile::tempdir().expect("a directory");
    let dir = work.path().join("data");
    let server = Server::start(&dir, "022").await;
    server.add("one").await;
    for (command, out) in [
        ("backup", work.path().join("copy.sqlite3")),
        ("export", work.path().join("copy.jsonl")),
    ] {
        std::fs::write(&out, b"someone's file").expect("write");
        let args = [command, "--data-dir", text(&dir), "--out", text(&out)];
        let (ok, said) = run(&args).await;
        assert!(!ok, "{said}");
        assert!(said.contains("exists; refusing to write over it"), "{said}");
        assert!(said.contains("--force"), "{said}");
        assert_eq!(std::fs::read(&out).expect("read"), b"someone's file");
        let (ok, said) = run(&[&args[..], &["--force"]].concat()).await;
        assert!(ok, "{said}");
        assert_ne!(std::fs::read(&out).expect("read"), b"someone's file");
        assert_eq!(mode(&out), 0o600, "{command}");
    }
    let schema = work.path().join("schema.graphql");
    std::fs::write(&schema, b"old").expect("write");
    let (ok, _) = run(&["export-schema", "--output", text(&schema)]).await;
    assert!(!ok);
    let (ok, said) = run(&["export-schema", "--output", text(&schema), "--force"]).await;
    assert!(ok, "{said}");
    assert_eq!(
        std::fs::read_to_string(&schema).expect("read"),
        dynapage::graphql::sdl()
    );
    server.add("two").await;
    assert_eq!(server.bodies().await, ["one", "two"]);
    server.stop().await;
}

#[tokio::test]
async fn the_data_directory_is_0700_and_its_files_0600_whatever_the_umask() {
    let work = tempfile::tempdir().expect("a directory");
    let dir = work.path().join("new/data");
    let server = Server::start(&dir, "000").await;
    server.add("private").await;
    assert_eq!(mode(&dir), 0o700);
    for name in [
        "comments.sqlite3",
        "comments.sqlite3-wal",
        "comments.sqlite3-shm",
        "dynapage.lock",
    ] {
        assert_eq!(mode(&dir.join(name)), 0o600, "{name}");
    }
    let (backup, export) = (
        work.path().join("b.sqlite3"),
        work.path().join("e.jsonl.zst"),
    );
    for args in [
        ["backup", "--data-dir", text(&dir), "--out", text(&backup)],
        ["export", "--data-dir", text(&dir), "--out", text(&export)],
    ] {
        let output = command("000", &args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .await
            .expect("runs");
        assert!(output.success(), "{args:?}");
    }
    assert_eq!((mode(&backup), mode(&export)), (0o600, 0o600));
    server.stop().await;

    // A directory made by someone else, open to others, is theirs: a warning, no chmod. The
    // files in it, left readable by an older dynapage or a umask, are ours: tightened.
    let theirs = work.path().join("theirs");
    std::fs::create_dir(&theirs).expect("mkdir");
    std::fs::set_permissions(&theirs, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    std::fs::copy(&backup, theirs.join("comments.sqlite3")).expect("restore the backup");
    std::fs::set_permissions(
        theirs.join("comments.sqlite3"),
        std::fs::Permissions::from_mode(0o644),
    )
    .expect("chmod");
    let server = Server::start(&theirs, "022").await;
    assert_eq!(server.bodies().await, ["private"]);
    let log = server.log();
    assert!(
        log.contains("the data directory lets other users in") && log.contains(text(&theirs)),
        "{log}"
    );
    assert!(log.contains("its mode is now 600"), "{log}");
    assert_eq!(mode(&theirs), 0o755, "not changed behind the user's back");
    assert_eq!(mode(&theirs.join("comments.sqlite3")), 0o600);
    server.stop().await;
}

#[tokio::test]
async fn a_second_server_is_refused_even_after_the_lock_file_is_deleted() {
    let work = tempfile::tempdir().expect("a directory");
    let dir = work.path().join("data");
    let first = Server::start(&dir, "022").await;
    first.add("the owner's").await;
    std::fs::remove_file(dir.join("dynapage.lock")).expect("someone deletes the lock file");
    let port = free_port();
    let listen = format!("127.0.0.1:{port}");
    let second = command(
        "022",
        &[
            "serve",
            "--listen",
            &listen,
            "--demo-comments",
            "0",
            "--data-dir",
            text(&dir),
        ],
    )
    .stdout(Stdio::null())
    .stderr(Stdio::piped())
    .spawn()
    .expect("runs");
    let output = tokio::time::timeout(Duration::from_secs(30), second.wait_with_output())
        .await
        .expect("the second server stops at start-up")
        .expect("its output");
    let said = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{said}");
    assert!(said.contains("another dynapage process"), "{said}");
    assert!(!said.contains("panicked"), "{said}");
    first.add("still the owner's").await;
    assert_eq!(first.bodies().await, ["still the owner's", "the owner's"]);
    first.stop().await;
    let again = Server::start(&dir, "022").await;
    assert_eq!(again.bodies().await, ["still the owner's", "the owner's"]);
    again.stop().await;
}

#[tokio::test]
async fn a_zero_length_database_is_refused_never_taken_for_a_new_store() {
    let work = tempfile::tempdir().expect("a directory");
    let dir = work.path().join("data");
    std::fs::create_dir(&dir).expect("mkdir");
    let database = dir.join("comments.sqlite3");
    std::fs::write(&database, b"").expect("a zero-length file");
    let out = work.path().join("out");
    for args in [
        vec![
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--demo-comments",
            "0",
            "--data-dir",
            text(&dir),
        ],
        vec!["backup", "--data-dir", text(&dir), "--out", text(&out)],
        vec!["export", "--data-dir", text(&dir), "--out", text(&out)],
        vec!["verify", "--data-dir", text(&dir)],
    ] {
        let (ok, said) = tokio::time::timeout(Duration::from_secs(30), run(&args))
            .await
            .expect("ends by itself");
        assert!(!ok, "{args:?}: {said}");
        assert!(said.contains("is empty (0 bytes)"), "{args:?}: {said}");
    }
    assert_eq!(
        std::fs::metadata(&database).expect("stat").len(),
        0,
        "left as it was"
    );

    // A creation interrupted before its rename leaves `comments.sqlite3.new`: replaced.
    let interrupted = work.path().join("interrupted");
    std::fs::create_dir(&interrupted).expect("mkdir");
    std::fs::write(interrupted.join("comments.sqlite3.new"), b"half").expect("write");
    let server = Server::start(&interrupted, "022").await;
    server.add("a new store").await;
    assert_eq!(server.bodies().await, ["a new store"]);
    server.stop().await;
    assert!(!interrupted.join("comments.sqlite3.new").exists());
}
