//! The examples of README.md and the book, run: each document in a directory of its own, its
//! servers started from the commands it shows (`cargo run --release --` and `dynapage` are the
//! binary under test; `--listen` comes from `DYNAPAGE_LISTEN`, a free port), its requests
//! POSTed and its commands run, every answer and output compared with the text (`fences`
//! says how they are marked). A server that logs an ERROR line fails its document too: a
//! reader following the text must not meet one. `DOCS_BLESS=1` writes the answers served
//! into the `json` fences instead of failing on them (read the diff before committing it).

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

use super::fences::{Step, plan};
use super::json::{Json, differences};
use super::markdown::{Document, examples_documents};
use crate::helpers::process::terminate;

/// The address the text writes for the server it started.
const SHOWN_ADDRESS: &str = "127.0.0.1:8080";

/// A server started from a document's command.
struct Server {
    child: Child,
    address: String,
    log: Arc<Mutex<Vec<String>>>,
    line: usize,
}

/// `\x1b[…m` colour codes out of a log line.
fn plain(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// A document's directory, with `cargo` and `dynapage` on its `PATH` running the binary under
/// test.
struct Place {
    dir: tempfile::TempDir,
    bin: PathBuf,
}

impl Place {
    fn new() -> Self {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let bin = dir.path().join(".bin");
        std::fs::create_dir(&bin).expect("the bin directory");
        let cargo = "#!/bin/sh\n\
            # The docs say `cargo run --release -- ARGS`: here that is the binary under test.\n\
            [ \"$1\" = run ] && [ \"$2\" = --release ] || { echo \"the docs' examples run only 'cargo run --release'\" >&2; exit 2; }\n\
            shift 2; [ \"$1\" = -- ] && shift\n\
            exec \"$DYNAPAGE_BIN\" \"$@\"\n";
        write_executable(&bin.join("cargo"), cargo);
        write_executable(
            &bin.join("dynapage"),
            "#!/bin/sh\nexec \"$DYNAPAGE_BIN\" \"$@\"\n",
        );
        Self {
            dir,
            bin: bin.clone(),
        }
    }

    /// `bash -c script` in the document's directory, with only the environment the test
    /// gives it of dynapage's (no `DYNAPAGE_*` of the caller's, no `RUST_LOG`).
    fn bash(&self, script: &str) -> Command {
        let mut command = Command::new("bash");
        command.arg("-c").arg(script).current_dir(self.dir.path());
        for (key, _) in std::env::vars_os() {
            let key = key.to_string_lossy();
            if key.starts_with("DYNAPAGE_") || key == "RUST_LOG" {
                command.env_remove(&*key);
            }
        }
        let path = std::env::var("PATH").unwrap_or_default();
        command
            .env("PATH", format!("{}:{path}", self.bin.display()))
            .env("DYNAPAGE_BIN", env!("CARGO_BIN_EXE_dynapage"))
            // The examples talk to 127.0.0.1: never through a proxy the machine may name.
            .env("no_proxy", "127.0.0.1,localhost")
            .env("NO_PROXY", "127.0.0.1,localhost")
            .stdin(Stdio::null())
            .kill_on_drop(true);
        command
    }

    async fn start(&self, command: &str, line: usize) -> Result<Server, String> {
        let mut child = self
            .bash(&format!("exec {command}"))
            .env("DYNAPAGE_LISTEN", "127.0.0.1:0")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("line {line}: `{command}` did not start: {e}"))?;
        let log = Arc::new(Mutex::new(Vec::new()));
        let (found, mut listening) = tokio::sync::mpsc::unbounded_channel();
        let stdout = child.stdout.take().expect("piped");
        let stderr = child.stderr.take().expect("piped");
        for stream in [
            Box::new(stdout) as Box<dyn tokio::io::AsyncRead + Unpin + Send>,
            Box::new(stderr),
        ] {
            let (log, found) = (log.clone(), found.clone());
            tokio::spawn(async move {
                let mut lines = BufReader::new(stream).lines();
                while let Ok(Some(line)) = lines.next_line().await {
                    let line = plain(&line);
                    if let Some(rest) = line.split("listening address=").nth(1) {
                        let address = rest.split_whitespace().next().unwrap_or("").to_owned();
                        let _ = found.send(address);
                    }
                    log.lock().expect("the log").push(line);
                }
            });
        }
        drop(found);
        let address = tokio::time::timeout(Duration::from_secs(180), listening.recv())
            .await
            .ok()
            .flatten()
            .ok_or_else(|| {
                format!(
                    "line {line}: `{command}` did not say where it listens within 180 s:\n{}",
                    log.lock().expect("the log").join("\n")
                )
            })?;
        Ok(Server {
            child,
            address,
            log,
            line,
        })
    }
}

fn write_executable(path: &Path, text: &str) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, text).expect("a script written");
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755))
        .expect("made executable");
}

impl Server {
    /// Stops the server as a reader would (SIGTERM) and says what went wrong: an exit other
    /// than 0, or a log line at ERROR.
    async fn stop(mut self) -> Vec<String> {
        let mut problems = Vec::new();
        let status = terminate(&mut self.child, Duration::from_secs(20)).await;
        if !status.success() {
            problems.push(format!(
                "line {}: the server ended with {status}",
                self.line
            ));
        }
        let log = self.log.lock().expect("the log");
        problems.extend(
            log.iter()
                .filter(|line| line.split_whitespace().nth(1) == Some("ERROR"))
                .map(|line| format!("line {}: the server logged {line}", self.line)),
        );
        problems
    }
}

/// `actual` matches `shown`, where `…` in `shown` stands for any text.
fn line_matches(shown: &str, actual: &str) -> bool {
    let parts: Vec<&str> = shown.split('…').collect();
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if parts.len() == 1 {
        return shown == actual;
    }
    if !actual.starts_with(first) || actual.len() < first.len() + last.len() {
        return false;
    }
    let mut rest = &actual[first.len()..];
    for part in &parts[1..parts.len() - 1] {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    rest.ends_with(last)
}

/// A replacement of a `json` fence's text, for `DOCS_BLESS=1`.
struct Blessing {
    shown: String,
    served: String,
}

/// Runs the examples of one document; what went wrong, and the answers to bless.
async fn run(document: &Document) -> (Vec<String>, Vec<Blessing>) {
    let steps = match plan(document) {
        Ok(steps) => steps,
        Err(problems) => return (problems, Vec::new()),
    };
    let place = Place::new();
    let client = reqwest::Client::new();
    let mut server: Option<Server> = None;
    let mut last_command = String::new();
    let mut problems = Vec::new();
    let mut blessings = Vec::new();
    for step in steps {
        match step {
            Step::Server { command, line } => {
                if let Some(running) = server.take() {
                    problems.extend(running.stop().await);
                }
                match place.start(&command, line).await {
                    Ok(started) => server = Some(started),
                    Err(problem) => {
                        problems.push(problem);
                        break;
                    }
                }
                last_command = command;
            }
            Step::Restart { line } => {
                let Some(running) = server.take() else {
                    problems.push(format!("line {line}: a restart before any server"));
                    break;
                };
                problems.extend(running.stop().await);
                match place.start(&last_command, line).await {
                    Ok(started) => server = Some(started),
                    Err(problem) => {
                        problems.push(problem);
                        break;
                    }
                }
            }
            Step::Request {
                query,
                answer,
                varies,
                line,
            } => {
                let Some(running) = &server else {
                    problems.push(format!(
                        "line {line}: a request before any `<!-- example: server -->`"
                    ));
                    continue;
                };
                let body = client
                    .post(format!("http://{}/graphql", running.address))
                    .json(&serde_json::json!({ "query": query }))
                    .send()
                    .await
                    .expect("the request is sent")
                    .text()
                    .await
                    .expect("an answer");
                let served = match Json::parse(&body) {
                    Ok(served) => served,
                    Err(e) => {
                        problems.push(format!("line {line}: the answer is not JSON ({e}): {body}"));
                        continue;
                    }
                };
                let shown = match Json::parse(&answer.text) {
                    Ok(shown) => shown,
                    Err(e) => {
                        problems.push(format!(
                            "line {}: the shown answer is not JSON: {e}",
                            answer.line
                        ));
                        Json::Null
                    }
                };
                let found = differences(&shown, &served, &varies);
                if !found.is_empty() {
                    blessings.push(Blessing {
                        shown: answer.text.clone(),
                        served: served.pretty(0, 0, 100) + "\n",
                    });
                    problems.push(format!(
                        "line {}: the answer shown is not the answer served:\n  {}\nserved: {body}",
                        answer.line,
                        found.join("\n  ")
                    ));
                }
            }
            Step::Console { commands, line } => {
                for command in commands {
                    let address = server.as_ref().map(|s| s.address.clone());
                    let text = match &address {
                        Some(address) => command
                            .text
                            .replace(SHOWN_ADDRESS, address)
                            .replace("localhost:8080", address),
                        None => command.text.clone(),
                    };
                    let run = place.bash(&format!("exec 2>&1\n{text}")).output();
                    let output = match tokio::time::timeout(Duration::from_secs(120), run).await {
                        Ok(Ok(output)) => output,
                        Ok(Err(e)) => {
                            problems.push(format!("line {line}: `{text}` did not run: {e}"));
                            continue;
                        }
                        Err(_) => {
                            problems.push(format!("line {line}: `{text}` ran past 120 s"));
                            continue;
                        }
                    };
                    let mut printed = plain(&String::from_utf8_lossy(&output.stdout));
                    if let Some(address) = &address {
                        printed = printed.replace(address, SHOWN_ADDRESS);
                    }
                    let mut lines: Vec<&str> = printed.lines().map(str::trim_end).collect();
                    while lines.last().is_some_and(|l| l.is_empty()) {
                        lines.pop();
                    }
                    let matches = lines.len() == command.output.len()
                        && command
                            .output
                            .iter()
                            .zip(&lines)
                            .all(|(shown, actual)| line_matches(shown, actual));
                    if output.status.code() != Some(command.status) || !matches {
                        problems.push(format!(
                            "line {line}: `{}` ({}) printed:\n{}\nwhere the text shows:\n{}",
                            command.text,
                            output.status,
                            lines.join("\n"),
                            command.output.join("\n")
                        ));
                    }
                }
            }
        }
    }
    if let Some(running) = server.take() {
        problems.extend(running.stop().await);
    }
    (problems, blessings)
}

#[test]
fn a_shown_line_matches_with_any_text_for_an_ellipsis() {
    assert!(line_matches("ok", "ok"));
    assert!(!line_matches("ok", "ok "));
    assert!(line_matches("eyJ…", "eyJhbGciOiJFZERTQSJ9.x.y"));
    assert!(line_matches(
        r#"{"id":"Q29…","n":1}"#,
        r#"{"id":"Q29tbWVudA","n":1}"#
    ));
    assert!(!line_matches(
        r#"{"id":"Q29…","n":1}"#,
        r#"{"id":"Q29x","n":2}"#
    ));
    assert!(line_matches("a…b…c", "a1b2c"));
    assert!(!line_matches("a…a", "a"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn every_example_of_the_readme_and_the_book_answers_as_shown() {
    let documents = examples_documents();
    let runs = documents.into_iter().map(|document| {
        tokio::spawn(async move {
            let (problems, blessings) = run(&document).await;
            (document, problems, blessings)
        })
    });
    let mut failures = Vec::new();
    let bless = std::env::var_os("DOCS_BLESS").is_some();
    for finished in futures::future::join_all(runs).await {
        let (document, problems, blessings) = finished.expect("a document's run ends");
        if bless && !blessings.is_empty() {
            let mut text = document.text.clone();
            for blessing in &blessings {
                text = text.replacen(&blessing.shown, &blessing.served, 1);
            }
            let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(&document.path);
            std::fs::write(&path, text).expect("the blessed document is written");
        }
        failures.extend(
            problems
                .into_iter()
                .map(|problem| format!("{}:{problem}", document.path)),
        );
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
