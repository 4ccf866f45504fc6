//! The database's format: made whole, refused when foreign or later, upgraded in place.
use super::*;

/// A format-1 file: the comments table before votes, with one comment.
fn format_1(path: &Path) {
    let conn = Connection::open(path).expect("open");
    conn.execute_batch(&format!(
        "PRAGMA application_id = {APPLICATION_ID}; PRAGMA user_version = 1;
         CREATE TABLE comments (id BLOB PRIMARY KEY NOT NULL, sku TEXT NOT NULL,
           author TEXT NOT NULL, author_sub TEXT, body TEXT NOT NULL, rating INTEGER NOT NULL,
           created_at_ms INTEGER NOT NULL, updated_at_ms INTEGER, version INTEGER NOT NULL)
           WITHOUT ROWID;
         INSERT INTO comments VALUES (x'0102030405060708090a0b0c0d0e0f10', 'SKU', 'ann',
           NULL, 'fine', 4, 1700000000000, NULL, 3);"
    ))
    .expect("a format-1 file");
}

fn counts(conn: &Connection, format: i64) -> Vec<(i64, i64)> {
    let columns = super::super::rows::columns(format);
    let mut statement = conn
        .prepare(&format!("SELECT {columns} FROM comments"))
        .expect("select");
    statement
        .query_map([], |row| Ok((row.get(8)?, row.get(9)?)))
        .expect("rows")
        .collect::<Result<_, _>>()
        .expect("decoded")
}

#[test]
fn a_format_1_file_is_read_as_it_is_and_upgraded_when_opened_for_writing() {
    let dir = tempfile::tempdir().expect("a directory");
    let path = dir.path().join("comments.sqlite3");
    format_1(&path);
    let reader = open_for_reading(&path).expect("a reader takes format 1");
    assert_eq!(format(&reader), Ok(1));
    assert_eq!(counts(&reader, 1), [(3, 0)], "version 3, no votes");
    drop(reader);

    let writer = open_for_writing(&path).expect("upgraded");
    assert_eq!(format(&writer), Ok(FORMAT_VERSION));
    assert_eq!(counts(&writer, FORMAT_VERSION), [(3, 0)]);
    let votes: i64 = writer
        .query_row("SELECT count(*) FROM votes", [], |row| row.get(0))
        .expect("the votes table");
    assert_eq!(votes, 0);
    drop(writer);
    assert!(
        open_for_writing(&path).is_ok(),
        "a format-3 file opens again"
    );
    let status: String = Connection::open(&path)
        .expect("open")
        .query_row("SELECT status FROM comments", [], |row| row.get(0))
        .expect("the status column");
    assert_eq!(
        status, "PUBLISHED",
        "comments written before moderation are public"
    );

    let conn = Connection::open(&path).expect("open");
    conn.execute_batch("PRAGMA user_version = 7")
        .expect("a later format");
    drop(conn);
    assert!(matches!(
        open_for_writing(&path),
        Err(FormatError::Version { found: 7, .. })
    ));
}

#[test]
fn a_new_database_is_made_whole_and_an_empty_or_unmarked_file_is_refused() {
    let dir = tempfile::tempdir().expect("a directory");
    let path = dir.path().join("comments.sqlite3");
    std::fs::write(dir.path().join("comments.sqlite3.new"), b"left by a crash").expect("write");
    let conn = open_for_writing(&path).expect("made and opened");
    assert_eq!(format(&conn), Ok(FORMAT_VERSION));
    drop(conn);
    assert!(!dir.path().join("comments.sqlite3.new").exists());
    assert!(open_for_reading(&path).is_ok());

    let empty = dir.path().join("empty.sqlite3");
    std::fs::write(&empty, b"").expect("a zero-length file");
    assert!(matches!(
        open_for_writing(&empty),
        Err(FormatError::Empty { .. })
    ));
    assert!(matches!(
        open_for_reading(&empty),
        Err(FormatError::Empty { .. })
    ));
    assert_eq!(
        std::fs::metadata(&empty).expect("stat").len(),
        0,
        "left as it was"
    );

    let unmarked = dir.path().join("unmarked.sqlite3");
    Connection::open(&unmarked)
        .and_then(|c| c.execute_batch("VACUUM"))
        .expect("an SQLite file without our mark");
    assert!(matches!(
        open_for_writing(&unmarked),
        Err(FormatError::Foreign { found: 0, .. })
    ));
}
