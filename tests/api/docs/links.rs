//! Every link of the front doors resolves: a relative link names a file or directory of the
//! repository, and an `#anchor` a heading of the Markdown file it points into (of the same
//! file when it is alone). `mdbook build` checks neither, so this is the book's link check; it
//! reads links as GitHub shows them, relative to the file, which is also how mdbook turns
//! them into pages. And every chapter under `docs/` is in `docs/SUMMARY.md`, so none is left
//! out of the book.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use super::markdown::{Document, anchors, book_chapters, linked_documents, links};

/// `a/b/../c/./d` → `a/c/d`; `None` when it climbs out of the repository.
fn normalize(path: &str) -> Option<String> {
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            part => parts.push(part),
        }
    }
    Some(parts.join("/"))
}

/// What is wrong with `target`, linked from `document`, if anything.
fn broken(
    document: &Document,
    target: &str,
    anchors_of: &mut BTreeMap<String, BTreeSet<String>>,
) -> Option<String> {
    if target.starts_with("http://")
        || target.starts_with("https://")
        || target.starts_with("mailto:")
    {
        return None;
    }
    let (path, anchor) = match target.split_once('#') {
        Some((path, anchor)) => (path, Some(anchor)),
        None => (target, None),
    };
    let file = if path.is_empty() {
        document.path.clone()
    } else if path.starts_with('/') {
        return Some("an absolute path (write it relative to this file)".to_owned());
    } else {
        let joined = if document.dir().is_empty() {
            path.to_owned()
        } else {
            format!("{}/{path}", document.dir())
        };
        match normalize(&joined) {
            Some(file) => file,
            None => return Some("leaves the repository".to_owned()),
        }
    };
    let full = Path::new(env!("CARGO_MANIFEST_DIR")).join(&file);
    if !full.exists() {
        return Some(format!("no such file: {file}"));
    }
    let anchor = anchor?;
    if !file.ends_with(".md") {
        return Some(format!("an anchor into {file}, which is not Markdown"));
    }
    let anchors = anchors_of
        .entry(file.clone())
        .or_insert_with(|| anchors(&Document::read(&file)));
    (!anchors.contains(anchor)).then(|| format!("no heading in {file} has the anchor #{anchor}"))
}

#[test]
fn every_link_of_the_readme_the_book_and_the_benchmarks_resolves() {
    let mut anchors_of = BTreeMap::new();
    let mut problems = Vec::new();
    let mut checked = 0;
    for document in linked_documents() {
        for link in links(&document) {
            checked += 1;
            if let Some(problem) = broken(&document, &link.target, &mut anchors_of) {
                problems.push(format!(
                    "{}:{}: ({}) {problem}",
                    document.path, link.line, link.target
                ));
            }
        }
    }
    assert!(checked > 100, "only {checked} links were found");
    assert!(
        problems.is_empty(),
        "{} broken links:\n{}",
        problems.len(),
        problems.join("\n")
    );
}

#[test]
fn the_link_check_finds_a_missing_file_and_a_missing_anchor() {
    let document = Document {
        path: "docs/api/x.md".to_owned(),
        text: String::new(),
    };
    let mut anchors_of = BTreeMap::new();
    let mut check = |target: &str| broken(&document, target, &mut anchors_of);
    assert_eq!(check("../../README.md#quick-start"), None);
    assert_eq!(check("../../src/lib.rs"), None);
    assert_eq!(check("https://example.com/x"), None);
    assert!(check("../../README.md#no-such-heading").is_some());
    assert!(check("../no-such-chapter.md").is_some());
    assert!(check("../../../outside").is_some());
    assert!(check("../../src/lib.rs#L1").is_some());
}

#[test]
fn every_chapter_under_docs_is_in_the_summary() {
    let summary = Document::read("docs/SUMMARY.md");
    let listed: BTreeSet<String> = links(&summary)
        .into_iter()
        .filter_map(|link| normalize(&format!("docs/{}", link.target)))
        .collect();
    let missing: Vec<String> = book_chapters()
        .into_iter()
        .filter(|chapter| !listed.contains(chapter))
        .collect();
    assert!(
        missing.is_empty(),
        "chapters not in docs/SUMMARY.md (mdbook would leave them out): {missing:?}"
    );
}
