//! What a benchmark writes: progress lines on stderr, CSV files of results, and text summaries
//! written to a file and echoed to stdout. It knows no benchmark's columns.

use std::fmt::Display;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context as _;

/// A progress line on stderr, with the time of day (UTC).
pub fn log(message: &str) {
    eprintln!("[{}] {message}", chrono::Utc::now().format("%H:%M:%S"));
}

/// The value of `name=value` in a line of such pairs (wrk's RESULT line, `raw-query`'s).
pub fn field<'a>(line: &'a str, name: &str) -> Option<&'a str> {
    line.split_whitespace()
        .find_map(|pair| pair.strip_prefix(name)?.strip_prefix('='))
}

/// A CSV file: a header, then rows appended as they are measured (a run cut short keeps what
/// it measured).
#[derive(Debug)]
pub struct Csv {
    path: PathBuf,
    file: File,
}

impl Csv {
    /// Creates (or empties) the file and writes the header.
    pub fn create(path: &Path, header: &[&str]) -> anyhow::Result<Self> {
        let file = File::create(path).with_context(|| format!("creating {}", path.display()))?;
        let mut csv = Self {
            path: path.to_owned(),
            file,
        };
        csv.write_line(&header.join(","))?;
        Ok(csv)
    }

    /// Opens an existing file to append rows, or creates it with the header.
    pub fn append(path: &Path, header: &[&str]) -> anyhow::Result<Self> {
        if !path.exists() {
            return Self::create(path, header);
        }
        let file = OpenOptions::new()
            .append(true)
            .open(path)
            .with_context(|| format!("opening {}", path.display()))?;
        Ok(Self {
            path: path.to_owned(),
            file,
        })
    }

    /// One row; fields holding a comma or a quote are quoted.
    pub fn row(&mut self, fields: &[&dyn Display]) -> anyhow::Result<()> {
        let line: Vec<String> = fields.iter().map(|f| quote(&f.to_string())).collect();
        self.write_line(&line.join(","))
    }

    /// A row already joined (its fields quoted where needed).
    pub fn write_line(&mut self, line: &str) -> anyhow::Result<()> {
        writeln!(self.file, "{line}").with_context(|| format!("writing {}", self.path.display()))
    }
}

fn quote(field: &str) -> String {
    if field.contains([',', '"', '\n']) {
        format!("\"{}\"", field.replace('"', "\"\""))
    } else {
        field.to_owned()
    }
}

/// Reads a CSV file written by [`Csv`] into rows of (column, value) pairs by name.
pub fn read_csv(path: &Path) -> anyhow::Result<Vec<Row>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let mut lines = text.lines().filter(|l| !l.is_empty());
    let header = split(lines.next().unwrap_or_default());
    Ok(lines
        .map(|line| Row {
            columns: header.clone(),
            values: split(line),
        })
        .collect())
}

/// One row of a CSV file read by [`read_csv`].
#[derive(Clone, Debug)]
pub struct Row {
    columns: Vec<String>,
    values: Vec<String>,
}

impl Row {
    /// The value in `column` ("" if absent).
    pub fn get(&self, column: &str) -> &str {
        self.columns
            .iter()
            .position(|c| c == column)
            .and_then(|i| self.values.get(i))
            .map_or("", String::as_str)
    }

    /// The value in `column` as a number (0 if absent or not a number).
    pub fn num(&self, column: &str) -> f64 {
        self.get(column).parse().unwrap_or(0.0)
    }
}

fn split(line: &str) -> Vec<String> {
    let mut fields = vec![String::new()];
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                chars.next();
                push(&mut fields, '"');
            }
            ('"', _) => quoted = !quoted,
            (',', false) => fields.push(String::new()),
            (c, _) => push(&mut fields, c),
        }
    }
    fields
}

fn push(fields: &mut [String], c: char) {
    if let Some(field) = fields.last_mut() {
        field.push(c);
    }
}

/// A text summary: every line goes to the file and to stdout.
#[derive(Debug)]
pub struct Summary {
    path: PathBuf,
    file: File,
}

impl Summary {
    pub fn create(path: &Path) -> anyhow::Result<Self> {
        let file = File::create(path).with_context(|| format!("creating {}", path.display()))?;
        Ok(Self {
            path: path.to_owned(),
            file,
        })
    }

    /// Opens an existing summary to add lines to it (or creates it).
    pub fn append(path: &Path) -> anyhow::Result<Self> {
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .with_context(|| format!("opening {}", path.display()))?;
        Ok(Self {
            path: path.to_owned(),
            file,
        })
    }

    pub fn line(&mut self, line: &str) -> anyhow::Result<()> {
        println!("{line}");
        writeln!(self.file, "{line}").with_context(|| format!("writing {}", self.path.display()))
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn quoted_fields_split_back_into_what_was_written() {
        let line = ["a", "first page", "x,y", "say \"hi\""]
            .map(super::quote)
            .join(",");
        assert_eq!(
            super::split(&line),
            ["a", "first page", "x,y", "say \"hi\""]
        );
    }
}
