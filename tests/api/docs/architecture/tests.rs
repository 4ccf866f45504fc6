//! The checker checked: each rule finds what it exists to find in a made-up crate, so a clean
//! pass on `src/` means the code is clean, not that the reader saw nothing.

use super::rust_text::{blank, functions, uses};
use super::{Files, circles, imports};

fn crate_of(files: &[(&str, &str)]) -> Files {
    files
        .iter()
        .map(|(path, text)| ((*path).to_owned(), (*text).to_owned()))
        .collect()
}

#[test]
fn blanking_hides_what_literals_and_comments_hold_and_keeps_the_lines() {
    let source = "fn a() { let s = \"} fn b() {\"; } // fn c() {\n/* fn d() { /* */ } */ let c = '}';\nlet r = r#\"fn e() {\"#; fn f<'x>(v: &'x str) {}\n";
    let text = blank(source);
    assert_eq!(text.lines().count(), source.lines().count());
    let names: Vec<String> = functions(&text).into_iter().map(|f| f.name).collect();
    assert_eq!(names, ["a", "f"]);
}

#[test]
fn a_function_is_measured_from_its_fn_to_its_closing_brace() {
    let body = "    step();\n".repeat(81);
    let source = format!("fn short() {{}}\n\nfn long() {{\n{body}}}\nfn declared();\n");
    let found: Vec<(String, usize)> = functions(&blank(&source))
        .into_iter()
        .map(|f| (f.name.clone(), f.lines()))
        .collect();
    assert_eq!(found, [("short".to_owned(), 1), ("long".to_owned(), 83)]);
}

#[test]
fn use_trees_are_expanded_into_whole_paths() {
    let named: Vec<String> = uses(&blank(
        "use crate::a::{b, c::{self, D}, e as f};\nuse super::*;",
    ))
    .into_iter()
    .map(|n| n.path.join("::"))
    .collect();
    assert_eq!(
        named,
        [
            "crate::a::b",
            "crate::a::c",
            "crate::a::c::D",
            "crate::a::e",
            "super"
        ]
    );
}

#[test]
fn imports_resolve_through_re_exports_to_the_file_that_defines_the_item() {
    let files = crate_of(&[
        ("src/lib.rs", "mod a;\nmod b;"),
        (
            "src/a/mod.rs",
            "mod child;\nmod other;\npub use child::Thing;\n#[cfg(test)]\nmod tests { use crate::b::LIMIT; }",
        ),
        (
            "src/a/child.rs",
            "pub struct Thing;\npub fn f() -> usize { crate::b::LIMIT }",
        ),
        (
            "src/a/other.rs",
            "use super::Thing;\nfn g() { let _ = Vec::<u8>::new(); }",
        ),
        (
            "src/b.rs",
            "pub const LIMIT: usize = 1;\nfn h() -> crate::a::Thing { crate::a::Thing }",
        ),
    ]);
    let graph = imports(&files);
    let edges: Vec<String> = graph
        .iter()
        .flat_map(|(from, to)| to.iter().map(move |to| format!("{from} -> {to}")))
        .collect();
    // a/mod.rs -> a/child.rs is inside one room; the test module's import is no arrow.
    assert_eq!(
        edges,
        [
            "src/a/child.rs -> src/b.rs",
            "src/a/other.rs -> src/a/child.rs",
            "src/b.rs -> src/a/child.rs"
        ]
    );
    assert_eq!(circles(&graph), [["src/a/child.rs", "src/b.rs"]]);
}

#[test]
fn a_circle_through_three_files_is_found() {
    let files = crate_of(&[
        ("src/lib.rs", "mod a;\nmod b;\nmod c;"),
        ("src/a.rs", "use crate::b::B;"),
        ("src/b.rs", "use crate::c::C;"),
        ("src/c.rs", "fn f() { crate::a::g() }"),
    ]);
    assert_eq!(
        circles(&imports(&files)),
        [["src/a.rs", "src/b.rs", "src/c.rs"]]
    );
}
