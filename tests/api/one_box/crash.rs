//! The crash test of the durable embedded store: a real server process on a data directory,
//! writers adding, editing and deleting at full speed, and `SIGKILL` at random moments. After
//! each kill, `dynapage verify --data-dir` must be clean, and the restarted server must hold
//! every acknowledged change and nothing half-written: each comment is in a state some request
//! asked for, the acknowledged one unless a request for it was in flight at the kill.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};

use crate::helpers::RATE_LIMITS_OFF;
use crate::helpers::process::{ServerProcess, dynapage_command};

const SKU: &str = "CRASH";
const KILLS: usize = 20;
const WRITERS: usize = 8;
const ADD: &str = "mutation($sku: String!, $body: String!, $rating: Int!) { addComment(input: { sku: $sku, author: \"crash\", body: $body, rating: $rating }) { comment { id } } }";
const EDIT: &str = "mutation($id: ID!, $body: String!, $rating: Int!) { updateComment(input: { id: $id, body: $body, rating: $rating }) { comment { id } } }";
const DELETE: &str =
    "mutation($id: ID!) { deleteComment(input: { id: $id }) { deletedCommentId } }";
const PAGE: &str = "query($sku: String!, $after: String) { comments(sku: $sku, first: 100, after: $after) { totalCount pageInfo { hasNextPage endCursor } nodes { id body rating } } }";

/// A comment's content, or `None` for a deleted one.
type State = Option<(String, i64)>;

/// What the writers were told, and what they asked without an answer.
#[derive(Default)]
struct Model {
    /// Every comment id ever acknowledged, with the states it may be in: one after an
    /// acknowledged write, two while a write of it was in flight at the kill.
    comments: HashMap<String, Vec<State>>,
    /// Adds sent without an answer: their comment may exist under an id nobody learned.
    unanswered_adds: Vec<(String, i64)>,
}

/// `serve --data-dir` on `dir`, rate limits off, the rest as users start it.
async fn start(dir: &std::path::Path) -> ServerProcess {
    let data_dir = ["--data-dir", dir.to_str().expect("UTF-8")];
    ServerProcess::start(&[&["--demo-comments", "0"][..], &RATE_LIMITS_OFF, &data_dir].concat())
        .await
}

async fn call(client: &reqwest::Client, url: &str, query: &str, variables: Value) -> Option<Value> {
    let response = client
        .post(format!("{url}/graphql"))
        .json(&json!({ "query": query, "variables": variables }))
        .send()
        .await
        .ok()?;
    let body: Value = response.json().await.ok()?;
    body.get("errors").is_none().then(|| body["data"].clone())
}

/// One writer: adds, edits and deletes its own comments until a request fails (the kill).
async fn writer(url: String, model: Arc<Mutex<Model>>, seed: u64) {
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(5))
        .build()
        .expect("a client");
    let mut rng = seed;
    let mut mine: Vec<(String, State)> = Vec::new();
    for step in 0u64.. {
        rng = rng
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        let body = format!("w{seed}-s{step}-{rng:x}");
        let rating = (rng >> 33) as i64 % 5 + 1;
        let choice = (rng >> 40) % 10;
        if choice < 5 || mine.is_empty() {
            let answer = call(
                &client,
                &url,
                ADD,
                json!({ "sku": SKU, "body": body, "rating": rating }),
            )
            .await;
            let mut model = model.lock().expect("model");
            let Some(data) = answer else {
                model.unanswered_adds.push((body, rating));
                return;
            };
            let id = data["addComment"]["comment"]["id"]
                .as_str()
                .expect("id")
                .to_owned();
            let state = Some((body, rating));
            model.comments.insert(id.clone(), vec![state.clone()]);
            mine.push((id, state));
        } else {
            let at = (rng >> 20) as usize % mine.len();
            let (id, old) = mine[at].clone();
            let (query, variables, new) = if choice < 8 {
                (
                    EDIT,
                    json!({ "id": id, "body": body, "rating": rating }),
                    Some((body, rating)),
                )
            } else {
                (DELETE, json!({ "id": id }), None)
            };
            let answered = call(&client, &url, query, variables).await.is_some();
            let mut model = model.lock().expect("model");
            if !answered {
                model.comments.insert(id, vec![old, new]);
                return;
            }
            model.comments.insert(id, vec![new.clone()]);
            if new.is_none() {
                mine.swap_remove(at);
            } else {
                mine[at].1 = new;
            }
        }
    }
}

/// Every comment of [`SKU`] the server holds, and its `totalCount`.
async fn read_all(url: &str) -> (HashMap<String, (String, i64)>, u64) {
    let client = reqwest::Client::new();
    let (mut all, mut after, mut total) = (HashMap::new(), Value::Null, 0);
    loop {
        let data = call(&client, url, PAGE, json!({ "sku": SKU, "after": after }))
            .await
            .expect("a page");
        let connection = &data["comments"];
        total = connection["totalCount"].as_u64().unwrap_or(total);
        for node in connection["nodes"].as_array().expect("nodes") {
            let state = (
                node["body"].as_str().expect("body").to_owned(),
                node["rating"].as_i64().expect("rating"),
            );
            all.insert(node["id"].as_str().expect("id").to_owned(), state);
        }
        if connection["pageInfo"]["hasNextPage"] != json!(true) {
            return (all, total);
        }
        after = connection["pageInfo"]["endCursor"].clone();
    }
}

/// Checks the server against the model and settles every doubt to what the server holds.
fn check(model: &mut Model, held: &HashMap<String, (String, i64)>, total: u64, kill: usize) {
    for (id, states) in &mut model.comments {
        let found: State = held.get(id).cloned();
        assert!(
            states.contains(&found),
            "kill {kill}: comment {id} is {found:?}, expected one of {states:?}"
        );
        *states = vec![found];
    }
    let unanswered = std::mem::take(&mut model.unanswered_adds);
    for (id, state) in held {
        if !model.comments.contains_key(id) {
            assert!(
                unanswered.contains(state),
                "kill {kill}: comment {id} ({state:?}) was never asked for"
            );
            model.comments.insert(id.clone(), vec![Some(state.clone())]);
        }
    }
    assert_eq!(
        total,
        held.len() as u64,
        "kill {kill}: totalCount agrees with the comments"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_acknowledged_write_survives_sigkill_at_random_moments() {
    let dir = tempfile::tempdir().expect("a data directory");
    let model = Arc::new(Mutex::new(Model::default()));
    let mut rng = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("time")
        .as_nanos() as u64;
    eprintln!("crash test seed {rng}");
    for kill in 0..KILLS {
        let mut server = start(dir.path()).await;
        let (held, total) = read_all(&server.address).await;
        check(&mut model.lock().expect("model"), &held, total, kill);
        let writers: Vec<_> = (0..WRITERS)
            .map(|w| {
                tokio::spawn(writer(
                    server.address.clone(),
                    model.clone(),
                    (kill * WRITERS + w) as u64 ^ rng,
                ))
            })
            .collect();
        rng = rng.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
        tokio::time::sleep(Duration::from_millis(100 + (rng >> 33) % 700)).await;
        server.child.start_kill().expect("SIGKILL");
        server.child.wait().await.expect("the server is gone");
        for writer in writers {
            writer
                .await
                .expect("the writer ends on its first failed request");
        }
        let verify = dynapage_command("verify")
            .args(["--data-dir", dir.path().to_str().expect("UTF-8")])
            .status()
            .await
            .expect("verify runs");
        assert!(verify.success(), "kill {kill}: verify --data-dir is clean");
    }
    let server = start(dir.path()).await;
    let (held, total) = read_all(&server.address).await;
    let mut model = model.lock().expect("model");
    check(&mut model, &held, total, KILLS);
    assert!(
        model.comments.len() > 100,
        "the writers wrote: {}",
        model.comments.len()
    );
    eprintln!(
        "crash test: {} comments written, {} held",
        model.comments.len(),
        held.len()
    );
}
