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
