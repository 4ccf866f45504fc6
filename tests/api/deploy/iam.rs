//! The IAM table and policy (`docs/operations/iam.md`) held to what the code calls: every row's command run
//! through a proxy in front of DynamoDB Local that notes the action of each request (its
//! `X-Amz-Target`), the policy against the table, the `lambda-sync` row against the role in
//! `deploy/template.yaml`, and the SDK operations `src/store/dynamo` calls against them all.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use aws_sdk_dynamodb::types::AttributeValue;
use dynapage::domain::{ChangeEvent, IndexEntry};
use dynapage::index::PageIndex;
use dynapage::store::CommentStore;
use serde_json::{Value, json};

use crate::helpers::process::terminate;
use crate::helpers::process::{exit_code, stdout};
use crate::helpers::repo::repo_file;
use crate::helpers::{DELETE_COMMENT, EDIT_COMMENT, TestApp};
use crate::support::backends::Backends;
use crate::support::data::generated;
use crate::support::dynamodb_local::{endpoint, sdk_client};
use crate::support::fault_proxy::FaultProxy;
use crate::support::redis_server::shared_url;

type Actions = BTreeSet<String>;

/// The actions of DynamoDB Streams; they are granted on the stream, `/stream/*`.
const STREAM_ACTIONS: [&str; 4] = [
    "dynamodb:DescribeStream",
    "dynamodb:GetShardIterator",
    "dynamodb:GetRecords",
    "dynamodb:ListStreams",
];

fn between<'a>(text: &'a str, start: &str, end: &str) -> &'a str {
    let from = text
        .find(start)
        .unwrap_or_else(|| panic!("no `{start}` in docs/operations/iam.md"))
        + start.len();
    let to = text[from..]
        .find(end)
        .unwrap_or_else(|| panic!("no `{end}` after `{start}`"));
    &text[from..from + to]
}

/// The rows of the `iam-actions` table: a command and its actions, where a quoted
/// earlier command (`` `serve`'s ``) stands for that row's actions.
fn documented_rows() -> Vec<(String, Actions)> {
    let page = repo_file("docs/operations/iam.md");
    let table = between(&page, "<!-- iam-actions -->", "<!-- /iam-actions -->");
    let mut rows: Vec<(String, Actions)> = Vec::new();
    for line in table.lines().filter(|l| l.starts_with("| `")) {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        let command = cells[1].trim_matches('`').to_owned();
        let mut actions = Actions::new();
        for quoted in cells[2].split('`').skip(1).step_by(2) {
            if quoted.starts_with("dynamodb:") {
                actions.insert(quoted.to_owned());
                continue;
            }
            let (_, earlier) = rows.iter().find(|(c, _)| c == quoted).unwrap_or_else(|| {
                panic!("`{quoted}` in the row of `{command}` is no earlier row")
            });
            actions.extend(earlier.iter().cloned());
        }
        rows.push((command, actions));
    }
    assert!(rows.len() >= 8, "the table's rows: {rows:?}");
    rows
}

/// The `iam-policy` JSON.
fn documented_policy() -> Value {
    let page = repo_file("docs/operations/iam.md");
    let block = between(&page, "<!-- iam-policy -->", "<!-- /iam-policy -->");
    serde_json::from_str(between(block, "```json", "```")).expect("the policy is JSON")
}

/// `DynamoDB_20120810.Query` and `DynamoDBStreams_20120810.GetRecords` as IAM names:
/// `dynamodb:Query`, `dynamodb:GetRecords` (both services' actions are `dynamodb:`).
fn actions_of(targets: Vec<String>) -> Actions {
    targets
        .iter()
        .map(|t| {
            let (_, operation) = t.split_once('.').expect("Service_version.Operation");
            format!("dynamodb:{operation}")
        })
        .collect()
}

/// `batch_get_item` as an IAM action: `dynamodb:BatchGetItem`.
fn action_of_method(method: &str) -> String {
    let pascal: String = method
        .split('_')
        .map(|word| {
            let mut chars = word.chars();
            chars
                .next()
                .map(|first| first.to_ascii_uppercase().to_string() + chars.as_str())
                .unwrap_or_default()
        })
        .collect();
    format!("dynamodb:{pascal}")
}

/// The operations the DynamoDB adapter calls: every `client.<operation>()` (spaces and line
/// breaks allowed around the dot) in `src/store/dynamo.rs` and `src/store/dynamo/`, the only
/// place that talks to the SDK. `client.clone()` hands the client to a task and is no call.
fn operations_in_the_adapter() -> Actions {
    let root = env!("CARGO_MANIFEST_DIR");
    let mut files = vec![format!("{root}/src/store/dynamo.rs")];
    // Every file under the adapter's directory, its subdirectories (`item/`) included.
    let mut dirs = vec![std::path::PathBuf::from(format!("{root}/src/store/dynamo"))];
    while let Some(dir) = dirs.pop() {
        let entries = std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        for entry in entries {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                dirs.push(path);
            } else {
                files.push(path.display().to_string());
            }
        }
    }
    let mut actions = Actions::new();
    for file in files {
        let source = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{file}: {e}"));
        for (at, _) in source.match_indices("client") {
            let rest = source[at + "client".len()..].trim_start();
            let Some(rest) = rest.strip_prefix('.') else {
                continue;
            };
            let rest = rest.trim_start();
            let name_len = rest
                .find(|c: char| !(c.is_ascii_lowercase() || c == '_'))
                .unwrap_or(rest.len());
            let (name, after) = rest.split_at(name_len);
            if !name.is_empty() && name != "clone" && after.starts_with("()") {
                actions.insert(action_of_method(name));
            }
        }
    }
    actions
}

#[test]
fn the_documented_policy_grants_the_table_s_actions_each_on_its_resource_and_nothing_more() {
    let rows = documented_rows();
    let listed: Actions = rows.iter().flat_map(|(_, a)| a.iter().cloned()).collect();

    let policy = documented_policy();
    assert_eq!(policy["Version"], "2012-10-17");
    let mut granted = Actions::new();
    for statement in policy["Statement"].as_array().expect("statements") {
        assert_eq!(statement["Effect"], "Allow", "{statement}");
        let resource = statement["Resource"].as_str().expect("one resource");
        for action in statement["Action"].as_array().expect("actions") {
            let action = action.as_str().expect("an action").to_owned();
            let wanted = if action == "dynamodb:Query" {
                ":table/comments/index/*"
            } else if STREAM_ACTIONS.contains(&action.as_str()) {
                ":table/comments/stream/*"
            } else {
                ":table/comments"
            };
            assert!(
                resource.starts_with("arn:aws:dynamodb:REGION:ACCOUNT")
                    && resource.ends_with(wanted),
                "{action} belongs on `…{wanted}`, not on `{resource}`"
            );
            assert!(granted.insert(action), "granted twice: {statement}");
        }
    }
    assert_eq!(granted, listed, "the policy grants what the table lists");

    // The function calls no DynamoDB action; its row is what Lambda needs of its role.
    let (_, lambda) = rows
        .iter()
        .find(|(c, _)| c == "lambda-sync")
        .expect("a lambda-sync row");
    let role: Actions = crate::helpers::repo::sync_role_actions()
        .into_iter()
        .filter(|a| a.starts_with("dynamodb:"))
        .collect();
    assert_eq!(
        lambda, &role,
        "the lambda-sync row and deploy/template.yaml"
    );

    // What the adapter can call is what the table lists, but for `ListStreams` (Lambda's
    // event source mapping calls it, not this code) and `DeleteTable` (the tests' teardown,
    // `DynamoStore::delete_table`: the runs of every command show that none calls it).
    let mut expected = listed;
    expected.remove("dynamodb:ListStreams");
    expected.insert("dynamodb:DeleteTable".to_owned());
    assert_eq!(operations_in_the_adapter(), expected);
}

/// Runs everything a server offers that reads or writes the table: a mutation of each kind,
/// a page with `totalCount` and the viewer's votes, `nodes`, and `/readyz`.
async fn use_every_feature(app: &TestApp, sku: &str) {
    let id = app.add_comment(None, sku, "checked", 4).await;
    let voted = app
        .data(
            "mutation($id: ID!) { markHelpful(input: { commentId: $id }) { comment { helpfulCount } } }",
            json!({ "id": id }),
        )
        .await;
    assert_eq!(
        voted["markHelpful"]["comment"]["helpfulCount"], 1,
        "{voted}"
    );
    let page = app
        .data(
            "query($sku: String!) { comments(sku: $sku, first: 5) { totalCount edges { node { id viewerFoundHelpful } } } }",
            json!({ "sku": sku }),
        )
        .await;
    assert!(page["comments"]["totalCount"].as_i64().is_some(), "{page}");
    let nodes = app
        .data(
            "query($ids: [ID!]!) { nodes(ids: $ids) { id } }",
            json!({ "ids": [id] }),
        )
        .await;
    assert_eq!(nodes["nodes"][0]["id"], id);
    app.data(EDIT_COMMENT, json!({ "id": id, "rating": 2 }))
        .await;
    app.data(DELETE_COMMENT, json!({ "id": id })).await;
    let ready = app
        .client
        .get(format!("{}/readyz", app.address))
        .send()
        .await
        .expect("GET /readyz");
    assert!(ready.status().is_success(), "{ready:?}");
}

/// What went through `proxy` since it was last asked, once it includes `awaited` (the stream
/// consumer reads on its own schedule), or at once when `awaited` is `None`.
async fn called(proxy: &FaultProxy, awaited: Option<&str>) -> Actions {
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut seen = actions_of(proxy.take_targets());
    while let Some(action) = awaited.filter(|a| !seen.contains(*a)) {
        assert!(
            Instant::now() < deadline,
            "{action} was not called within 20 s: {seen:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
        seen.extend(actions_of(proxy.take_targets()));
    }
    seen
}

/// Serves with `args`, uses every feature, and returns what the server called through `proxy`
/// (waiting for `awaited`, as [`called`]).
async fn serve_and_use(proxy: &FaultProxy, args: &[String], awaited: Option<&str>) -> Actions {
    let argv: Vec<&str> = args.iter().map(String::as_str).collect();
    let app = TestApp::spawn(&argv).await;
    use_every_feature(&app, "IAM").await;
    let mut seen = called(proxy, awaited).await;
    app.stop().await.expect("the server stops");
    // A stream read still in flight when the server stopped belongs to it too.
    seen.extend(actions_of(proxy.take_targets()));
    seen
}

#[tokio::test]
async fn every_command_calls_exactly_the_dynamodb_actions_its_documented_row_lists() {
    let rows: BTreeMap<String, Actions> = documented_rows().into_iter().collect();
    let mut backends = Backends::on(&shared_url()).await;
    let upstream = endpoint().await;
    let upstream = tokio::net::lookup_host(upstream.trim_start_matches("http://"))
        .await
        .expect("DynamoDB's address")
        .next()
        .expect("an address");
    let proxy = FaultProxy::start(upstream).await;
    backends.args = backends.args_with("--dynamodb-endpoint", &format!("http://{}", proxy.address));
    let mut seen: BTreeMap<String, Actions> = BTreeMap::new();

    let seeded = backends
        .run("seed", &["--sku", "IAM", "--count", "60"])
        .await;
    assert_eq!(exit_code(&seeded), Some(0), "{seeded:?}");
    seen.insert("seed".into(), called(&proxy, None).await);

    // A comment the index holds and the table does not: reindex reads it again.
    let ghost = generated("IAM", 99, 1).remove(0);
    let ghost = ChangeEvent::Upsert {
        old: None,
        new: IndexEntry::from(&ghost),
    };
    backends.index.apply(&[ghost]).await.expect("apply");
    // A comment as a release before the indexes by helpful votes wrote it: reindex places it.
    let seeded = backends.store.scan(0, 1, None).await.expect("a scan");
    let unranked = seeded.items.first().expect("a seeded comment").id;
    sdk_client(&endpoint().await)
        .update_item()
        .table_name(backends.store.table())
        .key("id", AttributeValue::S(unranked.to_string()))
        .update_expression("REMOVE helpfulRank")
        .send()
        .await
        .expect("the rank removed");
    let rebuilt = backends.run("reindex", &[]).await;
    assert_eq!(exit_code(&rebuilt), Some(0), "{rebuilt:?}");
    assert!(
        stdout(&rebuilt).contains("read again: 1 removed"),
        "{}",
        stdout(&rebuilt)
    );
    assert!(
        stdout(&rebuilt).contains("1 comments placed in the table's list by helpful votes"),
        "{}",
        stdout(&rebuilt)
    );
    seen.insert("reindex".into(), called(&proxy, None).await);

    // A moderation log entry, so the export carries one and the import writes it.
    let logged = backends.store.scan(0, 1, None).await.expect("a scan");
    let about = logged.items.first().expect("a seeded comment");
    let entry = dynapage::domain::LogEntry {
        id: dynapage::domain::EntryId::new(about.created_at_ms + 1),
        comment: about.id,
        sku: about.sku.clone(),
        actor: "auth0|carol".to_owned(),
        action: dynapage::domain::LogAction::Reply,
        previous: dynapage::domain::CommentStatus::Published,
        status: dynapage::domain::CommentStatus::Published,
        reason: None,
        note: Some("Thanks!".to_owned()),
        at_ms: about.created_at_ms + 1,
    };
    backends.store.put_log(&[entry]).await.expect("a log entry");
    let file = tempfile::tempdir().expect("a temporary directory");
    let file = file.path().join("comments.jsonl");
    let file = file.to_str().expect("a UTF-8 path");
    let exported = backends.run("export", &["--out", file]).await;
    assert_eq!(exit_code(&exported), Some(0), "{exported:?}");
    seen.insert("export".into(), called(&proxy, None).await);
    // One exported comment gone from the table, so the import has something to write.
    let page = backends.store.scan(0, 1, None).await.expect("a scan");
    let gone = page.items.first().expect("a seeded comment").id;
    backends
        .store
        .delete(gone, &dynapage::domain::Access::Any)
        .await
        .expect("deleted");
    let imported = backends.run("import", &["--in", file]).await;
    assert_eq!(exit_code(&imported), Some(0), "{imported:?}");
    seen.insert("import".into(), called(&proxy, None).await);

    for (row, extra) in [("verify", &[][..]), ("verify --sku", &["--sku", "IAM"][..])] {
        let verified = backends.run("verify", extra).await;
        assert_eq!(exit_code(&verified), Some(0), "{}", stdout(&verified));
        seen.insert(row.into(), called(&proxy, None).await);
    }

    let stream_read = Some("dynamodb:GetRecords");
    let mut worker = backends.spawn_sync();
    let mut synced = called(&proxy, stream_read).await;
    let status = terminate(&mut worker, Duration::from_secs(10)).await;
    assert!(status.success(), "sync exits 0: {status}");
    synced.extend(actions_of(proxy.take_targets()));
    seen.insert("sync".into(), synced);

    // A person with a comment, a vote and a report, exported and then erased.
    let person = "auth0|iam-person";
    let mut theirs = page.items[1].clone();
    theirs.id = dynapage::domain::CommentId::new(theirs.created_at_ms);
    theirs.author_sub = Some(person.to_owned());
    backends.store.create(&theirs).await.expect("their comment");
    let other = page.items[2].id;
    let voter = dynapage::domain::Voter::signed_in(person);
    backends
        .store
        .mark_helpful(other, &voter, true, 1)
        .await
        .expect("their vote");
    let draft = dynapage::domain::ReportDraft::new(dynapage::domain::ReportReason::Spam, None)
        .expect("a draft");
    backends
        .store
        .report(other, person, &draft, None, 2)
        .await
        .expect("their report");
    proxy.take_targets();
    let export = tempfile::tempdir().expect("a temporary directory");
    let export = export.path().join("person.json");
    let exported = backends
        .run(
            "export-person",
            &["--sub", person, "--out", export.to_str().expect("UTF-8")],
        )
        .await;
    assert_eq!(exit_code(&exported), Some(0), "{exported:?}");
    seen.insert("export-person".into(), called(&proxy, None).await);
    let erased = backends.run("erase-person", &["--sub", person]).await;
    assert_eq!(exit_code(&erased), Some(0), "{erased:?}");
    seen.insert("erase-person".into(), called(&proxy, None).await);
    let checked = backends.run("verify", &["--person", person]).await;
    assert_eq!(exit_code(&checked), Some(0), "{}", stdout(&checked));
    seen.insert("verify --person".into(), called(&proxy, None).await);

    let serve = backends.args.clone();
    seen.insert("serve".into(), serve_and_use(&proxy, &serve, None).await);
    let mut with_sync = serve.clone();
    with_sync.push("--sync".into());
    seen.insert(
        "serve --sync".into(),
        serve_and_use(&proxy, &with_sync, stream_read).await,
    );
    let memory = backends.args_with("--index", "memory");
    seen.insert(
        "serve --store dynamodb --index memory".into(),
        serve_and_use(&proxy, &memory, stream_read).await,
    );
    let missing_table = format!("{}_created", backends.store.table());
    let mut create = backends.args_with("--dynamodb-table", &missing_table);
    create.push("--create-tables".into());
    let mut created = serve_and_use(&proxy, &create, None).await;
    // A table made before the indexes by helpful votes: `--create-tables` adds them.
    let older_table = format!("{}_older", backends.store.table());
    create_table_without_helpful_indexes(&older_table).await;
    let mut upgrade = backends.args_with("--dynamodb-table", &older_table);
    upgrade.push("--create-tables".into());
    created.extend(serve_and_use(&proxy, &upgrade, None).await);
    seen.insert("serve --create-tables".into(), created);

    // `lambda-sync` is not run here: it opens only the index (`src/cli/lambda_sync.rs`), and
    // its row, Lambda's reads as its role, is held to the template by the test above.
    let mut listed = rows;
    listed.remove("lambda-sync");
    assert_eq!(
        seen.keys().collect::<Vec<_>>(),
        listed.keys().collect::<Vec<_>>(),
        "a run for every row"
    );
    for (row, actions) in &listed {
        assert_eq!(
            &seen[row], actions,
            "`{row}`: called (left) and listed (right)"
        );
    }
}

/// A table with the layout of a release before the list by helpful votes: its two GSIs by
/// time, no `helpfulRank` index.
async fn create_table_without_helpful_indexes(table: &str) {
    use aws_sdk_dynamodb::types::{
        AttributeDefinition, BillingMode, GlobalSecondaryIndex, KeySchemaElement, KeyType,
        Projection, ProjectionType, ScalarAttributeType, StreamSpecification, StreamViewType,
    };
    let string = |name: &str| {
        AttributeDefinition::builder()
            .attribute_name(name)
            .attribute_type(ScalarAttributeType::S)
            .build()
            .expect("an attribute")
    };
    let key = |name: &str, key_type: KeyType| {
        KeySchemaElement::builder()
            .attribute_name(name)
            .key_type(key_type)
            .build()
            .expect("a key")
    };
    let index = |name: &str, partition: &str| {
        GlobalSecondaryIndex::builder()
            .index_name(name)
            .key_schema(key(partition, KeyType::Hash))
            .key_schema(key("sortKey", KeyType::Range))
            .projection(
                Projection::builder()
                    .projection_type(ProjectionType::All)
                    .build(),
            )
            .build()
            .expect("an index")
    };
    sdk_client(&endpoint().await)
        .create_table()
        .table_name(table)
        .attribute_definitions(string("id"))
        .attribute_definitions(string("sku"))
        .attribute_definitions(string("sortKey"))
        .attribute_definitions(string("skuRating"))
        .key_schema(key("id", KeyType::Hash))
        .global_secondary_indexes(index("byProduct", "sku"))
        .global_secondary_indexes(index("byProductRating", "skuRating"))
        .billing_mode(BillingMode::PayPerRequest)
        .stream_specification(
            StreamSpecification::builder()
                .stream_enabled(true)
                .stream_view_type(StreamViewType::NewAndOldImages)
                .build()
                .expect("a stream"),
        )
        .send()
        .await
        .expect("the older table created");
}
