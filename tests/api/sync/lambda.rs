//! `dynapage lambda-sync`, the real binary, under a Lambda Runtime API served by this test
//! (`GET /2018-06-01/runtime/invocation/next`, `POST .../{id}/response`, `.../{id}/error`,
//! `POST /2018-06-01/runtime/init/error`), fed with the records DynamoDB Local's stream holds
//! for real writes, in Lambda's JSON: in order, with duplicates and an older batch retried late,
//! and with records it cannot apply. The index must end equal to the table, and each answer
//! must name exactly the records Lambda retries. Redis settings that can never work fail the
//! function's init, reported to the Runtime API.

use std::collections::VecDeque;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use aws_sdk_dynamodbstreams::types::{AttributeValue, Record, ShardIteratorType};
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::routing::{get, post};
use dynapage::domain::{Access, CommentDraft, CommentPatch, Sku, Voter};
use dynapage::index::PageIndex;
use dynapage::store::CommentStore;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::support::backends::Backends;
use crate::support::dynamodb_local::{endpoint, streams_client};
use crate::support::fault_proxy::{Fault, FaultProxy};
use crate::support::redis_server::shared_url;
use crate::support::redis_tls::TlsRedis;

/// What the function answered for one invocation.
#[derive(Debug)]
enum Answer {
    Response(Value),
    Error(Value),
}

/// One invocation's request id and its answer.
type Answered = (String, Answer);

/// An init error the function reported: its error type header and its body.
type InitError = (String, Value);

#[derive(Clone)]
struct Runtime {
    pending: Arc<Mutex<VecDeque<(String, String)>>>,
    answers: mpsc::UnboundedSender<Answered>,
    init_errors: mpsc::UnboundedSender<InitError>,
}

/// A Lambda Runtime API on a free port: invocations are queued with [`RuntimeApi::invoke`],
/// the function's answers come back in order, its init errors in `init_errors`.
struct RuntimeApi {
    address: String,
    runtime: Runtime,
    answers: mpsc::UnboundedReceiver<Answered>,
    init_errors: mpsc::UnboundedReceiver<InitError>,
    invocations: u64,
}

impl RuntimeApi {
    async fn start() -> Self {
        let (sender, answers) = mpsc::unbounded_channel();
        let (init_sender, init_errors) = mpsc::unbounded_channel();
        let runtime = Runtime {
            pending: Arc::default(),
            answers: sender,
            init_errors: init_sender,
        };
        let app = axum::Router::new()
            .route("/2018-06-01/runtime/invocation/next", get(next))
            .route(
                "/2018-06-01/runtime/invocation/{id}/response",
                post(response),
            )
            .route("/2018-06-01/runtime/invocation/{id}/error", post(error))
            .route("/2018-06-01/runtime/init/error", post(init_error))
            .with_state(runtime.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let address = listener.local_addr().expect("address").to_string();
        tokio::spawn(async move { axum::serve(listener, app).await });
        Self {
            address,
            runtime,
            answers,
            init_errors,
            invocations: 0,
        }
    }

    /// Delivers one batch of records (Lambda's DynamoDB event) and waits for the answer.
    async fn invoke(&mut self, records: &[Value]) -> Answer {
        self.invocations += 1;
        let id = format!("request-{}", self.invocations);
        let event = json!({ "Records": records }).to_string();
        self.runtime
            .pending
            .lock()
            .expect("lock")
            .push_back((id.clone(), event));
        let (answered, answer) = tokio::time::timeout(Duration::from_secs(20), self.answers.recv())
            .await
            .expect("the function answers within 20 s")
            .expect("the runtime API is up");
        assert_eq!(answered, id, "answers come in invocation order");
        answer
    }
}

async fn next(State(runtime): State<Runtime>) -> (HeaderMap, String) {
    loop {
        if let Some((id, event)) = runtime.pending.lock().expect("lock").pop_front() {
            let mut headers = HeaderMap::new();
            let deadline = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .expect("clock")
                .as_millis()
                + 60_000;
            let header = |v: &str| v.parse().expect("header value");
            headers.insert("lambda-runtime-aws-request-id", header(&id));
            headers.insert("lambda-runtime-deadline-ms", header(&deadline.to_string()));
            headers.insert(
                "lambda-runtime-invoked-function-arn",
                header("arn:aws:lambda:us-east-1:123456789012:function:dynapage-sync"),
            );
            headers.insert(
                "lambda-runtime-trace-id",
                header("Root=1-00000000-000000000000000000000000"),
            );
            return (headers, event);
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

fn answered(runtime: &Runtime, id: String, answer: Answer) {
    // The receiver outlives every invocation the test waits for.
    let _ = runtime.answers.send((id, answer));
}

async fn response(
    State(runtime): State<Runtime>,
    Path(id): Path<String>,
    body: String,
) -> &'static str {
    let value = serde_json::from_str(&body).unwrap_or(Value::String(body));
    answered(&runtime, id, Answer::Response(value));
    "{}"
}

async fn error(
    State(runtime): State<Runtime>,
    Path(id): Path<String>,
    body: String,
) -> &'static str {
    let value = serde_json::from_str(&body).unwrap_or(Value::String(body));
    answered(&runtime, id, Answer::Error(value));
    "{}"
}

async fn init_error(
    State(runtime): State<Runtime>,
    headers: HeaderMap,
    body: String,
) -> (axum::http::StatusCode, &'static str) {
    let kind = headers
        .get("lambda-runtime-function-error-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let value = serde_json::from_str(&body).unwrap_or(Value::String(body));
    // The receiver outlives the function's init.
    let _ = runtime.init_errors.send((kind, value));
    (axum::http::StatusCode::ACCEPTED, r#"{"status":"OK"}"#)
}

/// Every record the table's stream holds, in order (one shard on DynamoDB Local).
async fn stream_records(table: &str) -> Vec<Record> {
    let url = endpoint().await;
    let tables = crate::support::dynamodb_local::sdk_client(&url);
    let arn = tables
        .describe_table()
        .table_name(table)
        .send()
        .await
        .expect("DescribeTable")
        .table
        .and_then(|t| t.latest_stream_arn)
        .expect("the table has a stream");
    let streams = streams_client(&url);
    let shards = streams
        .describe_stream()
        .stream_arn(&arn)
        .send()
        .await
        .expect("DescribeStream")
        .stream_description
        .and_then(|d| d.shards)
        .unwrap_or_default();
    let mut records = Vec::new();
    for shard in shards {
        let mut iterator = streams
            .get_shard_iterator()
            .stream_arn(&arn)
            .shard_id(shard.shard_id.unwrap_or_default())
            .shard_iterator_type(ShardIteratorType::TrimHorizon)
            .send()
            .await
            .expect("GetShardIterator")
            .shard_iterator;
        let mut empty = 0;
        while let Some(it) = iterator {
            let page = streams
                .get_records()
                .shard_iterator(it)
                .send()
                .await
                .expect("GetRecords");
            let got = page.records.unwrap_or_default();
            empty = if got.is_empty() { empty + 1 } else { 0 };
            records.extend(got);
            // An open shard never ends: two empty reads in a row mean it is caught up.
            iterator = if empty >= 2 {
                None
            } else {
                page.next_shard_iterator
            };
        }
    }
    records
}

/// A DynamoDB attribute in Lambda's JSON (`{"S": …}`, `{"N": …}`: all a comment item uses).
fn attribute(value: &AttributeValue) -> Value {
    match value {
        AttributeValue::S(s) => json!({ "S": s }),
        AttributeValue::N(n) => json!({ "N": n }),
        other => panic!("a comment item holds only strings and numbers, not {other:?}"),
    }
}

fn image(item: Option<&std::collections::HashMap<String, AttributeValue>>) -> Option<Value> {
    item.map(|item| {
        Value::Object(
            item.iter()
                .map(|(k, v)| (k.clone(), attribute(v)))
                .collect(),
        )
    })
}

/// A Streams API record as Lambda's DynamoDB event delivers it.
fn lambda_record(record: &Record) -> Value {
    let change = record.dynamodb.as_ref().expect("a stream record");
    let mut dynamodb = json!({
        "ApproximateCreationDateTime": 1_767_225_600.0,
        "Keys": image(change.keys.as_ref()),
        "SequenceNumber": change.sequence_number,
        "SizeBytes": change.size_bytes,
        "StreamViewType": "NEW_AND_OLD_IMAGES",
    });
    if let Some(new) = image(change.new_image.as_ref()) {
        dynamodb["NewImage"] = new;
    }
    if let Some(old) = image(change.old_image.as_ref()) {
        dynamodb["OldImage"] = old;
    }
    json!({
        "eventID": record.event_id,
        "eventName": record.event_name.as_ref().map(|n| n.as_str()),
        "eventVersion": "1.1",
        "eventSource": "aws:dynamodb",
        "awsRegion": "us-east-1",
        "eventSourceARN": "arn:aws:dynamodb:us-east-1:123456789012:table/comments/stream/2026-01-01T00:00:00.000",
        "dynamodb": dynamodb,
    })
}

fn failures(answer: &Answer) -> Vec<String> {
    let Answer::Response(body) = answer else {
        panic!("expected a response, got {answer:?}");
    };
    body["batchItemFailures"]
        .as_array()
        .unwrap_or_else(|| panic!("a partial batch response: {body}"))
        .iter()
        .map(|f| {
            f["itemIdentifier"]
                .as_str()
                .expect("an identifier")
                .to_owned()
        })
        .collect()
}

fn sequence(record: &Value) -> String {
    record["dynamodb"]["SequenceNumber"]
        .as_str()
        .expect("a sequence number")
        .to_owned()
}

/// `dynapage lambda-sync <flags>` under the runtime API at `api`.
fn function_command(api: &str, flags: &[String]) -> tokio::process::Command {
    let mut command = crate::helpers::process::dynapage_command("lambda-sync");
    command
        .args(flags)
        .env("AWS_LAMBDA_RUNTIME_API", api)
        .env("AWS_LAMBDA_FUNCTION_NAME", "dynapage-sync")
        .env("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "256")
        .env("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST");
    command
}

/// [`function_command`], started.
fn spawn_function(api: &str, flags: &[String]) -> tokio::process::Child {
    function_command(api, flags)
        .spawn()
        .expect("dynapage lambda-sync starts")
}

/// Writes through the store: creations, edits that move comments between ratings, deletions.
async fn write_some(backends: &Backends, sku: &str) {
    let mut ids = Vec::new();
    for n in 0..24_i64 {
        let comment = CommentDraft::new(sku, "lambda", "written for the stream", 1 + n % 5)
            .expect("a draft")
            .into_comment(1_767_225_600_000 + (n as u64 / 3) * 1_000);
        backends.store.create(&comment).await.expect("create");
        ids.push(comment.id);
    }
    for (n, id) in ids.iter().enumerate().take(12) {
        let patch = CommentPatch::new(None, Some(5 - n as i64 % 5)).expect("a patch");
        backends
            .store
            .update(*id, &patch, 1_767_225_700_000, &Access::Any)
            .await
            .expect("update");
    }
    for id in ids.iter().skip(18) {
        backends
            .store
            .delete(*id, &Access::Any)
            .await
            .expect("delete");
    }
}

#[tokio::test]
async fn batches_from_the_stream_with_duplicates_and_late_retries_leave_the_index_equal_to_the_table()
 {
    let backends = Backends::on(&shared_url()).await;
    write_some(&backends, "LAMBDA").await;
    let records: Vec<Value> = stream_records(backends.store.table())
        .await
        .iter()
        .map(lambda_record)
        .collect();
    assert_eq!(records.len(), 24 + 12 + 6, "every write is a stream record");
    let batches: Vec<&[Value]> = records.chunks(10).collect();

    let mut api = RuntimeApi::start().await;
    let mut function = spawn_function(&api.address, &backends.args);
    for batch in &batches {
        assert_eq!(failures(&api.invoke(batch).await), Vec::<String>::new());
    }
    // Lambda delivers at least once: the same batch again, and an older batch after newer
    // ones (a retry that lost a race). Neither may put an older state over a newer one.
    assert_eq!(
        failures(&api.invoke(batches[2]).await),
        Vec::<String>::new()
    );
    assert_eq!(
        failures(&api.invoke(batches[0]).await),
        Vec::<String>::new()
    );
    let mixed: Vec<Value> = batches[3].iter().chain(batches[1]).cloned().collect();
    assert_eq!(failures(&api.invoke(&mixed).await), Vec::<String>::new());
    backends
        .until_no_drift("after duplicates and late retries")
        .await;

    // A record that is not a comment: what comes before it is applied, and it is named, so
    // Lambda retries from it (and, past its retry limit, hands it to the on-failure destination).
    write_some(&backends, "LAMBDA").await;
    let fresh: Vec<Value> = stream_records(backends.store.table())
        .await
        .iter()
        .skip(records.len())
        .map(lambda_record)
        .collect();
    let mut poisoned = fresh[..8].to_vec();
    let mut broken = fresh[8].clone();
    broken["dynamodb"]["NewImage"]
        .as_object_mut()
        .expect("an insert has a new image")
        .remove("rating");
    poisoned.push(broken.clone());
    poisoned.extend_from_slice(&fresh[9..12]);
    assert_eq!(
        failures(&api.invoke(&poisoned).await),
        vec![sequence(&broken)]
    );
    let sku = Sku::parse("LAMBDA").expect("a sku");
    let held = backends.index.entries(&sku).await.expect("entries");
    for record in fresh[..8].iter().filter(|r| r["eventName"] == "INSERT") {
        let id = record["dynamodb"]["Keys"]["id"]["S"]
            .as_str()
            .expect("an id");
        assert!(
            held.iter().any(|e| e.key.id().to_string() == id),
            "the records before the broken one were applied: {id}"
        );
    }
    // Lambda then retries from the named record; here the rest arrives whole.
    for batch in fresh[8..].chunks(10) {
        assert_eq!(failures(&api.invoke(batch).await), Vec::<String>::new());
    }
    backends
        .until_no_drift("after the broken record was passed over")
        .await;

    // A failing record without a sequence number cannot be named: the invocation fails, and
    // Lambda retries the whole batch.
    let mut unnamed = broken.clone();
    unnamed["dynamodb"]
        .as_object_mut()
        .expect("an object")
        .remove("SequenceNumber");
    match api.invoke(&[unnamed]).await {
        Answer::Error(body) => assert!(body.to_string().contains("no sequence number"), "{body}"),
        other => panic!("expected an invocation error, got {other:?}"),
    }
    function.kill().await.expect("the function stops");
}

/// Helpful votes on the stream: each vote is two records, its vote item's `INSERT` (or
/// `REMOVE`) and its comment's `MODIFY`. The function passes over the first and applies the
/// second: no record is named as failed, and the index holds the comment at its last version.
#[tokio::test]
async fn a_vote_s_item_records_are_passed_over_and_its_comment_s_change_applied() {
    let backends = Backends::on(&shared_url()).await;
    let comment = CommentDraft::new("LAMBDA_VOTES", "lambda", "vote for me", 4)
        .expect("a draft")
        .into_comment(1_767_225_600_000);
    backends.store.create(&comment).await.expect("create");
    for (voter, helpful) in [("a", true), ("b", true), ("c", true), ("a", false)] {
        backends
            .store
            .mark_helpful(
                comment.id,
                &Voter::signed_in(voter),
                helpful,
                1_767_225_700_000,
            )
            .await
            .expect("a vote");
    }
    let records: Vec<Value> = stream_records(backends.store.table())
        .await
        .iter()
        .map(lambda_record)
        .collect();
    let votes = records
        .iter()
        .filter(|r| {
            r["dynamodb"]["Keys"]["id"]["S"]
                .as_str()
                .is_some_and(|id| id.starts_with("vote#"))
        })
        .count();
    assert_eq!(
        (records.len(), votes),
        (1 + 4 + 4, 4),
        "the comment's and the votes' records"
    );

    let mut api = RuntimeApi::start().await;
    let mut function = spawn_function(&api.address, &backends.args);
    assert_eq!(failures(&api.invoke(&records).await), Vec::<String>::new());
    backends.until_no_drift("after the votes' records").await;
    let sku = Sku::parse("LAMBDA_VOTES").expect("a sku");
    let held = backends.index.entries(&sku).await.expect("entries");
    assert_eq!(held.len(), 1);
    assert_eq!(
        held[0].version,
        1 + 4,
        "every vote's version, and no vote item as a comment"
    );
    function.kill().await.expect("the function stops");
}

#[tokio::test]
async fn a_batch_the_index_cannot_take_is_named_from_its_first_record_and_applies_when_retried() {
    let backends = Backends::on(&shared_url()).await;
    write_some(&backends, "LAMBDA_DOWN").await;
    let records: Vec<Value> = stream_records(backends.store.table())
        .await
        .iter()
        .map(lambda_record)
        .collect();

    let redis: std::net::SocketAddr = shared_url()
        .trim_start_matches("redis://")
        .parse()
        .expect("a host:port Redis URL");
    let proxy = FaultProxy::start(redis).await;
    let flags = backends.args_with_redis_url(&format!("redis://{}", proxy.address));

    let mut api = RuntimeApi::start().await;
    let mut function = spawn_function(&api.address, &flags);
    assert_eq!(
        failures(&api.invoke(&records[..10]).await),
        Vec::<String>::new()
    );
    proxy.set(Fault::Refuse);
    assert_eq!(
        failures(&api.invoke(&records[10..]).await),
        vec![sequence(&records[10])],
        "the whole batch is retried from its first record"
    );
    proxy.set(Fault::None);
    let retried = tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            let answer = api.invoke(&records[10..]).await;
            if failures(&answer).is_empty() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    })
    .await;
    assert!(
        retried.is_ok(),
        "the retried batch applies once the index is back"
    );
    backends.until_no_drift("after the retry").await;
    function.kill().await.expect("the function stops");
}

/// The start-up check of the other commands (`startup::open_redis`): plaintext to a port that
/// only speaks TLS, or a password Redis refuses, fails the function's init. Lambda hears why at
/// `/runtime/init/error`, and the process exits non-zero with the same message on stderr.
#[tokio::test]
async fn redis_settings_that_can_never_work_fail_the_init_and_are_reported_to_the_runtime_api() {
    let tls = TlsRedis::start();
    let wrong_password = shared_url().replace("redis://", "redis://nobody:wrong@");
    for (url, said) in [
        (tls.plaintext_url(), "rediss://"),
        (wrong_password, "user:password@"),
    ] {
        let mut api = RuntimeApi::start().await;
        let flags = ["--index", "redis", "--redis-url", &url].map(str::to_owned);
        let output = tokio::time::timeout(
            Duration::from_secs(30),
            function_command(&api.address, &flags)
                .stderr(Stdio::piped())
                .output(),
        )
        .await
        .expect("the function gives up its init instead of waiting for events")
        .expect("its output");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_ne!(output.status.code(), Some(0), "{stderr}");
        assert!(
            stderr.contains("--redis-url / DYNAPAGE_REDIS_URL") && stderr.contains(said),
            "{stderr}"
        );

        let (kind, body) = api
            .init_errors
            .try_recv()
            .expect("an init error was reported");
        assert_eq!(kind, "Runtime.InitError");
        assert_eq!(body["errorType"], "Runtime.InitError");
        let message = body["errorMessage"].as_str().expect("a message");
        assert!(
            message.contains("Redis refused these settings") && message.contains(said),
            "{message}"
        );
    }
}

/// `deploy/template.yaml` (AWS SAM) cannot be deployed here, so it is held to what the
/// function needs: the event source mapping that `apply_lambda_batch` is written for, settings
/// the binary reads, a bootstrap that runs `lambda-sync`, and a role with only the actions used.
#[test]
fn the_sam_template_maps_the_stream_as_the_function_expects_with_only_the_actions_it_uses() {
    use crate::helpers::repo::{known_env_vars, repo_file};
    use serde_yaml_ng::Value as Yaml;

    let template: Yaml = serde_yaml_ng::from_str(&repo_file("deploy/template.yaml"))
        .expect("deploy/template.yaml is valid YAML");
    let resources = &template["Resources"];
    let function = &resources["SyncFunction"];
    assert_eq!(function["Type"].as_str(), Some("AWS::Serverless::Function"));
    let properties = &function["Properties"];
    assert_eq!(properties["Handler"].as_str(), Some("bootstrap"));
    assert_eq!(properties["Runtime"].as_str(), Some("provided.al2023"));

    let bootstrap = repo_file("deploy/lambda/bootstrap");
    let exec = bootstrap
        .lines()
        .find(|l| l.starts_with("exec "))
        .expect("the bootstrap execs the binary");
    assert!(exec.ends_with("/dynapage\" lambda-sync"), "{exec}");
    use clap::CommandFactory;
    assert!(
        dynapage::cli::Cli::command()
            .get_subcommands()
            .any(|c| c.get_name() == "lambda-sync"),
        "the binary has the command the bootstrap runs"
    );

    let known = known_env_vars();
    let variables = properties["Environment"]["Variables"]
        .as_mapping()
        .expect("environment variables");
    for name in variables.keys().filter_map(Yaml::as_str) {
        assert!(
            name == "RUST_LOG" || known.contains(name),
            "{name} is not a variable the binary reads"
        );
    }
    assert_eq!(
        variables.get("DYNAPAGE_INDEX").and_then(Yaml::as_str),
        Some("redis")
    );

    let stream = &properties["Events"]["Stream"];
    assert_eq!(stream["Type"].as_str(), Some("DynamoDB"));
    let mapping = &stream["Properties"];
    assert_eq!(
        mapping["FunctionResponseTypes"],
        serde_yaml_ng::from_str::<Yaml>("[ReportBatchItemFailures]").expect("yaml"),
        "the function answers partial batch responses; without this Lambda ignores them"
    );
    assert_eq!(mapping["BisectBatchOnFunctionError"].as_bool(), Some(true));
    assert!(
        mapping["MaximumRetryAttempts"]
            .as_u64()
            .is_some_and(|n| n > 0)
    );
    assert_eq!(mapping["StartingPosition"].as_str(), Some("TRIM_HORIZON"));
    assert_eq!(mapping["ParallelizationFactor"].as_u64(), Some(1));
    let on_failure = &mapping["DestinationConfig"]["OnFailure"];
    assert_eq!(on_failure["Type"].as_str(), Some("SQS"));
    assert!(
        matches!(on_failure["Destination"], Yaml::Tagged(_)),
        "a reference to the queue"
    );
    assert_eq!(
        resources["FailedRecords"]["Type"].as_str(),
        Some("AWS::SQS::Queue")
    );

    // The function's own role (so SAM adds no managed policy), and exactly these actions.
    assert!(
        matches!(properties["Role"], Yaml::Tagged(_)),
        "an explicit role"
    );
    assert_eq!(
        crate::helpers::repo::sync_role_actions(),
        [
            "dynamodb:DescribeStream",
            "dynamodb:GetRecords",
            "dynamodb:GetShardIterator",
            "dynamodb:ListStreams",
            "ec2:AssignPrivateIpAddresses",
            "ec2:CreateNetworkInterface",
            "ec2:DeleteNetworkInterface",
            "ec2:DescribeNetworkInterfaces",
            "ec2:UnassignPrivateIpAddresses",
            "logs:CreateLogGroup",
            "logs:CreateLogStream",
            "logs:PutLogEvents",
            "sqs:SendMessage",
        ]
    );
}
