//! `dynapage export-schema`: the SDL (or, with `--federation`, the subgraph's), with no backend
//! and no settings needed.
//!
//! `--output` follows the rules of every file a command writes ([`super::output`]): not inside
//! a data directory, and over an existing file only with `--force` (so regenerating the
//! committed `schema.graphql` is `export-schema --output schema.graphql --force`).

use std::path::PathBuf;

use anyhow::Context;
use clap::Args;

use super::output::Output;

#[derive(Args, Debug)]
pub struct ExportSchemaArgs {
    /// Write to this file instead of standard output.
    #[arg(long, short, env = "DYNAPAGE_EXPORT_SCHEMA_OUTPUT")]
    output: Option<PathBuf>,
    /// Replace the --output file if it exists.
    #[arg(long, env = "DYNAPAGE_EXPORT_SCHEMA_FORCE", requires = "output")]
    force: bool,
    /// The Federation v2 subgraph's SDL (what `serve --federation` serves, as committed in
    /// `schema.subgraph.graphql`) instead of the stand-alone schema.
    #[arg(long, env = "DYNAPAGE_EXPORT_SCHEMA_FEDERATION")]
    federation: bool,
}

pub(super) fn run(args: ExportSchemaArgs) -> anyhow::Result<()> {
    let sdl = match args.federation {
        true => crate::graphql::federation::subgraph_sdl().to_owned(),
        false => crate::graphql::sdl(),
    };
    match &args.output {
        Some(path) => {
            let output = Output {
                path,
                flag: "--output / DYNAPAGE_EXPORT_SCHEMA_OUTPUT",
                force_flag: "--force / DYNAPAGE_EXPORT_SCHEMA_FORCE",
                force: args.force,
            };
            output.check(None)?;
            let partial = PathBuf::from(format!("{}.partial", path.display()));
            std::fs::write(&partial, sdl)
                .with_context(|| format!("writing {}", partial.display()))?;
            output.place(&partial)
        }
        None => {
            print!("{sdl}");
            Ok(())
        }
    }
}
