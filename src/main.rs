//! The `dynapage` binary: parse the command line, start logging, run, map errors to an exit code.
//! Everything else lives in the library.

use std::process::ExitCode;

use clap::Parser;
use dynapage::cli::{self, Cli};

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    dynapage::telemetry::init(cli.log_format);
    match cli::run(cli).await {
        Ok(code) => code,
        Err(error) => {
            tracing::error!(error = format!("{error:#}"), "failed");
            eprintln!("error: {error:#}");
            ExitCode::FAILURE
        }
    }
}
