//! The one way this server parses a GraphQL document: [`parse`], which first counts how deeply
//! the text's brackets nest and refuses past [`MAX_BRACKET_NESTING`], before any recursive code
//! sees it.
//!
//! Why: async-graphql-parser 7.2.1 bounds the nesting of selection sets (64) but not of values.
//! Its conversion of a list or object value (`parse_value`) calls itself once per level, so
//! `{ __typename(a: [[[ … 1,500 levels … ]]]) }`, a 3 kB text, overflowed a worker thread's
//! stack, and Rust aborts the whole process on a stack overflow: one anonymous request over
//! POST, over GET (a link anyone can post) or in a WebSocket `subscribe` took the server down.
//! The same holds for object values (`{a: {a: …}}`), variable defaults and directive
//! arguments, and validation and execution walk values recursively too. A count on the text
//! needs no recursion and no allocation: it bounds every value, selection set and argument list
//! at once, whatever position they are in. This wrapper can go when the parser bounds values
//! itself (then keep the test that parses a document nested to the bound on a small stack).
//!
//! The count skips what is not structure: strings (`"…"` with escapes, `"""…"""` block strings)
//! and comments (`#` to the end of the line). A text that is not GraphQL at all is left to the
//! parser to refuse, with its usual message.

use async_graphql::parser::types::ExecutableDocument;

/// The deepest bracket nesting (`{`, `[` and `(`, counted together) a document may have.
///
/// Why 128: a selection set nests at most 64 deep (the parser's own bound) and a field's
/// arguments and values sit inside it, so no document a client writes comes near it (the
/// standard introspection query nests 13 deep). 128 levels parse on a quarter of a tokio
/// worker's 2 MiB stack in a debug build (`a_document_nested_to_the_bound_parses_on_a_small_stack`),
/// so validation and execution keep room to walk them.
pub const MAX_BRACKET_NESTING: usize = 128;

/// Why a text was not parsed.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum Unparsed {
    /// The text nests brackets past [`MAX_BRACKET_NESTING`]; counted up to the first level past
    /// it, so the message cannot say how deep it really goes.
    #[error(
        "the document nests brackets ({{, [ and ( together) more than {MAX_BRACKET_NESTING} deep; \
         at most {MAX_BRACKET_NESTING} are allowed"
    )]
    TooDeep,
    /// The parser's own error (a syntax error, a duplicate operation name…).
    #[error("{0}")]
    Syntax(String),
}

/// Parses `text` as an executable document, after [`check`] passed.
pub fn parse(text: &str) -> Result<ExecutableDocument, Unparsed> {
    check(text)?;
    async_graphql::parser::parse_query(text).map_err(|e| Unparsed::Syntax(e.to_string()))
}

/// Counts how deeply `text`'s brackets nest, outside strings and comments, and refuses past
/// [`MAX_BRACKET_NESTING`]. Brackets that close more than they open count as 0 (the parser
/// refuses such a text anyway).
pub fn check(text: &str) -> Result<(), Unparsed> {
    let bytes = text.as_bytes();
    let mut depth = 0usize;
    let mut at = 0;
    while let Some(&byte) = bytes.get(at) {
        match byte {
            b'{' | b'[' | b'(' => {
                depth += 1;
                if depth > MAX_BRACKET_NESTING {
                    return Err(Unparsed::TooDeep);
                }
            }
            b'}' | b']' | b')' => depth = depth.saturating_sub(1),
            b'#' => at = line_end(bytes, at),
            b'"' if bytes[at..].starts_with(b"\"\"\"") => at = block_string_end(bytes, at + 3),
            b'"' => at = string_end(bytes, at + 1),
            _ => {}
        }
        at += 1;
    }
    Ok(())
}

/// The index of the line break that ends the comment at `at` (or the text's last index).
fn line_end(bytes: &[u8], at: usize) -> usize {
    bytes[at..]
        .iter()
        .position(|&b| b == b'\n' || b == b'\r')
        .map_or(bytes.len(), |n| at + n)
}

/// The index of the `"` that closes the string whose content starts at `from` (a line break
/// ends an unclosed one: GraphQL strings hold none).
fn string_end(bytes: &[u8], from: usize) -> usize {
    let mut at = from;
    while let Some(&byte) = bytes.get(at) {
        match byte {
            b'\\' => at += 1,
            b'"' | b'\n' | b'\r' => return at,
            _ => {}
        }
        at += 1;
    }
    bytes.len()
}

/// The index of the last `"` of the `"""` that closes the block string whose content starts at
/// `from` (`\"""` does not close it).
fn block_string_end(bytes: &[u8], from: usize) -> usize {
    let mut at = from;
    while at < bytes.len() {
        if bytes[at..].starts_with(b"\\\"\"\"") {
            at += 4;
        } else if bytes[at..].starts_with(b"\"\"\"") {
            return at + 2;
        } else {
            at += 1;
        }
    }
    bytes.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nested(open: &str, close: &str, levels: usize) -> String {
        format!(
            "{{ __typename(a: {}1{}) }}",
            open.repeat(levels),
            close.repeat(levels)
        )
    }

    #[test]
    fn every_kind_of_bracket_counts_toward_one_bound() {
        // The selection set and the argument list are two levels.
        let inside = MAX_BRACKET_NESTING - 2;
        assert_eq!(check(&nested("[", "]", inside)), Ok(()));
        assert_eq!(check(&nested("[", "]", inside + 1)), Err(Unparsed::TooDeep));
        let objects = format!(
            "{{ __typename(a: {}1{}) }}",
            "{a: ".repeat(inside + 1),
            "}".repeat(inside + 1)
        );
        assert_eq!(check(&objects), Err(Unparsed::TooDeep));
        let mixed = format!(
            "query($v: Int = {}1{}) {{ __typename }}",
            "[{a: ".repeat(70),
            "}]".repeat(70)
        );
        assert_eq!(check(&mixed), Err(Unparsed::TooDeep), "variable defaults");
        let directive = format!(
            "{{ __typename @include(if: {}true{}) }}",
            "[".repeat(inside + 1),
            "]".repeat(inside + 1)
        );
        assert_eq!(check(&directive), Err(Unparsed::TooDeep), "directives");
        let selections = format!("{}a{}", "{ a ".repeat(129), "}".repeat(129));
        assert_eq!(check(&selections), Err(Unparsed::TooDeep));
    }

    #[test]
    fn brackets_in_strings_and_comments_are_not_structure() {
        let many = "[".repeat(10_000);
        let texts = [
            format!("{{ a(b: \"{many}\") }}"),
            format!("{{ a(b: \"\\\"{many}\") }}"),
            format!("{{ a(b: \"\"\"{many} \\\"\"\" {many}\"\"\") }}"),
            format!("# {many}\n{{ a }}"),
            format!("{{ a # {many}\r b }}"),
        ];
        for text in &texts {
            assert_eq!(check(text), Ok(()), "{}", &text[..40]);
            parse(text).expect("each is a valid document");
        }
        // A string does not hide what follows it.
        let after = format!("{{ a(b: \"x\", c: {}1{}) }}", many, "]".repeat(10_000));
        assert_eq!(check(&after), Err(Unparsed::TooDeep));
        // An unclosed string ends at its line: what follows still counts.
        let unclosed = format!("{{ a(b: \"x\n{many}) }}");
        assert_eq!(check(&unclosed), Err(Unparsed::TooDeep));
    }

    #[test]
    fn the_standard_introspection_query_passes() {
        let type_ref = "fragment TypeRef on __Type { kind name ofType { kind name ofType { kind name ofType { kind name ofType { kind name ofType { kind name ofType { kind name ofType { kind name ofType { kind name ofType { kind name } } } } } } } } } }";
        let text = format!(
            "query IntrospectionQuery {{ __schema {{ types {{ fields(includeDeprecated: true) {{ args {{ type {{ ...TypeRef }} }} }} }} }} }} {type_ref}"
        );
        assert_eq!(check(&text), Ok(()));
    }

    #[test]
    fn what_is_refused_is_never_parsed_and_syntax_errors_keep_the_parsers_message() {
        let deep = nested("[", "]", 1_500);
        assert_eq!(parse(&deep).err(), Some(Unparsed::TooDeep));
        let broken = parse("{ a(").expect_err("a syntax error");
        assert!(
            matches!(broken, Unparsed::Syntax(ref m) if m.contains("1:5")),
            "{broken}"
        );
    }

    /// The bound leaves room: a document nested to it, in every value position, parses on a
    /// thread with a quarter of a tokio worker's stack, in this (debug) build.
    #[test]
    fn a_document_nested_to_the_bound_parses_on_a_small_stack() {
        let inside = MAX_BRACKET_NESTING - 2;
        let lists = nested("[", "]", inside);
        let objects = format!(
            "{{ __typename(a: {}1{}) }}",
            "{a: ".repeat(inside),
            "}".repeat(inside)
        );
        let parsed = std::thread::Builder::new()
            .stack_size(512 * 1024)
            .spawn(move || [lists, objects].iter().all(|text| parse(text).is_ok()))
            .expect("a thread")
            .join()
            .expect("no stack overflow");
        assert!(parsed);
    }
}
