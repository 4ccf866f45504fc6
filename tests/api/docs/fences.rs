//! What the examples test makes of a document's fences: a plan of servers to start, requests
//! to send and commands to run, in the document's order. The convention (also in
//! `docs/contributing.md`):
//!
//! - `<!-- example: server -->` before a `sh` fence: the fence's first command starts the
//!   server the examples after it talk to (until the next such marker, which stops it first).
//! - A `graphql` fence followed at once by a `json` fence is a request and its answer: the
//!   request is POSTed to the current server and the answer compared token by token.
//!   `<!-- example: varies id createdAt -->` before the request names the keys whose values
//!   may differ (ids, times, cursors, budgets); they must still be there, of the same kind.
//! - `<!-- example: restart -->` before a `console` fence stops the current server (as Ctrl-C
//!   does) and starts its command again before the fence's commands run.
//! - A `console` fence holds commands (`$ `, continued by a trailing `\`) and their output,
//!   where `…` stands for any text on its line, and a last line `(exit N)` says the command
//!   fails with status N (else it must succeed). Each command runs in the document's own
//!   directory; `127.0.0.1:8080` is the current server.
//!
//! And so that no answer goes unchecked, a plan fails on anything else that looks like one: a
//! `json` fence holding a GraphQL response without its request, a transcript (`$ ` lines) in a
//! `sh` or bare fence, a fence of a language the test does not know, a marker no fence follows.

use super::markdown::{Block, Document, Fence, blocks};

/// The languages a fence may have, and what the test does with each.
const LANGUAGES: [&str; 7] = ["graphql", "json", "console", "sh", "js", "text", ""];

/// One step of a document's examples.
#[derive(Debug)]
pub enum Step {
    /// Stop the current server, if any, and start this command as the new one.
    Server { command: String, line: usize },
    /// Stop the current server and start its command again.
    Restart { line: usize },
    /// POST `query` and compare the answer with `answer`'s text.
    Request {
        query: String,
        answer: Fence,
        varies: Vec<String>,
        line: usize,
    },
    /// Run each command and compare its output.
    Console { commands: Vec<Command>, line: usize },
}

#[derive(Debug)]
pub struct Command {
    pub text: String,
    /// The output lines shown below it (`…` matches any text).
    pub output: Vec<String>,
    /// The exit status it must end with: 0, or what a last `(exit N)` line says.
    pub status: i32,
}

/// The first command of a shell fence: continuation lines joined, a trailing comment dropped.
pub fn first_command(text: &str) -> Option<String> {
    let mut command = String::new();
    for line in text.lines() {
        let line = without_comment(line);
        if command.is_empty() && line.trim().is_empty() {
            continue;
        }
        match line.trim_end().strip_suffix('\\') {
            Some(continued) => command.push_str(continued),
            None => {
                command.push_str(line.trim_end());
                return Some(command.trim().to_owned());
            }
        }
    }
    None
}

/// `line` without a `# comment` that follows whitespace outside quotes.
fn without_comment(line: &str) -> &str {
    let (mut single, mut double, mut previous) = (false, false, ' ');
    for (at, c) in line.char_indices() {
        match c {
            '\'' if !double => single = !single,
            '"' if !single => double = !double,
            '#' if !single && !double && previous.is_whitespace() => return &line[..at],
            _ => {}
        }
        previous = c;
    }
    line
}

/// The commands of a `console` fence and the output under each.
fn console_commands(fence: &Fence) -> Result<Vec<Command>, String> {
    let mut commands: Vec<Command> = Vec::new();
    let mut continued = false;
    for line in fence.text.lines() {
        if continued {
            let command = commands.last_mut().expect("a command continues");
            continued = line.ends_with('\\');
            command.text.push('\n');
            command.text.push_str(line);
        } else if let Some(text) = line.strip_prefix("$ ") {
            continued = text.ends_with('\\');
            commands.push(Command {
                text: text.to_owned(),
                output: Vec::new(),
                status: 0,
            });
        } else {
            let Some(command) = commands.last_mut() else {
                return Err("output before any `$ ` command".to_owned());
            };
            command.output.push(line.trim_end().to_owned());
        }
    }
    if commands.is_empty() {
        return Err("a console fence without a `$ ` command".to_owned());
    }
    for command in &mut commands {
        while command.output.last().is_some_and(String::is_empty) {
            command.output.pop();
        }
        let status = command.output.last().and_then(|last| {
            last.strip_prefix("(exit ")?
                .strip_suffix(')')?
                .parse::<i32>()
                .ok()
        });
        if let Some(status) = status {
            command.output.pop();
            command.status = status;
        }
    }
    Ok(commands)
}

/// A JSON text shaped like a GraphQL response: an object with `data` or `errors`.
fn looks_like_an_answer(text: &str) -> bool {
    serde_json::from_str::<serde_json::Value>(text).is_ok_and(|value| {
        value
            .as_object()
            .is_some_and(|object| object.contains_key("data") || object.contains_key("errors"))
    })
}

fn is_transcript(text: &str) -> bool {
    text.lines().any(|line| line.starts_with("$ "))
}

/// The steps of `document`'s examples, or every reason it has none that can run.
pub fn plan(document: &Document) -> Result<Vec<Step>, Vec<String>> {
    let blocks = blocks(document);
    let mut steps = Vec::new();
    let mut problems = Vec::new();
    let mut at = 0;
    while at < blocks.len() {
        let fence = match &blocks[at] {
            Block::Fence(fence) => fence,
            Block::StrayMarker { text, line } => {
                problems.push(format!(
                    "line {line}: `<!-- example: {text} -->` is not right before a fence"
                ));
                at += 1;
                continue;
            }
            Block::Other => {
                at += 1;
                continue;
            }
        };
        let line = fence.line;
        let marker = fence.marker.as_deref();
        let mut problem = |text: String| problems.push(format!("line {line}: {text}"));
        if !LANGUAGES.contains(&fence.lang.as_str()) {
            problem(format!(
                "a `{}` fence: the examples test knows {LANGUAGES:?}",
                fence.lang
            ));
        }
        let next_is_json =
            matches!(blocks.get(at + 1), Some(Block::Fence(next)) if next.lang == "json");
        match (fence.lang.as_str(), marker) {
            ("sh", Some("server")) => match first_command(&fence.text) {
                Some(command) => steps.push(Step::Server { command, line }),
                None => problem("a server marker before a fence without a command".to_owned()),
            },
            ("graphql", marker) if next_is_json => {
                let varies = match marker.map(|m| m.strip_prefix("varies")) {
                    None => Vec::new(),
                    Some(Some(keys)) => keys.split_whitespace().map(str::to_owned).collect(),
                    Some(None) => {
                        problem(format!("`{}` is not `varies KEY…`", marker.unwrap_or("")));
                        Vec::new()
                    }
                };
                let Some(Block::Fence(answer)) = blocks.get(at + 1) else {
                    unreachable!("the next block is a json fence")
                };
                steps.push(Step::Request {
                    query: fence.text.clone(),
                    answer: answer.clone(),
                    varies,
                    line,
                });
                at += 2;
                continue;
            }
            ("console", None | Some("restart")) => match console_commands(fence) {
                Ok(commands) => {
                    if marker.is_some() {
                        steps.push(Step::Restart { line });
                    }
                    steps.push(Step::Console { commands, line });
                }
                Err(text) => problem(text),
            },
            (_, Some(marker)) => problem(format!(
                "`<!-- example: {marker} -->` before a `{}` fence: `server` goes before a `sh` \
                 fence, `restart` before a `console` fence, `varies …` before a `graphql` request \
                 followed by its `json` answer",
                fence.lang
            )),
            ("json", None) if looks_like_an_answer(&fence.text) => problem(
                "a GraphQL answer without its request: put the `graphql` fence right before it"
                    .to_owned(),
            ),
            ("sh" | "text" | "", None) if is_transcript(&fence.text) => problem(
                "commands with `$ ` and their output belong in a `console` fence, which runs"
                    .to_owned(),
            ),
            _ => {}
        }
        at += 1;
    }
    if problems.is_empty() {
        Ok(steps)
    } else {
        Err(problems)
    }
}

#[test]
fn every_fence_of_the_readme_and_the_book_is_one_the_examples_test_knows() {
    let mut problems = Vec::new();
    let (mut requests, mut consoles, mut servers) = (0, 0, 0);
    for document in super::markdown::examples_documents() {
        match plan(&document) {
            Ok(steps) => {
                for step in steps {
                    match step {
                        Step::Server { .. } | Step::Restart { .. } => servers += 1,
                        Step::Request { .. } => requests += 1,
                        Step::Console { .. } => consoles += 1,
                    }
                }
            }
            Err(found) => problems.extend(
                found
                    .into_iter()
                    .map(|problem| format!("{}:{problem}", document.path)),
            ),
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    assert!(
        servers >= 5 && requests >= 10 && consoles >= 5,
        "{servers} servers, {requests} requests, {consoles} console fences"
    );
}

#[test]
fn an_answer_a_transcript_or_a_marker_the_test_cannot_run_fails_the_plan() {
    let plan_of = |text: &str| {
        plan(&Document {
            path: "x.md".to_owned(),
            text: text.to_owned(),
        })
    };
    let unrun = [
        "```json\n{\"data\": {\"x\": 1}}\n```\n",
        "```graphql\n{ x }\n```\n\nAnd the answer:\n\n```json\n{\"data\": null}\n```\n",
        "```sh\n$ dynapage token --sub a\neyJ…\n```\n",
        "```\n$ curl http://127.0.0.1:8080/healthz\nok\n```\n",
        "```bash\ncurl http://127.0.0.1:8080/healthz\n```\n",
        "<!-- example: server -->\n```console\n$ x\n```\n",
        "<!-- example: varies id -->\nSome text.\n\n```graphql\n{ x }\n```\n",
        "<!-- example: sometimes -->\n```graphql\n{ x }\n```\n\n```json\n{}\n```\n",
    ];
    for text in unrun {
        assert!(plan_of(text).is_err(), "{text}");
    }
    let Ok(steps) = plan_of(
        "<!-- example: server -->\n```sh\ncargo run --release -- serve \\\n  --demo-comments 10   # small\nscripts/test\n```\n\n<!-- example: varies id -->\n```graphql\n{ x }\n```\n\n```json\n{\"data\": null}\n```\n\n```console\n$ curl -s \\\n  http://127.0.0.1:8080/healthz\nok\n$ exit 3\n(exit 3)\n```\n\n```json\n{\"Version\": \"2012-10-17\"}\n```\n",
    ) else {
        panic!("a plan")
    };
    assert!(
        matches!(&steps[0], Step::Server { command, .. } if command == "cargo run --release -- serve   --demo-comments 10"),
        "{steps:?}"
    );
    assert!(matches!(&steps[1], Step::Request { varies, .. } if varies == &["id"]));
    let Step::Console { commands, .. } = &steps[2] else {
        panic!("{steps:?}")
    };
    assert_eq!(commands.len(), 2);
    assert_eq!(
        commands[0].text,
        "curl -s \\\n  http://127.0.0.1:8080/healthz"
    );
    assert_eq!(commands[0].output, ["ok"]);
    assert_eq!((commands[0].status, commands[1].status), (0, 3));
    assert_eq!(steps.len(), 3);
}
