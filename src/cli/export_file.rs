//! The file `export` writes and `import` reads: JSON Lines ([`super::transfer`]), plain, or
//! zstd-compressed when the name ends in `.zst` (`FILE.jsonl.zst`).
//!
//! A compressed export is a series of zstd frames of [`FRAME_LINES`] lines each (the last one
//! shorter). Concatenated frames decode as one stream, so `zstd -d` and any zstd reader see
//! plain JSON Lines; and since a frame's bytes depend only on its lines, an export that
//! resumes after its last complete frame writes the same bytes as one that never stopped.
//! `import` recognises a compressed file by zstd's magic bytes, whatever its name.

use std::fs::{File, OpenOptions};
use std::io::{self, BufRead, BufReader, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::Path;

use anyhow::Context;

use super::transfer;
use crate::domain::{Comment, CommentId, LogEntry, Report};
use crate::store::sqlite::modes;

/// Lines per zstd frame: large enough to compress as well as one long stream (a frame is
/// about 250 KB of text), small enough that a resumed export redoes little.
pub(super) const FRAME_LINES: u64 = 1_000;
/// zstd's default level: about 7× smaller than the text, at hundreds of MB/s.
const LEVEL: i32 = 3;
/// The first bytes of every zstd frame.
const ZSTD_MAGIC: [u8; 4] = [0x28, 0xB5, 0x2F, 0xFD];

/// How an export file is encoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Format {
    Plain,
    Zstd,
}

impl Format {
    /// Chosen by the file's name: `.zst` is compressed.
    pub(super) fn of(path: &Path) -> Self {
        if path.extension().is_some_and(|e| e == "zst") {
            Self::Zstd
        } else {
            Self::Plain
        }
    }
}

/// Writes export lines in a [`Format`], appending to what the file already holds.
pub(super) struct LineWriter {
    out: BufWriter<File>,
    format: Format,
    /// The lines of the zstd frame being gathered.
    frame: Vec<u8>,
    frame_lines: u64,
}

impl LineWriter {
    pub(super) fn new(file: File, format: Format) -> Self {
        Self {
            out: BufWriter::new(file),
            format,
            frame: Vec::new(),
            frame_lines: 0,
        }
    }

    pub(super) fn write(&mut self, comment: &Comment) -> io::Result<()> {
        self.write_line(&transfer::encode(comment))
    }

    /// Writes a report's line ([`super::transfer_report`]).
    pub(super) fn write_report(&mut self, report: &Report) -> io::Result<()> {
        self.write_line(&super::transfer_report::encode(report))
    }

    /// Writes a moderation log entry's line ([`super::transfer_log`]).
    pub(super) fn write_log(&mut self, entry: &LogEntry) -> io::Result<()> {
        self.write_line(&super::transfer_log::encode(entry))
    }

    fn write_line(&mut self, line: &str) -> io::Result<()> {
        match self.format {
            Format::Plain => {
                self.out.write_all(line.as_bytes())?;
                self.out.write_all(b"\n")
            }
            Format::Zstd => {
                self.frame.extend_from_slice(line.as_bytes());
                self.frame.push(b'\n');
                self.frame_lines += 1;
                if self.frame_lines == FRAME_LINES {
                    self.end_frame()?;
                }
                Ok(())
            }
        }
    }

    fn end_frame(&mut self) -> io::Result<()> {
        if self.frame_lines > 0 {
            self.out
                .write_all(&zstd::bulk::compress(&self.frame, LEVEL)?)?;
            self.frame.clear();
            self.frame_lines = 0;
        }
        Ok(())
    }

    /// Writes the last (short) frame and syncs the file to disk.
    pub(super) fn finish(mut self) -> anyhow::Result<()> {
        self.end_frame()?;
        let file = self.out.into_inner().map_err(|e| e.into_error())?;
        file.sync_all()?;
        Ok(())
    }
}

/// Where an interrupted export stopped: its file, cut after the last complete line (plain) or
/// full frame (zstd) and open for appending; the id of the last comment kept; lines kept.
pub(super) struct ResumePoint {
    pub file: File,
    pub after: Option<CommentId>,
    pub lines: u64,
}

/// Opens (or creates) `partial` for appending after the part of it an export can keep.
pub(super) fn resume_point(partial: &Path, format: Format) -> anyhow::Result<ResumePoint> {
    let context = || format!("opening {}", partial.display());
    let mut file = modes::open_private(
        partial,
        OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false),
    )
    .with_context(context)?;
    let (good_len, after, lines) = match format {
        Format::Plain => plain_prefix(&file).with_context(context)?,
        Format::Zstd => zstd_prefix(&mut file).with_context(context)?,
    };
    file.set_len(good_len).with_context(context)?;
    file.seek(SeekFrom::End(0)).with_context(context)?;
    Ok(ResumePoint { file, after, lines })
}

/// The length, last id and line count of the complete, decodable lines at the file's start.
fn plain_prefix(file: &File) -> io::Result<(u64, Option<CommentId>, u64)> {
    let (mut good_len, mut last, mut lines) = (0u64, None, 0u64);
    let mut reader = BufReader::new(file);
    let mut line = String::new();
    loop {
        line.clear();
        let n = match reader.read_line(&mut line) {
            Ok(n) => n,
            // A line cut inside a multi-byte character ends the good part like any torn line.
            Err(e) if e.kind() == io::ErrorKind::InvalidData => break,
            Err(e) => return Err(e),
        };
        if n == 0 || !line.ends_with('\n') {
            break;
        }
        let Ok(comment) = transfer::decode(line.trim_end()) else {
            break;
        };
        good_len += n as u64;
        last = Some(comment.id);
        lines += 1;
    }
    Ok((good_len, last, lines))
}

/// The same for a compressed file: the run of full frames ([`FRAME_LINES`] decodable lines
/// each) at its start. A short frame is only ever written last, so one found here is cut too:
/// the resumed export rewrites it, and its frames stay where an uninterrupted one puts them.
fn zstd_prefix(file: &mut File) -> io::Result<(u64, Option<CommentId>, u64)> {
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)?;
    let (mut good_len, mut last, mut lines) = (0usize, None, 0u64);
    while good_len < bytes.len() {
        let rest = &bytes[good_len..];
        let Ok(size) = zstd::zstd_safe::find_frame_compressed_size(rest) else {
            break;
        };
        let Some(ids) = zstd::stream::decode_all(&rest[..size])
            .ok()
            .and_then(|text| full_frame(&text))
        else {
            break;
        };
        good_len += size;
        last = ids.last().copied();
        lines += FRAME_LINES;
    }
    Ok((good_len as u64, last, lines))
}

/// The ids of a frame's lines if it holds exactly [`FRAME_LINES`] of them, all decodable.
fn full_frame(text: &[u8]) -> Option<Vec<CommentId>> {
    let text = std::str::from_utf8(text).ok()?.strip_suffix('\n')?;
    let ids = text
        .split('\n')
        .map(|line| transfer::decode(line).map(|c| c.id).ok())
        .collect::<Option<Vec<_>>>()?;
    (ids.len() as u64 == FRAME_LINES).then_some(ids)
}

/// The lines of an export file, decompressed if it starts with zstd's magic bytes.
///
/// The first bytes read to tell are put back in front of the rest rather than sought back
/// to, so the input may be a FIFO as well as a file.
pub(super) fn open_lines(path: &Path) -> anyhow::Result<Box<dyn BufRead + Send>> {
    let context = || format!("opening {} (--in / DYNAPAGE_IMPORT_IN)", path.display());
    let mut file = File::open(path).with_context(context)?;
    let mut magic = [0u8; 4];
    let mut read = 0;
    while read < magic.len() {
        match file.read(&mut magic[read..]) {
            Ok(0) => break,
            Ok(n) => read += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e).with_context(context),
        }
    }
    let compressed = read == magic.len() && magic == ZSTD_MAGIC;
    let input = io::Cursor::new(magic).take(read as u64).chain(file);
    Ok(if compressed {
        Box::new(BufReader::new(
            zstd::stream::read::Decoder::new(input).with_context(context)?,
        ))
    } else {
        Box::new(BufReader::new(input))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::{Rating, Sku};

    fn comments(n: u64) -> Vec<Comment> {
        (0..n)
            .map(|i| Comment {
                purchase: None,
                id: CommentId::from_parts(1_700_000_000_000 + i, 7),
                sku: Sku::parse("SKU-1").expect("sku"),
                author: format!("author {i}"),
                author_sub: None,
                body: format!("body ü {i}"),
                rating: Rating::new(3).expect("rating"),
                created_at_ms: 1_700_000_000_000 + i,
                updated_at_ms: None,
                version: 1,
                helpful_count: 0,
                moderation: Default::default(),
                reply: None,
                reporters: Vec::new(),
            })
            .collect()
    }

    fn write(path: &Path, format: Format, all: &[Comment]) {
        let point = resume_point(path, format).expect("open");
        let mut writer = LineWriter::new(point.file, format);
        let after = point.after;
        for comment in all.iter().filter(|c| after.is_none_or(|a| c.id > a)) {
            writer.write(comment).expect("write");
        }
        writer.finish().expect("finish");
    }

    #[test]
    fn a_torn_compressed_export_resumes_to_the_same_bytes() {
        let dir = tempfile::tempdir().expect("dir");
        let all = comments(2 * FRAME_LINES + 17);
        let whole = dir.path().join("whole.jsonl.zst");
        write(&whole, Format::Zstd, &all);
        let bytes = std::fs::read(&whole).expect("read");
        let text = zstd::stream::decode_all(&bytes[..]).expect("frames decode as one stream");
        assert_eq!(text.iter().filter(|b| **b == b'\n').count(), all.len());

        let first = zstd::zstd_safe::find_frame_compressed_size(&bytes).expect("a frame");
        for cut in [0, 5, first - 1, first, first + 9, bytes.len() - 3] {
            let torn = dir.path().join(format!("torn-{cut}.jsonl.zst"));
            std::fs::write(&torn, &bytes[..cut]).expect("write");
            write(&torn, Format::Zstd, &all);
            assert!(std::fs::read(&torn).expect("read") == bytes, "cut at {cut}");
        }
    }

    #[test]
    fn a_torn_plain_export_resumes_to_the_same_bytes() {
        let dir = tempfile::tempdir().expect("dir");
        let all = comments(50);
        let whole = dir.path().join("whole.jsonl");
        write(&whole, Format::Plain, &all);
        let bytes = std::fs::read(&whole).expect("read");
        // Inside the `ü` of a line, at a line's end, and in the middle of one.
        let umlaut = bytes.iter().position(|b| *b == 0xC3).expect("ü") + 1;
        let line_end = bytes.iter().position(|b| *b == b'\n').expect("a line") + 1;
        for cut in [umlaut, line_end, bytes.len() / 2] {
            let torn = dir.path().join(format!("torn-{cut}.jsonl"));
            std::fs::write(&torn, &bytes[..cut]).expect("write");
            write(&torn, Format::Plain, &all);
            assert!(std::fs::read(&torn).expect("read") == bytes, "cut at {cut}");
        }
    }

    #[test]
    fn import_reads_a_compressed_file_by_its_magic_bytes_whatever_its_name() {
        let dir = tempfile::tempdir().expect("dir");
        let all = comments(FRAME_LINES + 3);
        let path = dir.path().join("no-extension");
        let mut writer = LineWriter::new(File::create(&path).expect("create"), Format::Zstd);
        for comment in &all {
            writer.write(comment).expect("write");
        }
        writer.finish().expect("finish");
        let lines: Vec<String> = open_lines(&path)
            .expect("open")
            .lines()
            .collect::<Result<_, _>>()
            .expect("read");
        assert_eq!(lines.len(), all.len());
        assert_eq!(
            transfer::decode(&lines[FRAME_LINES as usize]),
            Ok(all[FRAME_LINES as usize].clone())
        );
    }
}
