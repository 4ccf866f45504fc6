//! `dynapage backup --data-dir PATH --out FILE`: a consistent copy of the durable embedded
//! store's database, taken while the server runs (SQLite's `VACUUM INTO` reads one snapshot;
//! the server's writes go on). Restore by putting the file into an empty directory as
//! `comments.sqlite3` and starting `serve --data-dir` on that directory.
//!
//! `--out` may not be inside a data directory, and an existing file is replaced only with
//! `--force` ([`super::output`]); the copy is `0600`.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::Context;
use clap::Args;

use super::output::Output;

#[derive(Args, Debug)]
pub struct BackupArgs {
    /// The data directory of the store to copy (the server may be running on it).
    #[arg(long, env = "DYNAPAGE_DATA_DIR")]
    pub data_dir: PathBuf,
    /// The file to write (written as FILE.partial, renamed when complete and synced); not
    /// inside a data directory.
    #[arg(long, env = "DYNAPAGE_BACKUP_OUT")]
    pub out: PathBuf,
    /// Replace FILE if it exists.
    #[arg(long, env = "DYNAPAGE_BACKUP_FORCE")]
    pub force: bool,
}

pub(super) async fn run(args: BackupArgs) -> anyhow::Result<()> {
    let started = Instant::now();
    let output = Output {
        path: &args.out,
        flag: "--out / DYNAPAGE_BACKUP_OUT",
        force_flag: "--force / DYNAPAGE_BACKUP_FORCE",
        force: args.force,
    };
    output.check(Some(&args.data_dir))?;
    let partial = PathBuf::from(format!("{}.partial", args.out.display()));
    let (dir, copy) = (args.data_dir.clone(), partial.clone());
    let bytes = tokio::task::spawn_blocking(move || crate::store::sqlite::backup(&dir, &copy))
        .await?
        .with_context(|| format!("backing up {} (--data-dir)", args.data_dir.display()))?;
    output.place(&partial)?;
    println!(
        "backed up {} to {} ({bytes} bytes) in {:.1} s; restore: put it into an empty directory as comments.sqlite3 and run serve --data-dir on that directory",
        args.data_dir.display(),
        args.out.display(),
        started.elapsed().as_secs_f64()
    );
    Ok(())
}
