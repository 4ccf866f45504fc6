//! `dynapage export-schema`: the SDL, with no backend and no settings needed.

use std::path::PathBuf;

use anyhow::Context;
use clap::Args;

#[derive(Args, Debug)]
pub struct ExportSchemaArgs {
    /// Write to this file instead of standard output.
    #[arg(long, short)]
    output: Option<PathBuf>,
}

pub fn run(args: ExportSchemaArgs) -> anyhow::Result<()> {
    let sdl = crate::graphql::sdl();
    match args.output {
        Some(path) => {
            std::fs::write(&path, sdl).with_context(|| format!("writing {}", path.display()))
        }
        None => {
            print!("{sdl}");
            Ok(())
        }
    }
}
