//! The data directory of the durable embedded store (`--data-dir`): where its files live, the
//! lock that gives it one owner, and the checks that refuse a directory that is not ours.
//!
//! The lock is an advisory `flock` on `dynapage.lock` (through `rustix`), held for as
//! long as the store is open: the kernel drops it when the process dies, `SIGKILL` included,
//! so a crash never leaves a stale lock behind. The holder writes its pid into the file, so a
//! refused second process can say which process owns the directory.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

/// The database file inside the data directory.
pub const DATABASE_FILE: &str = "comments.sqlite3";
/// The lock file inside the data directory.
pub const LOCK_FILE: &str = "dynapage.lock";

/// Why a data directory cannot be used. Each message names the path and what to do.
#[derive(Debug, thiserror::Error)]
pub enum DataDirError {
    #[error(
        "another dynapage process{holder} owns the data directory {path} (lock file {lock}): stop it first, or use another --data-dir"
    )]
    Locked {
        path: PathBuf,
        lock: PathBuf,
        holder: String,
    },
    #[error("the data directory {path} is not a directory")]
    NotADirectory { path: PathBuf },
    #[error(
        "the data directory {path} is not empty and holds no dynapage data ({DATABASE_FILE}); refusing to write into it: use an empty or new directory"
    )]
    Foreign { path: PathBuf },
    #[error("the data directory {path} holds no dynapage data ({DATABASE_FILE})")]
    Missing { path: PathBuf },
    #[error("cannot use the data directory {path}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// An open, locked data directory. Dropping it releases the lock.
#[derive(Debug)]
pub struct DataDir {
    path: PathBuf,
    _lock: File,
}

impl DataDir {
    /// Creates the directory if it is missing, refuses one that holds someone else's files, and
    /// takes the lock (refusing when another process holds it).
    pub fn open(path: &Path) -> Result<Self, DataDirError> {
        let io = |source| DataDirError::Io {
            path: path.to_owned(),
            source,
        };
        if path.exists() && !path.is_dir() {
            return Err(DataDirError::NotADirectory {
                path: path.to_owned(),
            });
        }
        std::fs::create_dir_all(path).map_err(io)?;
        let lock_path = path.join(LOCK_FILE);
        let mut lock = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&lock_path)
            .map_err(io)?;
        match rustix::fs::flock(&lock, rustix::fs::FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => {}
            Err(rustix::io::Errno::WOULDBLOCK) => {
                let mut pid = String::new();
                let _ = lock.read_to_string(&mut pid);
                let pid = pid.trim();
                return Err(DataDirError::Locked {
                    path: path.to_owned(),
                    lock: lock_path,
                    holder: if pid.is_empty() {
                        String::new()
                    } else {
                        format!(" (pid {pid})")
                    },
                });
            }
            Err(errno) => return Err(io(errno.into())),
        }
        check_ours(path)?;
        lock.set_len(0).map_err(io)?;
        lock.seek(SeekFrom::Start(0)).map_err(io)?;
        writeln!(lock, "{}", std::process::id()).map_err(io)?;
        Ok(Self {
            path: path.to_owned(),
            _lock: lock,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn database(&self) -> PathBuf {
        self.path.join(DATABASE_FILE)
    }
}

/// The database of an existing data directory, for readers that take no lock (`export`,
/// `backup`): SQLite's own locks keep their reads consistent beside a running server.
pub fn existing_database(path: &Path) -> Result<PathBuf, DataDirError> {
    let database = path.join(DATABASE_FILE);
    if database.is_file() {
        Ok(database)
    } else {
        Err(DataDirError::Missing {
            path: path.to_owned(),
        })
    }
}

/// A directory is ours if it holds our database, or nothing but our lock file, SQLite's side
/// files, dotfiles and a file system's `lost+found` (a fresh volume).
fn check_ours(path: &Path) -> Result<(), DataDirError> {
    let entries = std::fs::read_dir(path).map_err(|source| DataDirError::Io {
        path: path.to_owned(),
        source,
    })?;
    let mut foreign = false;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name == DATABASE_FILE {
            return Ok(());
        }
        let ignorable = name == LOCK_FILE
            || name == "lost+found"
            || name.starts_with('.')
            || name.starts_with(DATABASE_FILE);
        foreign |= !ignorable;
    }
    if foreign {
        Err(DataDirError::Foreign {
            path: path.to_owned(),
        })
    } else {
        Ok(())
    }
}
