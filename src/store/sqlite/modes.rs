//! Who may read the comments on disk: the data directory is `0700` and every file dynapage
//! writes with comments in it (the database and SQLite's side files, the lock, backups,
//! exports and their partial files) is `0600`, whatever the process's umask.
//!
//! The modes are set explicitly (`fchmod` after creating), because a umask can only take bits
//! away: one of `000` would otherwise leave a database readable by every user of the machine.
//! SQLite creates its `-wal` and `-shm` files with the database's own mode (and sets it with
//! `fchmod` too), so a `0600` database gives `0600` side files.

use std::fs::{File, OpenOptions, Permissions};
use std::io;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;

/// The mode of the data directory.
pub const DIRECTORY_MODE: u32 = 0o700;
/// The mode of every file with comments in it.
pub const FILE_MODE: u32 = 0o600;

/// Creates `path` (and its missing parents) as a `0700` directory; returns whether it did.
/// Only the directories it creates get that mode: an existing one is the user's, and is left
/// as it is.
pub fn create_private_dir(path: &Path) -> io::Result<bool> {
    if path.symlink_metadata().is_ok() {
        return Ok(false);
    }
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(DIRECTORY_MODE)
        .create(path)?;
    std::fs::set_permissions(path, Permissions::from_mode(DIRECTORY_MODE))?;
    Ok(true)
}

/// Opens a file with `options`; one it creates is made `0600` before anything is written.
/// (A file that was already there keeps its mode: the caller decides whether it is ours to
/// tighten, [`tighten`].)
pub fn open_private(path: &Path, options: &mut OpenOptions) -> io::Result<File> {
    let existed = path.symlink_metadata().is_ok();
    let file = options.mode(FILE_MODE).open(path)?;
    if !existed {
        file.set_permissions(Permissions::from_mode(FILE_MODE))?;
    }
    Ok(file)
}

/// Creates `path` anew (truncating any file there) as a `0600` file.
pub fn create_private(path: &Path) -> io::Result<File> {
    let file = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(FILE_MODE)
        .open(path)?;
    file.set_permissions(Permissions::from_mode(FILE_MODE))?;
    Ok(file)
}

/// Writes `bytes` to a new or truncated `0600` file at `path`.
pub fn write_private(path: &Path, bytes: &[u8]) -> io::Result<()> {
    use std::io::Write;
    create_private(path)?.write_all(bytes)
}

/// Sets one of dynapage's own files that an older version (or a umask) left readable by
/// others to `0600`; returns the mode it had when it changed it. A missing file is fine.
pub fn tighten(path: &Path) -> io::Result<Option<u32>> {
    let mode = match path.symlink_metadata() {
        Ok(meta) if meta.is_file() => meta.permissions().mode() & 0o777,
        Ok(_) => return Ok(None),
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    if mode & !FILE_MODE == 0 {
        return Ok(None);
    }
    std::fs::set_permissions(path, Permissions::from_mode(FILE_MODE))?;
    Ok(Some(mode))
}

/// The permission bits of `path` that let users other than its owner in (group and other),
/// if any: `0o055` for a `0755` directory.
pub fn open_to_others(path: &Path) -> io::Result<u32> {
    Ok(std::fs::metadata(path)?.permissions().mode() & 0o077)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mode(path: &Path) -> u32 {
        std::fs::metadata(path).expect("stat").permissions().mode() & 0o777
    }

    #[test]
    fn what_is_created_is_private_and_what_was_there_is_tightened_only_when_asked() {
        let work = tempfile::tempdir().expect("a directory");
        let dir = work.path().join("a/b");
        assert!(create_private_dir(&dir).expect("mkdir"));
        assert_eq!(mode(&dir), DIRECTORY_MODE);
        let file = dir.join("f");
        write_private(&file, b"x").expect("write");
        assert_eq!(mode(&file), FILE_MODE);

        let loose = dir.join("loose");
        std::fs::write(&loose, b"x").expect("write");
        std::fs::set_permissions(&loose, Permissions::from_mode(0o644)).expect("chmod");
        open_private(&loose, OpenOptions::new().read(true)).expect("open");
        assert_eq!(
            mode(&loose),
            0o644,
            "opening leaves an existing file as it is"
        );
        assert_eq!(tighten(&loose).expect("tighten"), Some(0o644));
        assert_eq!(mode(&loose), FILE_MODE);
        assert_eq!(tighten(&loose).expect("again"), None);
        assert_eq!(tighten(&dir.join("missing")).expect("missing"), None);

        std::fs::set_permissions(&dir, Permissions::from_mode(0o755)).expect("chmod");
        assert!(!create_private_dir(&dir).expect("there"), "an existing one");
        assert_eq!(mode(&dir), 0o755, "left as it is");
        assert_eq!(open_to_others(&dir).expect("stat"), 0o055);
    }
}
