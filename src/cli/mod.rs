//! The `dynapage` command line: one binary, a subcommand per job (STYLE 2). Each subcommand
//! lives in its own file with one `run`.

mod backup;
mod copy_progress;
mod export;
mod export_file;
mod export_scan;
mod export_schema;
mod import;
mod import_lines;
mod lambda_sync;
mod output;
mod person;
mod reindex;
pub mod seed;
pub mod serve;
mod sync;
mod token;
mod transfer;
mod transfer_log;
mod transfer_report;
pub mod verify;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

use crate::telemetry::LogFormat;

/// Relay cursor connections over DynamoDB, with totalCount and page jumps from a Redis index.
#[derive(Debug, Parser)]
#[command(name = "dynapage", version, about, long_about = None)]
pub struct Cli {
    /// Log line format.
    #[arg(long, env = "DYNAPAGE_LOG_FORMAT", value_enum, default_value_t = LogFormat::Text, global = true)]
    pub log_format: LogFormat,
    /// What to do; `serve` when omitted.
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// The subcommands of `dynapage`.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve GraphQL at /graphql, GraphiQL at /, health at /healthz and /readyz.
    Serve(Box<serve::ServeArgs>),
    /// Write generated comments (ratings 1-5, timestamp ties) for one product.
    Seed(seed::SeedArgs),
    /// Consume the table's DynamoDB stream into the Redis index until stopped.
    Sync(sync::SyncArgs),
    /// Apply DynamoDB stream batches to the Redis index as an AWS Lambda function.
    LambdaSync(lambda_sync::LambdaSyncArgs),
    /// Rebuild the Redis index from a parallel scan of the table (one product with --sku).
    Reindex(reindex::ReindexArgs),
    /// Compare the table with the Redis index (or check a stopped --data-dir store and the
    /// index built from it); print the drift, exit 1 if there is any.
    Verify(verify::VerifyArgs),
    /// Write every comment of a store (--data-dir, or --store dynamodb) to a JSON Lines file.
    Export(export::ExportArgs),
    /// Load a JSON Lines export into a store (--data-dir, or --store dynamodb); idempotent and
    /// resumable.
    Import(import::ImportArgs),
    /// Copy the --data-dir store's database to a file while the server runs.
    Backup(backup::BackupArgs),
    /// Print the GraphQL schema (SDL); equal to the committed `schema.graphql`.
    ExportSchema(export_schema::ExportSchemaArgs),
    /// Write everything the store keeps about one person (their comments, helpful votes and
    /// reports) to one JSON file (GDPR arts. 15 and 20).
    ExportPerson(person::ExportPersonArgs),
    /// Erase one person's data: delete (or anonymize) their comments, remove their votes and
    /// reports; idempotent and resumable; prints a receipt (GDPR art. 17).
    ErasePerson(person::ErasePersonArgs),
    /// Print a bearer token signed with a local development key (for `serve --auth jwt`).
    Token(token::TokenArgs),
}

/// Runs the command line; the exit code says whether it succeeded.
pub async fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        None => serve::run(serve::ServeArgs::default_from_env()?).await,
        Some(Command::Serve(args)) => serve::run(*args).await,
        Some(Command::Seed(args)) => seed::run(args).await.map(|()| ExitCode::SUCCESS),
        Some(Command::Sync(args)) => sync::run(args).await.map(|()| ExitCode::SUCCESS),
        Some(Command::LambdaSync(args)) => lambda_sync::run(args).await.map(|()| ExitCode::SUCCESS),
        Some(Command::Reindex(args)) => reindex::run(args).await.map(|()| ExitCode::SUCCESS),
        Some(Command::Verify(args)) => verify::run(args).await,
        Some(Command::Export(args)) => export::run(args).await.map(|()| ExitCode::SUCCESS),
        Some(Command::Import(args)) => import::run(args).await.map(|()| ExitCode::SUCCESS),
        Some(Command::Backup(args)) => backup::run(args).await.map(|()| ExitCode::SUCCESS),
        Some(Command::ExportSchema(args)) => export_schema::run(args).map(|()| ExitCode::SUCCESS),
        Some(Command::ExportPerson(args)) => person::export(args).await.map(|()| ExitCode::SUCCESS),
        Some(Command::ErasePerson(args)) => person::erase(args).await.map(|()| ExitCode::SUCCESS),
        Some(Command::Token(args)) => token::run(args).map(|()| ExitCode::SUCCESS),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn the_command_tree_is_consistent() {
        Cli::command().debug_assert();
    }
}
