//! Just enough of Rust's lexical structure to measure a source file: its text with comments and
//! literals blanked (so a `{` or a `fn` in a string counts for nothing), the span of every
//! function with a body, the inline `mod x { … }` blocks, and every module path it names
//! (`use` trees expanded, and paths in code that start at `crate`, `super`, `self` or a child
//! module). Line numbers survive: blanking keeps every newline.

/// `src` with every comment and the inside of every string, byte string, raw string and char
/// literal replaced by spaces (quotes kept), newlines kept. Lifetimes stay as they are.
pub fn blank(src: &str) -> String {
    let b = src.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    let blank_to = |out: &mut Vec<u8>, from: usize, to: usize| {
        out.extend(
            b[from..to]
                .iter()
                .map(|&c| if c == b'\n' { b'\n' } else { b' ' }),
        );
    };
    while i < b.len() {
        let at = |k: usize| b.get(i + k).copied().unwrap_or(0);
        let after_ident = i > 0 && is_ident(b[i - 1]);
        if at(0) == b'/' && at(1) == b'/' {
            let end = b[i..]
                .iter()
                .position(|&c| c == b'\n')
                .map_or(b.len(), |n| i + n);
            blank_to(&mut out, i, end);
            i = end;
        } else if at(0) == b'/' && at(1) == b'*' {
            let (mut depth, mut j) = (0usize, i);
            while j < b.len() {
                if b[j] == b'/' && b.get(j + 1) == Some(&b'*') {
                    depth += 1;
                    j += 2;
                } else if b[j] == b'*' && b.get(j + 1) == Some(&b'/') {
                    depth -= 1;
                    j += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    j += 1;
                }
            }
            blank_to(&mut out, i, j);
            i = j;
        } else if let Some((open, hashes)) = raw_string_start(b, i).filter(|_| !after_ident) {
            // r"…", r#"…"#, br"…": the prefix stays, the inside goes.
            out.extend_from_slice(&b[i..open + 1]);
            let close = [b"\"".as_slice(), &vec![b'#'; hashes]].concat();
            let end = find(b, open + 1, &close).unwrap_or(b.len());
            blank_to(&mut out, open + 1, end);
            out.extend_from_slice(&b[end..(end + close.len()).min(b.len())]);
            i = end + close.len();
        } else if at(0) == b'"' {
            let mut j = i + 1;
            while j < b.len() && b[j] != b'"' {
                j += if b[j] == b'\\' { 2 } else { 1 };
            }
            out.push(b'"');
            blank_to(&mut out, i + 1, j.min(b.len()));
            out.push(b'"');
            i = j + 1;
        } else if at(0) == b'\'' {
            match char_literal_end(b, i) {
                Some(end) => {
                    out.push(b'\'');
                    blank_to(&mut out, i + 1, end);
                    out.push(b'\'');
                    i = end + 1;
                }
                None => {
                    out.push(b'\'');
                    i += 1;
                }
            }
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    out.truncate(b.len());
    String::from_utf8(out).expect("only whole characters were replaced, by ASCII")
}

fn is_ident(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

fn find(b: &[u8], from: usize, needle: &[u8]) -> Option<usize> {
    (from..b.len()).find(|&j| b[j..].starts_with(needle))
}

/// Where the opening quote of a raw string starting at `i` is, and its number of `#`s.
fn raw_string_start(b: &[u8], i: usize) -> Option<(usize, usize)> {
    let mut j = i;
    if b.get(j) == Some(&b'b') {
        j += 1;
    }
    if b.get(j) != Some(&b'r') {
        return None;
    }
    j += 1;
    let hashes = b[j..].iter().take_while(|&&c| c == b'#').count();
    (b.get(j + hashes) == Some(&b'"')).then_some((j + hashes, hashes))
}

/// The closing quote of the char literal opening at `i`, or `None` for a lifetime or label.
fn char_literal_end(b: &[u8], i: usize) -> Option<usize> {
    let next = *b.get(i + 1)?;
    if next == b'\\' {
        return (i + 2..b.len().min(i + 12)).find(|&j| b[j] == b'\'');
    }
    let width = match next {
        0x00..=0x7f => 1,
        0xc0..=0xdf => 2,
        0xe0..=0xef => 3,
        _ => 4,
    };
    (b.get(i + 1 + width) == Some(&b'\'')).then_some(i + 1 + width)
}

/// A function with a body: its name and the lines (1-based) of its `fn` and its closing brace.
#[derive(Debug)]
pub struct Function {
    pub name: String,
    pub first: usize,
    pub last: usize,
}

impl Function {
    pub fn lines(&self) -> usize {
        self.last - self.first + 1
    }
}

/// Every `fn name … { … }` of blanked text (declarations without a body are left out).
pub fn functions(text: &str) -> Vec<Function> {
    let b = text.as_bytes();
    let mut found = Vec::new();
    for start in words(text, "fn") {
        let name: String = text[start + 2..]
            .trim_start()
            .chars()
            .take_while(|&c| c.is_alphanumeric() || c == '_')
            .collect();
        if name.is_empty() {
            continue; // a `fn(…)` type
        }
        let Some(open) = (start..b.len()).find(|&j| b[j] == b'{' || b[j] == b';') else {
            continue;
        };
        if b[open] == b';' {
            continue;
        }
        let close = matching_brace(b, open);
        found.push(Function {
            name,
            first: line_of(text, start),
            last: line_of(text, close),
        });
    }
    found
}

/// The `}` closing the `{` at `open` (the end of the text if it never closes).
pub fn matching_brace(b: &[u8], open: usize) -> usize {
    let mut depth = 0usize;
    for (j, &c) in b.iter().enumerate().skip(open) {
        match c {
            b'{' => depth += 1,
            b'}' => {
                depth -= 1;
                if depth == 0 {
                    return j;
                }
            }
            _ => {}
        }
    }
    b.len().saturating_sub(1)
}

pub fn line_of(text: &str, at: usize) -> usize {
    text.as_bytes()[..at]
        .iter()
        .filter(|&&c| c == b'\n')
        .count()
        + 1
}

/// The byte offsets where `word` stands as a whole word.
pub fn words<'a>(text: &'a str, word: &'a str) -> impl Iterator<Item = usize> + 'a {
    let b = text.as_bytes();
    text.match_indices(word)
        .map(|(at, _)| at)
        .filter(move |&at| {
            let end = at + word.len();
            (at == 0 || !is_ident(b[at - 1])) && (end == b.len() || !is_ident(b[end]))
        })
}

/// An inline module, `mod name { … }`: its name, the bytes its braces span, and whether it is
/// compiled for tests only (`#[cfg(test)]` before it).
#[derive(Debug)]
pub struct InlineModule {
    pub name: String,
    pub open: usize,
    pub close: usize,
    pub test: bool,
}

pub fn inline_modules(text: &str) -> Vec<InlineModule> {
    let b = text.as_bytes();
    let mut found = Vec::new();
    for start in words(text, "mod") {
        let rest = &text[start + 3..];
        let name: String = rest
            .trim_start()
            .chars()
            .take_while(|&c| c.is_alphanumeric() || c == '_')
            .collect();
        let after = rest.trim_start()[name.len()..].trim_start();
        if name.is_empty() || !after.starts_with('{') {
            continue;
        }
        let open = b.len() - after.len();
        let test = for_tests_only(text, start);
        found.push(InlineModule {
            name,
            open,
            close: matching_brace(b, open),
            test,
        });
    }
    found
}

/// A path the text names, as written (`crate::a::B` is `["crate", "a", "B"]`), and where; for a
/// `use`, the name it brings into scope (its last segment, its `as` alias, or `*` for a glob).
#[derive(Debug, PartialEq)]
pub struct Named {
    pub at: usize,
    pub path: Vec<String>,
    pub name: Option<String>,
}

/// Every `use` tree of blanked text, expanded into whole paths (`use a::{b, c::d}` names
/// `a::b` and `a::c::d`; `self` in a group names the group's prefix).
pub fn uses(text: &str) -> Vec<Named> {
    let mut found = Vec::new();
    for start in words(text, "use") {
        let Some(len) = text[start..].find(';') else {
            continue;
        };
        let tree = &text[start + 3..start + len];
        let tokens = tokens(tree);
        let mut at = 0;
        expand(&tokens, &mut at, Vec::new(), &mut |path, name| {
            found.push(Named {
                at: start,
                path,
                name: Some(name),
            })
        });
    }
    found
}

fn tokens(tree: &str) -> Vec<String> {
    let mut tokens = Vec::new();
    let mut chars = tree.chars().peekable();
    while let Some(c) = chars.next() {
        if c.is_alphanumeric() || c == '_' {
            let mut word = c.to_string();
            while let Some(&n) = chars.peek().filter(|n| n.is_alphanumeric() || **n == '_') {
                word.push(n);
                chars.next();
            }
            tokens.push(word);
        } else if matches!(c, '{' | '}' | ',' | '*') {
            tokens.push(c.to_string());
        }
    }
    tokens
}

/// One use tree from `tokens[*at..]` onto `prefix`; stops after the tree (at `,`, `}` or end).
/// `out` gets each whole path and the name it binds.
fn expand(
    tokens: &[String],
    at: &mut usize,
    prefix: Vec<String>,
    out: &mut impl FnMut(Vec<String>, String),
) {
    let mut path = prefix;
    let mut name = None;
    while let Some(token) = tokens.get(*at) {
        match token.as_str() {
            "{" => {
                *at += 1;
                while tokens.get(*at).is_some_and(|t| t != "}") {
                    expand(tokens, at, path.clone(), out);
                    if tokens.get(*at).is_some_and(|t| t == ",") {
                        *at += 1;
                    }
                }
                *at += 1;
                return;
            }
            "}" | "," => break,
            "*" => {
                name = Some("*".to_owned());
                *at += 1;
            }
            "as" => {
                name = tokens.get(*at + 1).cloned();
                *at += 2;
            }
            "self" if !path.is_empty() => *at += 1,
            word => {
                path.push(word.to_owned());
                *at += 1;
            }
        }
    }
    if let Some(last) = path.last().cloned() {
        out(path, name.unwrap_or(last));
    }
}

/// Paths in code (outside `use` items) that start with `first` for which `starts` is true,
/// such as `crate::purge::tags(…)` or `super::Thing`.
pub fn paths_in_code(text: &str, starts: impl Fn(&str) -> bool) -> Vec<Named> {
    let b = text.as_bytes();
    let mut found = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let word_start = is_ident(b[i]) && (i == 0 || !is_ident(b[i - 1]) && b[i - 1] != b':');
        if !word_start {
            i += 1;
            continue;
        }
        let (start, mut path, mut j) = (i, Vec::new(), i);
        loop {
            let end = (j..b.len()).find(|&k| !is_ident(b[k])).unwrap_or(b.len());
            path.push(text[j..end].to_owned());
            if text[end..].starts_with("::") && b.get(end + 2).is_some_and(|&c| is_ident(c)) {
                j = end + 2;
            } else {
                i = end;
                break;
            }
        }
        let group = text[i..].starts_with("::{") || text[i..].starts_with("::*");
        if path.len() > 1 && !group && starts(&path[0]) {
            found.push(Named {
                at: start,
                path,
                name: None,
            });
        }
    }
    found
}

/// Whether blanked text defines an item called `name` at any depth (a `fn`, a type, a trait, a
/// constant, a static or a module): enough to follow a glob import to the file behind it.
pub fn defines(text: &str, name: &str) -> bool {
    words(text, name).any(|at| {
        let before = text[..at].trim_end();
        [
            "fn",
            "struct",
            "enum",
            "union",
            "trait",
            "type",
            "const",
            "static",
            "mod",
            "macro_rules!",
        ]
        .iter()
        .any(|keyword| {
            before.ends_with(keyword)
                && words(before, keyword).last() == Some(before.len() - keyword.len())
        })
    })
}

/// Whether the item starting at `at` (its `mod`, after any `pub`) is under `#[cfg(test)]`.
pub fn for_tests_only(text: &str, at: usize) -> bool {
    let before = text[..at].trim_end();
    let before = before.strip_suffix("pub").unwrap_or(before).trim_end();
    before.ends_with("#[cfg(test)]")
}
