//! The Node tools the client checks run (`tests/clients`, installed by `npm ci` there, which
//! `scripts/test` does): a script or an installed tool run in that directory, bounded in time.

use std::path::PathBuf;

/// Every package `package.json` pins; an older `node_modules` misses some.
const PACKAGES: [&str; 19] = [
    "@graphql-codegen/cli",
    "@graphql-codegen/typescript-operations",
    "typescript",
    "graphql",
    "relay-compiler",
    "@apollo/client",
    "@urql/core",
    "@urql/exchange-graphcache",
    "@urql/exchange-persisted",
    "graphql-http",
    "playwright-core",
    "graphql-ws",
    "ws",
    "@apollo/composition",
    "@apollo/gateway",
    "@apollo/server",
    "@apollo/subgraph",
    "@graphql-hive/gateway",
    "@theguild/federation-composition",
];

/// `tests/clients`, failing the test when its tools are not installed.
pub fn clients_dir() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/clients");
    assert!(
        PACKAGES
            .iter()
            .all(|package| dir.join("node_modules").join(package).is_dir()),
        "the client tools are not installed: run scripts/test, or `npm ci` in tests/clients"
    );
    dir
}

/// The longest a client script may run.
const NODE_SCRIPT_LIMIT: std::time::Duration = std::time::Duration::from_secs(180);

/// Runs `node <script> <args>` in `tests/clients`; whether it succeeded, and its output.
pub async fn node(script: &str, args: &[&str]) -> (bool, String) {
    let mut command = tokio::process::Command::new("node");
    command.arg(script).args(args);
    bounded(command, &format!("node {script}")).await
}

/// Runs an installed tool, `node_modules/.bin/<tool> <args>`, in `tests/clients` with `env`
/// added; whether it succeeded, and its output.
pub async fn tool(tool: &str, args: &[&str], env: &[(&str, &str)]) -> (bool, String) {
    let mut command =
        tokio::process::Command::new(clients_dir().join("node_modules/.bin").join(tool));
    command
        .args(args)
        .envs(env.iter().copied())
        .env("NO_COLOR", "1");
    bounded(command, tool).await
}

/// Runs `command` in `tests/clients`, bounded by [`NODE_SCRIPT_LIMIT`] and killed when the
/// bound passes: a script stuck on a wait (a browser page that never subscribed, under load)
/// fails its test instead of hanging the suite.
async fn bounded(mut command: tokio::process::Command, name: &str) -> (bool, String) {
    let run = command
        .current_dir(clients_dir())
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(NODE_SCRIPT_LIMIT, run)
        .await
        .unwrap_or_else(|_| panic!("{name} did not end within {NODE_SCRIPT_LIMIT:?}"))
        .unwrap_or_else(|e| panic!("{name} did not start (is Node.js installed?): {e}"));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    (output.status.success(), text)
}
