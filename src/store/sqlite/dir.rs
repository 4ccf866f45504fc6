//! The data directory of the durable embedded store (`--data-dir`): where its files live, the
//! lock that gives it one owner, its modes, and the checks that refuse a directory that is
//! not ours.
//!
//! The lock is an advisory `flock` on the directory itself (through `rustix`), held for as
//! long as the store is open: the kernel drops it when the process dies, `SIGKILL` included,
//! so a crash never leaves a stale lock behind, and no file can be deleted to get around it
//! (the lock used to be on `dynapage.lock` alone: deleting that file let a second server open
//! the same database, each with its own copy in memory). `dynapage.lock` is still locked too,
//! so an older dynapage, which knows only that lock, is kept out as well; it holds the owner's
//! pid, so a refused process can say which process owns the directory.
//!
//! Modes ([`super::modes`]): a directory created here is `0700`; an existing one that lets
//! other users in is the user's choice, so it is left as it is with a warning naming it. The
//! files in it are dynapage's: the lock, the database and SQLite's side files are set to
//! `0600` when they are not already.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use super::modes;

/// The database file inside the data directory.
pub const DATABASE_FILE: &str = "comments.sqlite3";
/// The lock file inside the data directory.
pub const LOCK_FILE: &str = "dynapage.lock";

/// Why a data directory cannot be used. Each message names the path and what to do.
#[derive(Debug, thiserror::Error)]
pub enum DataDirError {
    /// Another process holds the directory's lock.
    #[error(
        "another dynapage process{holder} owns the data directory {path} (lock file {lock}): stop it first, or use another --data-dir"
    )]
    Locked {
        /// The data directory.
        path: PathBuf,
        /// Its lock file.
        lock: PathBuf,
        /// ` (pid N)` as the lock file names the holder, or empty when it names none.
        holder: String,
    },
    /// The path exists and is not a directory.
    #[error("the data directory {path} is not a directory")]
    NotADirectory {
        /// The path given as the data directory.
        path: PathBuf,
    },
    /// The directory holds other files and no dynapage database.
    #[error(
        "the data directory {path} is not empty and holds no dynapage data ({DATABASE_FILE}); refusing to write into it: use an empty or new directory"
    )]
    Foreign {
        /// The data directory.
        path: PathBuf,
    },
    /// A reader that takes no lock (`export`, `backup`) found no database in the directory.
    #[error("the data directory {path} holds no dynapage data ({DATABASE_FILE})")]
    Missing {
        /// The data directory.
        path: PathBuf,
    },
    /// Creating, opening, locking or checking the directory failed.
    #[error("cannot use the data directory {path}")]
    Io {
        /// The data directory.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
}

/// An open, locked data directory. Dropping it releases the lock; it must outlive every
/// connection to the database (the writer thread drops it last).
#[derive(Debug)]
pub struct DataDir {
    path: PathBuf,
    /// The directory, open and locked.
    _directory: File,
    /// `dynapage.lock`, open and locked: the pid, and the lock older versions look for.
    _lock: File,
}

impl DataDir {
    /// Creates the directory if it is missing (`0700`), refuses one that holds someone else's
    /// files, and takes the lock (refusing when another process holds it).
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
        if !modes::create_private_dir(path).map_err(io)? {
            warn_if_open_to_others(path);
        }
        let directory = File::open(path).map_err(io)?;
        let lock_path = path.join(LOCK_FILE);
        let locked = |holder: &File| DataDirError::Locked {
            path: path.to_owned(),
            lock: lock_path.clone(),
            holder: pid_in(holder),
        };
        if !try_lock(&directory).map_err(io)? {
            let note = File::open(&lock_path).ok();
            return Err(match note {
                Some(note) => locked(&note),
                None => DataDirError::Locked {
                    path: path.to_owned(),
                    lock: lock_path.clone(),
                    holder: String::new(),
                },
            });
        }
        let mut lock = modes::open_private(
            &lock_path,
            OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false),
        )
        .map_err(io)?;
        if !try_lock(&lock).map_err(io)? {
            return Err(locked(&lock));
        }
        check_ours(path)?;
        for name in OWN_FILES {
            let file = path.join(name);
            if let Some(was) = modes::tighten(&file).map_err(io)? {
                tracing::warn!(
                    file = %file.display(),
                    mode = format!("{was:o}"),
                    "a dynapage file was readable by other users; its mode is now 600"
                );
            }
        }
        lock.set_len(0).map_err(io)?;
        lock.seek(SeekFrom::Start(0)).map_err(io)?;
        writeln!(lock, "{}", std::process::id()).map_err(io)?;
        Ok(Self {
            path: path.to_owned(),
            _directory: directory,
            _lock: lock,
        })
    }

    /// The directory's path, as given.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The path of the database file inside it ([`DATABASE_FILE`]).
    pub fn database(&self) -> PathBuf {
        self.path.join(DATABASE_FILE)
    }
}

/// The files of a data directory that are dynapage's, and so `0600`.
const OWN_FILES: [&str; 4] = [
    LOCK_FILE,
    DATABASE_FILE,
    "comments.sqlite3-wal",
    "comments.sqlite3-shm",
];

/// Takes the exclusive lock on `file` without waiting: `false` when another holds it.
fn try_lock(file: &File) -> std::io::Result<bool> {
    match rustix::fs::flock(file, rustix::fs::FlockOperation::NonBlockingLockExclusive) {
        Ok(()) => Ok(true),
        Err(rustix::io::Errno::WOULDBLOCK) => Ok(false),
        Err(errno) => Err(errno.into()),
    }
}

/// ` (pid N)` as the lock file names its holder, or nothing.
fn pid_in(mut lock: &File) -> String {
    let mut pid = String::new();
    let _ = lock.read_to_string(&mut pid);
    let pid = pid.trim();
    if pid.is_empty() || pid.len() > 20 || !pid.bytes().all(|b| b.is_ascii_digit()) {
        String::new()
    } else {
        format!(" (pid {pid})")
    }
}

/// Logs a warning when an existing data directory lets other users in: the database is
/// `0600` whatever the directory says, but file names and sizes show, and a directory others
/// may write to lets them swap files under the server.
fn warn_if_open_to_others(path: &Path) {
    match modes::open_to_others(path) {
        Ok(0) | Err(_) => {}
        Ok(bits) => tracing::warn!(
            data_dir = %path.display(),
            group_and_other = format!("{bits:03o}"),
            "the data directory lets other users in; it is left as it is: chmod 700 it unless that is what you want"
        ),
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
