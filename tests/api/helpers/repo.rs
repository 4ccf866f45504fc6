//! The repository's own files (the README, the book, `docker-compose.yml`, the templates) as
//! the tests hold them to the code, and what the command line reads from the environment.

use std::collections::BTreeSet;

use clap::CommandFactory;
use dynapage::cli::Cli;

/// The text of the repository's file `name` (a path from its root).
pub fn repo_file(name: &str) -> String {
    let path = format!("{}/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// Every environment variable any flag of any subcommand reads.
pub fn known_env_vars() -> BTreeSet<String> {
    fn walk(command: &clap::Command, out: &mut BTreeSet<String>) {
        for arg in command.get_arguments() {
            if let Some(env) = arg.get_env() {
                out.insert(env.to_string_lossy().into_owned());
            }
        }
        for sub in command.get_subcommands() {
            walk(sub, out);
        }
    }
    let mut out = BTreeSet::new();
    walk(&Cli::command(), &mut out);
    out
}

/// The actions `deploy/template.yaml` lets the `lambda-sync` function's role take, sorted.
pub fn sync_role_actions() -> Vec<String> {
    let template: serde_yaml_ng::Value =
        serde_yaml_ng::from_str(&repo_file("deploy/template.yaml"))
            .expect("deploy/template.yaml is valid YAML");
    let mut actions: Vec<String> = template["Resources"]["SyncRole"]["Properties"]["Policies"]
        .as_sequence()
        .expect("policies")
        .iter()
        .flat_map(|p| {
            p["PolicyDocument"]["Statement"]
                .as_sequence()
                .cloned()
                .unwrap_or_default()
        })
        .flat_map(|s| s["Action"].as_sequence().cloned().unwrap_or_default())
        .filter_map(|a| a.as_str().map(str::to_owned))
        .collect();
    actions.sort();
    actions
}
