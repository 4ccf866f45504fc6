//! Where the commands may write the files a user names (`backup --out`, `export --out`,
//! `export-schema --output`, and what `import` and `token` keep beside their `--in` and in
//! their `--key-dir`): never inside a data directory, and never over an existing file without
//! `--force`. Outputs are `0600` ([`crate::store::sqlite::modes`]).
//!
//! Inside a data directory a written file is either the database or one of its side files
//! (`backup --out DIR/comments.sqlite3` beside a running server left a box that no longer
//! starts; `export --out` there replaced the database with JSON Lines and lost an
//! acknowledged write), or a stranger beside them. So a path is refused when its directory,
//! once symlinks and `..` are resolved, is the data directory the command reads (`--data-dir`)
//! or lies inside any directory that holds a dynapage database or lock, whichever server
//! serves it.

use std::path::{Path, PathBuf};

use anyhow::Context;

use crate::store::sqlite::dir::{DATABASE_FILE, LOCK_FILE};

/// How a command names its output and the way to write over an existing one.
#[derive(Clone, Copy, Debug)]
pub(super) struct Output<'a> {
    /// The file, as the user named it.
    pub path: &'a Path,
    /// Its flag and variable, for messages: `--out / DYNAPAGE_BACKUP_OUT`.
    pub flag: &'static str,
    /// The flag and variable that allow replacing a file: `--force / DYNAPAGE_BACKUP_FORCE`.
    pub force_flag: &'static str,
    /// Whether it was given.
    pub force: bool,
}

impl Output<'_> {
    /// Refuses the output inside a data directory (`data_dir`, the one the command reads,
    /// or any other), over a directory, or over an existing file without `--force`.
    pub(super) fn check(&self, data_dir: Option<&Path>) -> anyhow::Result<()> {
        let shown = self.path.display();
        let parent = parent_of(self.path);
        let place = std::fs::canonicalize(&parent).with_context(|| {
            format!(
                "{} {shown}: its directory {} is not there",
                self.flag,
                parent.display()
            )
        })?;
        refuse_inside_data_dir(&place, data_dir, self.flag, self.path)?;
        let Ok(meta) = self.path.symlink_metadata() else {
            return Ok(());
        };
        // A link is replaced, not followed; one into a data directory is refused all the same.
        if let Ok(target) = std::fs::canonicalize(self.path) {
            refuse_inside_data_dir(&parent_of(&target), data_dir, self.flag, self.path)?;
        }
        if meta.is_dir() {
            anyhow::bail!("{} {shown} is a directory: name a file", self.flag);
        }
        if !self.force {
            anyhow::bail!(
                "{} {shown} exists; refusing to write over it: add {} to replace it",
                self.flag,
                self.force_flag
            );
        }
        Ok(())
    }

    /// Gives the complete file `written` (beside the output) the output's name: over an
    /// existing file only with `--force`. Without it the name is taken with a hard link, which
    /// fails rather than replace a file that appeared since [`Output::check`].
    pub(super) fn place(&self, written: &Path) -> anyhow::Result<()> {
        let context = || format!("renaming {} to {}", written.display(), self.path.display());
        if self.force {
            return std::fs::rename(written, self.path).with_context(context);
        }
        match std::fs::hard_link(written, self.path) {
            Ok(()) => std::fs::remove_file(written).with_context(context),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Err(anyhow::anyhow!(
                "{} {} appeared while it was written; refusing to write over it: add {} to replace it (the output is kept as {})",
                self.flag,
                self.path.display(),
                self.force_flag,
                written.display()
            )),
            // A file system without hard links: the check made before writing is all there is.
            Err(_) if self.path.symlink_metadata().is_err() => {
                std::fs::rename(written, self.path).with_context(context)
            }
            Err(e) => Err(e).with_context(context),
        }
    }
}

/// Refuses `path` (named by `flag`) when `dir`, the directory it would be written in (or that
/// would be made to hold it), lies inside a data directory. `dir` need not exist yet: its
/// nearest existing ancestor is what is resolved.
pub(super) fn refuse_in_data_dir(dir: &Path, flag: &str, path: &Path) -> anyhow::Result<()> {
    let mut existing = dir.to_owned();
    while existing.symlink_metadata().is_err() {
        match existing.parent() {
            Some(up) if !up.as_os_str().is_empty() => existing = up.to_owned(),
            _ => {
                existing = PathBuf::from(".");
                break;
            }
        }
    }
    let place = std::fs::canonicalize(&existing).with_context(|| {
        format!(
            "{flag} {}: resolving {}",
            path.display(),
            existing.display()
        )
    })?;
    refuse_inside_data_dir(&place, None, flag, path)
}

/// The directory a file at `path` is in (`.` for a bare name).
fn parent_of(path: &Path) -> PathBuf {
    match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent.to_owned(),
        _ => PathBuf::from("."),
    }
}

/// Refuses `place` (a canonical directory) inside `data_dir` or inside any directory that
/// holds a dynapage database or lock.
fn refuse_inside_data_dir(
    place: &Path,
    data_dir: Option<&Path>,
    flag: &str,
    path: &Path,
) -> anyhow::Result<()> {
    let served = data_dir.and_then(|dir| std::fs::canonicalize(dir).ok());
    let inside = served
        .filter(|served| place.starts_with(served))
        .or_else(|| {
            place
                .ancestors()
                .find(|dir| {
                    dir.join(DATABASE_FILE).symlink_metadata().is_ok()
                        || dir.join(LOCK_FILE).symlink_metadata().is_ok()
                })
                .map(Path::to_owned)
        });
    match inside {
        Some(data_dir) => anyhow::bail!(
            "{flag} {} is inside the data directory {}: nothing but the server writes there (a file written there can replace the live database or sit beside it); write it outside",
            path.display(),
            data_dir.display()
        ),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn output(path: &Path, force: bool) -> Output<'_> {
        Output {
            path,
            flag: "--out",
            force_flag: "--force",
            force,
        }
    }

    #[test]
    fn outputs_inside_a_data_directory_are_refused_however_they_are_spelled() {
        let work = tempfile::tempdir().expect("a directory");
        let data = work.path().join("data");
        std::fs::create_dir_all(data.join("sub")).expect("mkdir");
        std::fs::write(data.join(DATABASE_FILE), b"db").expect("write");
        let elsewhere = work.path().join("elsewhere");
        std::fs::create_dir(&elsewhere).expect("mkdir");
        std::os::unix::fs::symlink(&data, work.path().join("link")).expect("symlink");
        for inside in [
            data.join(DATABASE_FILE),
            data.join("backup.sqlite3"),
            data.join("sub/backup.sqlite3"),
            elsewhere.join("../data/x"),
            work.path().join("link/x"),
        ] {
            for force in [false, true] {
                let refused = output(&inside, force).check(None).expect_err("inside");
                assert!(
                    refused.to_string().contains("is inside the data directory"),
                    "{inside:?}: {refused}"
                );
            }
        }
        // The data directory a command reads is refused even before it holds anything.
        let fresh = work.path().join("fresh");
        std::fs::create_dir(&fresh).expect("mkdir");
        assert!(output(&fresh.join("x"), true).check(Some(&fresh)).is_err());
        assert!(
            output(&elsewhere.join("x"), false)
                .check(Some(&fresh))
                .is_ok()
        );
        // A link outside that points at the database is refused too.
        let pointer = elsewhere.join("pointer");
        std::os::unix::fs::symlink(data.join(DATABASE_FILE), &pointer).expect("symlink");
        assert!(output(&pointer, true).check(None).is_err());
        assert!(refuse_in_data_dir(&data.join("new/deeper"), "--key-dir", &data).is_err());
        assert!(refuse_in_data_dir(&elsewhere.join("new"), "--key-dir", &elsewhere).is_ok());
    }

    #[test]
    fn an_existing_file_is_replaced_only_with_force() {
        let work = tempfile::tempdir().expect("a directory");
        let out = work.path().join("out");
        let written = work.path().join("out.partial");
        std::fs::write(&written, b"new").expect("write");
        output(&out, false).check(None).expect("free");
        output(&out, false).place(&written).expect("placed");
        assert_eq!(std::fs::read(&out).expect("read"), b"new");
        assert!(!written.exists());

        std::fs::write(&written, b"newer").expect("write");
        let refused = output(&out, false).check(None).expect_err("exists");
        assert!(refused.to_string().contains("add --force"), "{refused}");
        assert!(output(&out, false).place(&written).is_err(), "no-clobber");
        assert_eq!(std::fs::read(&out).expect("read"), b"new");
        output(&out, true).check(None).expect("forced");
        output(&out, true).place(&written).expect("replaced");
        assert_eq!(std::fs::read(&out).expect("read"), b"newer");
        assert!(
            output(work.path(), true).check(None).is_err(),
            "a directory"
        );
        let nowhere = work.path().join("missing/out");
        assert!(output(&nowhere, false).check(None).is_err());
    }
}
