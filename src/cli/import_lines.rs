//! The lines `import` reads, each bounded before it is held: a file is input like any other
//! (STYLE 17), and a line without an end (a file that is not an export, or a zstd stream that
//! decompresses to gigabytes of one line) must not be read whole into memory to be refused.

use std::io::{self, BufRead};

use crate::domain::{MAX_AUTHOR_CHARS, MAX_AUTHOR_SUB_BYTES, MAX_BODY_CHARS};

/// The longest line an import reads, in bytes: the longest valid line with every character
/// of its body, author and `authorSub` written as a JSON surrogate-pair escape
/// (`\uD83D\uDC4D`, 12 bytes), and room for the other fields and the names. An export's own
/// lines are at most a third of this (it writes characters as UTF-8, 4 bytes at most).
pub(super) const MAX_LINE_BYTES: usize =
    12 * (MAX_BODY_CHARS + MAX_AUTHOR_CHARS + MAX_AUTHOR_SUB_BYTES) + 1_024;

/// Why a line could not be read.
#[derive(Debug, thiserror::Error)]
pub(super) enum LineError {
    #[error(
        "line {line} is longer than {MAX_LINE_BYTES} bytes, more than any comment's line can be: not an export's line"
    )]
    TooLong { line: u64 },
    #[error("line {line} is not UTF-8 text")]
    NotUtf8 { line: u64 },
    #[error("reading line {line}")]
    Io {
        line: u64,
        #[source]
        source: io::Error,
    },
}

/// Reads lines (ending in `\n` or `\r\n`, the last one possibly without) of at most
/// [`MAX_LINE_BYTES`], numbered from 1. A longer line is refused as soon as its first
/// [`MAX_LINE_BYTES`] bytes are read, so memory stays bounded whatever the file holds.
pub(super) struct BoundedLines<R> {
    reader: R,
    number: u64,
    line: Vec<u8>,
    max: usize,
}

impl<R: BufRead> BoundedLines<R> {
    pub(super) fn new(reader: R) -> Self {
        Self::with_max(reader, MAX_LINE_BYTES)
    }

    fn with_max(reader: R, max: usize) -> Self {
        Self {
            reader,
            number: 0,
            line: Vec::new(),
            max,
        }
    }

    /// The next line and its number; `None` at the end of the input.
    pub(super) fn next_line(&mut self) -> Option<Result<(u64, &str), LineError>> {
        self.line.clear();
        self.number += 1;
        let line = self.number;
        loop {
            let available = match self.reader.fill_buf() {
                Ok(bytes) => bytes,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(source) => return Some(Err(LineError::Io { line, source })),
            };
            if available.is_empty() {
                if self.line.is_empty() {
                    return None;
                }
                break;
            }
            let (take, ends) = match available.iter().position(|b| *b == b'\n') {
                Some(at) => (at, true),
                None => (available.len(), false),
            };
            if self.line.len() + take > self.max {
                return Some(Err(LineError::TooLong { line }));
            }
            self.line.extend_from_slice(&available[..take]);
            self.reader.consume(take + usize::from(ends));
            if ends {
                break;
            }
        }
        if self.line.last() == Some(&b'\r') {
            self.line.pop();
        }
        Some(
            std::str::from_utf8(&self.line)
                .map(|text| (line, text))
                .map_err(|_| LineError::NotUtf8 { line }),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(input: &[u8], max: usize) -> Vec<Result<(u64, String), String>> {
        let mut lines = BoundedLines::with_max(io::BufReader::with_capacity(4, input), max);
        let mut out = Vec::new();
        while let Some(next) = lines.next_line() {
            let stop = next.is_err();
            out.push(
                next.map(|(n, text)| (n, text.to_owned()))
                    .map_err(|e| e.to_string()),
            );
            if stop {
                break;
            }
        }
        out
    }

    #[test]
    fn lines_are_numbered_and_a_last_line_without_its_end_is_read() {
        let ok = |n, text: &str| Ok((n, text.to_owned()));
        assert_eq!(
            all(b"one\r\ntwo\n\nfour", 10),
            [ok(1, "one"), ok(2, "two"), ok(3, ""), ok(4, "four")]
        );
        assert_eq!(all(b"", 10), []);
        assert_eq!(all(b"exactly 10\n", 10), [ok(1, "exactly 10")]);
    }

    #[test]
    fn a_line_past_the_bound_is_refused_with_its_number_before_it_is_read_whole() {
        let mut input = b"short\n".to_vec();
        input.extend(std::iter::repeat_n(b'x', 11));
        assert!(matches!(
            all(&input, 10).as_slice(),
            [Ok((1, _)), Err(e)] if e.starts_with("line 2 is longer than")
        ));
        // An endless line: refused after the bound, not read to its end.
        let mut endless = BoundedLines::with_max(io::BufReader::new(io::repeat(b'y')), 1_000);
        assert!(matches!(
            endless.next_line(),
            Some(Err(LineError::TooLong { line: 1 }))
        ));
    }

    #[test]
    fn a_line_that_is_not_utf8_is_named() {
        assert!(matches!(
            all(b"fine\n\xFF\xFE\n", 10).as_slice(),
            [Ok(_), Err(e)] if e == "line 2 is not UTF-8 text"
        ));
    }

    #[test]
    fn the_bound_holds_the_longest_line_an_export_can_write() {
        use crate::domain::{Comment, CommentId, MAX_VERSION, Rating, Sku, SortKey};
        let widest = '\u{10FFFF}';
        let comment = Comment {
            purchase: None,
            id: CommentId::from_parts(SortKey::MAX_MILLIS, u128::MAX),
            sku: Sku::parse(&"S".repeat(Sku::MAX_LEN)).expect("sku"),
            author: widest.to_string().repeat(MAX_AUTHOR_CHARS),
            author_sub: Some("\"".repeat(MAX_AUTHOR_SUB_BYTES)),
            body: widest.to_string().repeat(MAX_BODY_CHARS),
            rating: Rating::new(5).expect("rating"),
            created_at_ms: SortKey::MAX_MILLIS,
            updated_at_ms: Some(SortKey::MAX_MILLIS),
            version: MAX_VERSION,
            helpful_count: 0,
            moderation: Default::default(),
            reply: None,
            reporters: Vec::new(),
        };
        let line = super::super::transfer::encode(&comment);
        assert!(line.len() * 3 <= MAX_LINE_BYTES, "{}", line.len());
    }
}
