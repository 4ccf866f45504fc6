//! The documents and what the tests read in them: fenced blocks with the marker comment before
//! each, links, and the anchors that GitHub and mdbook give headings. Parsed with
//! pulldown-cmark, the parser mdbook itself uses, so a link inside a code span or a fence is
//! never taken for one.

use std::collections::BTreeSet;
use std::path::Path;

use pulldown_cmark::{CodeBlockKind, Event, Options, Parser, Tag, TagEnd};

/// One Markdown file of the repository.
pub struct Document {
    /// The path from the repository's root, `/`-separated (`docs/api/errors.md`).
    pub path: String,
    pub text: String,
}

impl Document {
    pub fn read(path: &str) -> Self {
        let full = Path::new(env!("CARGO_MANIFEST_DIR")).join(path);
        let text =
            std::fs::read_to_string(&full).unwrap_or_else(|e| panic!("{}: {e}", full.display()));
        Self {
            path: path.to_owned(),
            text,
        }
    }

    /// The directory the document's relative links start from (`""` at the root).
    pub fn dir(&self) -> &str {
        self.path.rsplit_once('/').map_or("", |(dir, _)| dir)
    }

    fn line_of(&self, offset: usize) -> usize {
        self.text[..offset].matches('\n').count() + 1
    }
}

/// The front doors whose examples run: README.md and every chapter of the book.
pub fn examples_documents() -> Vec<Document> {
    let mut paths = vec!["README.md".to_owned()];
    paths.extend(book_chapters());
    paths.iter().map(|path| Document::read(path)).collect()
}

/// Every Markdown file whose links are checked: the front doors, BENCHMARKS.md and the
/// benchmark tool's README.
pub fn linked_documents() -> Vec<Document> {
    let mut paths = vec![
        "README.md".to_owned(),
        "BENCHMARKS.md".to_owned(),
        "bench/README.md".to_owned(),
    ];
    paths.extend(book_chapters());
    paths.push("docs/SUMMARY.md".to_owned());
    paths.iter().map(|path| Document::read(path)).collect()
}

/// Every `.md` file under `docs/` but `SUMMARY.md`, sorted.
pub fn book_chapters() -> Vec<String> {
    fn walk(dir: &Path, prefix: &str, into: &mut Vec<String>) {
        let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        for entry in entries {
            let entry = entry.expect("a directory entry");
            let name = entry.file_name().to_string_lossy().into_owned();
            let path = format!("{prefix}/{name}");
            if entry.file_type().expect("a file type").is_dir() {
                walk(&entry.path(), &path, into);
            } else if name.ends_with(".md") && path != "docs/SUMMARY.md" {
                into.push(path);
            }
        }
    }
    let mut chapters = Vec::new();
    walk(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("docs"),
        "docs",
        &mut chapters,
    );
    chapters.sort();
    chapters
}

fn options() -> Options {
    Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_FOOTNOTES
}

/// A fenced code block.
#[derive(Clone, Debug)]
pub struct Fence {
    /// The info string's first word: `graphql`, `json`, `console`, `sh`, … (`""` when bare).
    pub lang: String,
    pub text: String,
    /// The line of the opening fence.
    pub line: usize,
    /// What the `<!-- example: … -->` comment right before the fence says, if there is one.
    pub marker: Option<String>,
}

/// The blocks of a document as the examples test walks them, in order.
#[derive(Debug)]
pub enum Block {
    Fence(Fence),
    /// An `<!-- example: … -->` comment that no fence follows: a marker out of place.
    StrayMarker {
        text: String,
        line: usize,
    },
    /// Any other block (a paragraph, a heading, a list, a table…): it separates a request from
    /// an answer.
    Other,
}

/// The marker in an HTML comment, `<!-- example: server -->` → `server`.
fn marker_in(html: &str) -> Option<String> {
    let inner = html
        .trim()
        .strip_prefix("<!--")?
        .strip_suffix("-->")?
        .trim();
    inner
        .strip_prefix("example:")
        .map(|marker| marker.trim().to_owned())
}

pub fn blocks(document: &Document) -> Vec<Block> {
    let mut blocks = Vec::new();
    let mut html = String::new();
    let mut html_line = 0;
    let mut pending: Option<(String, usize)> = None;
    let mut fence: Option<Fence> = None;
    for (event, range) in Parser::new_ext(&document.text, options()).into_offset_iter() {
        match event {
            Event::Start(Tag::HtmlBlock) => {
                html.clear();
                html_line = document.line_of(range.start);
            }
            Event::Html(text) => html.push_str(&text),
            Event::End(TagEnd::HtmlBlock) => {
                if let Some((text, line)) = pending.take() {
                    blocks.push(Block::StrayMarker { text, line });
                }
                pending = marker_in(&html).map(|marker| (marker, html_line));
            }
            Event::Start(Tag::CodeBlock(kind)) => {
                let lang = match kind {
                    CodeBlockKind::Fenced(info) => {
                        info.split_whitespace().next().unwrap_or("").to_owned()
                    }
                    CodeBlockKind::Indented => "indented".to_owned(),
                };
                fence = Some(Fence {
                    lang,
                    text: String::new(),
                    line: document.line_of(range.start),
                    marker: pending.take().map(|(marker, _)| marker),
                });
            }
            Event::Text(text) if fence.is_some() => {
                fence.as_mut().expect("in a fence").text.push_str(&text);
            }
            Event::End(TagEnd::CodeBlock) => {
                blocks.push(Block::Fence(fence.take().expect("a fence ends")));
            }
            // Paragraphs, headings, list items, tables, quotes: blocks that are not fences.
            Event::Start(
                Tag::Paragraph
                | Tag::Heading { .. }
                | Tag::Item
                | Tag::Table(_)
                | Tag::BlockQuote(_)
                | Tag::FootnoteDefinition(_),
            ) => {
                if let Some((text, line)) = pending.take() {
                    blocks.push(Block::StrayMarker { text, line });
                }
                blocks.push(Block::Other);
            }
            Event::Rule => blocks.push(Block::Other),
            _ => {}
        }
    }
    if let Some((text, line)) = pending {
        blocks.push(Block::StrayMarker { text, line });
    }
    blocks
}

/// A link or image target, with its line.
pub struct Link {
    pub target: String,
    pub line: usize,
}

pub fn links(document: &Document) -> Vec<Link> {
    Parser::new_ext(&document.text, options())
        .into_offset_iter()
        .filter_map(|(event, range)| match event {
            Event::Start(Tag::Link { dest_url, .. } | Tag::Image { dest_url, .. }) => Some(Link {
                target: dest_url.into_string(),
                line: document.line_of(range.start),
            }),
            _ => None,
        })
        .collect()
}

/// A heading's text (code spans included, as their text).
pub struct Heading {
    pub text: String,
}

pub fn headings(document: &Document) -> Vec<Heading> {
    let mut headings = Vec::new();
    let mut current: Option<Heading> = None;
    for event in Parser::new_ext(&document.text, options()) {
        match event {
            Event::Start(Tag::Heading { .. }) => {
                current = Some(Heading {
                    text: String::new(),
                })
            }
            Event::Text(text) | Event::Code(text) if current.is_some() => {
                current.as_mut().expect("in a heading").text.push_str(&text);
            }
            Event::End(TagEnd::Heading(_)) => headings.push(current.take().expect("a heading")),
            _ => {}
        }
    }
    headings
}

/// The anchors a document's headings get: GitHub's rule, which mdbook follows (lower case;
/// letters, digits, `-` and `_` kept, spaces made `-`, the rest dropped; a repeated anchor
/// gets `-1`, `-2`, …).
pub fn anchors(document: &Document) -> BTreeSet<String> {
    let mut anchors = BTreeSet::new();
    for heading in headings(document) {
        let slug = slug(&heading.text);
        let mut anchor = slug.clone();
        let mut n = 0;
        while anchors.contains(&anchor) {
            n += 1;
            anchor = format!("{slug}-{n}");
        }
        anchors.insert(anchor);
    }
    anchors
}

pub fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

#[test]
fn anchors_are_made_as_github_makes_them() {
    assert_eq!(
        slug("Bearer tokens (criterion, `cargo bench --bench auth`; load, `bench/auth`)"),
        "bearer-tokens-criterion-cargo-bench---bench-auth-load-benchauth"
    );
    let document = Document {
        path: "x.md".to_owned(),
        text: "# A\n\n## A\n\n### `B` and C’s\n".to_owned(),
    };
    let anchors: Vec<_> = anchors(&document).into_iter().collect();
    assert_eq!(anchors, ["a", "a-1", "b-and-cs"]);
}

#[test]
fn a_marker_belongs_to_the_fence_right_after_it() {
    let document = Document {
        path: "x.md".to_owned(),
        text: "<!-- example: server -->\n```sh\nrun\n```\n\n<!-- example: varies id -->\n\ntext\n\n```json\n{}\n```\n".to_owned(),
    };
    let blocks = blocks(&document);
    let Block::Fence(first) = &blocks[0] else {
        panic!("{blocks:?}")
    };
    assert_eq!(
        (first.lang.as_str(), first.marker.as_deref()),
        ("sh", Some("server"))
    );
    assert!(
        matches!(&blocks[1], Block::StrayMarker { text, line: 6 } if text == "varies id"),
        "{blocks:?}"
    );
    assert!(matches!(&blocks[3], Block::Fence(f) if f.marker.is_none()));
}
