//! The `dynapage` binary: parse the command line, start logging, run, map errors to an exit code.
//! Everything else lives in the library.

use std::process::ExitCode;

use clap::Parser;
use dynapage::cli::{self, Cli};

/// mimalloc instead of the system allocator: a GraphQL request makes thousands of small
/// allocations on several threads, and glibc's malloc took 17% of the server's CPU for a page.
/// mimalloc is faster there but keeps more memory resident (BENCHMARKS.md measures both).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

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
