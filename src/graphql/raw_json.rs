//! Parts of a response written as JSON once, instead of as async-graphql values serialized later.
//!
//! async-graphql gives a resolver one way to answer: a [`Value`] tree (an `IndexMap` with
//! SipHash for every object), which the HTTP layer then serializes and drops. For a page of 20
//! comments that tree and its serialization were a third of the request's instructions
//! (callgrind; BENCHMARKS.md, "An uncached page's instructions"). The plain lists of
//! `graphql::plain` and `graphql::plain_pager` write their JSON themselves into a [`Writer`],
//! whose text travels through async-graphql as a [`Value::Binary`] marked with [`MARK`] (no
//! field of the schema answers bytes, so nothing a client stores can look like one), and
//! [`write_data`] writes `data` with that text in place.
//!
//! Only a request whose response [`write_data`] writes may hold such values: the HTTP layer
//! puts [`RawJson`] in its data, and the plain paths write JSON only when they find it (a
//! subscription's event, the storefront's checks and tests that execute the schema directly get
//! async-graphql's values as before). The bytes are the same either way:
//! `tests/api/graphql/plain_pages.rs` compares them.
//!
//! This can go when async-graphql lets a resolver answer with JSON text, or with
//! `graphql::plain`.

use async_graphql::{ContextBase, Value};
use bytes::Bytes;
use serde::Serialize;

/// In a request's data: its response is written by [`write_data`], so resolvers may answer
/// with [`Writer`]'s JSON.
#[derive(Clone, Copy, Debug)]
pub struct RawJson;

/// What starts every [`Value::Binary`] that holds JSON text.
const MARK: &[u8] = b"\0dynapage/raw-json\0";

/// Whether the request of `ctx` lets resolvers answer with JSON text.
pub(super) fn allowed<T>(ctx: &ContextBase<'_, T>) -> bool {
    ctx.data_opt::<RawJson>().is_some()
}

/// JSON text being written, to answer with as one value ([`Writer::finish`]).
pub(super) struct Writer(Vec<u8>);

impl Writer {
    /// A writer for about `capacity` bytes of JSON.
    pub(super) fn new(capacity: usize) -> Self {
        let mut bytes = Vec::with_capacity(MARK.len() + capacity);
        bytes.extend_from_slice(MARK);
        Self(bytes)
    }

    /// Raw text, which must be valid JSON where it stands (punctuation, a key that needs no
    /// escaping, a number or an id of base64url characters).
    pub(super) fn raw(&mut self, text: &str) -> &mut Self {
        self.0.extend_from_slice(text.as_bytes());
        self
    }

    /// `"key":`, for a response key (a GraphQL name: letters, digits and `_`, nothing to escape).
    pub(super) fn key(&mut self, key: &str) -> &mut Self {
        self.0.push(b'"');
        self.0.extend_from_slice(key.as_bytes());
        self.0.extend_from_slice(b"\":");
        self
    }

    /// A string, escaped as serde_json escapes it (what async-graphql's values serialize to).
    /// Most texts need no escape: those are copied whole after one pass that the compiler
    /// vectorizes, where serde_json looks each byte up in its escape table.
    pub(super) fn string(&mut self, text: &str) -> &mut Self {
        if needs_escape(text.as_bytes()) {
            serialize(&mut self.0, text);
        } else {
            self.0.reserve(text.len() + 2);
            self.0.push(b'"');
            self.0.extend_from_slice(text.as_bytes());
            self.0.push(b'"');
        }
        self
    }

    /// A string whose text JSON writes as it is (base64url, an RFC 3339 instant: printable
    /// ASCII without `"` or `\\`), written without looking for escapes.
    pub(super) fn plain_string(&mut self, text: &[u8]) -> &mut Self {
        debug_assert!(
            text.iter()
                .all(|b| b.is_ascii_graphic() && !matches!(b, b'"' | b'\\'))
        );
        self.0.reserve(text.len() + 2);
        self.0.push(b'"');
        self.0.extend_from_slice(text);
        self.0.push(b'"');
        self
    }

    /// An integer.
    pub(super) fn int(&mut self, value: i64) -> &mut Self {
        serialize(&mut self.0, &value);
        self
    }

    /// `true` or `false`.
    pub(super) fn boolean(&mut self, value: bool) -> &mut Self {
        self.raw(if value { "true" } else { "false" })
    }

    /// A list of `items`, each written by `item`.
    pub(super) fn list<T>(
        &mut self,
        items: impl IntoIterator<Item = T>,
        mut item: impl FnMut(&mut Self, T),
    ) -> &mut Self {
        self.0.push(b'[');
        for (at, value) in items.into_iter().enumerate() {
            if at > 0 {
                self.0.push(b',');
            }
            item(self, value);
        }
        self.0.push(b']');
        self
    }

    /// An object of `fields` (response key, what it is), each value written by `value`.
    pub(super) fn object<F>(
        &mut self,
        fields: &[(async_graphql::Name, F)],
        mut value: impl FnMut(&mut Self, &F),
    ) -> &mut Self {
        self.0.push(b'{');
        for (at, (key, field)) in fields.iter().enumerate() {
            if at > 0 {
                self.0.push(b',');
            }
            self.key(key.as_str());
            value(self, field);
        }
        self.0.push(b'}');
        self
    }

    /// The value that carries the text to [`write_data`].
    pub(super) fn finish(self) -> Value {
        Value::Binary(Bytes::from(self.0))
    }
}

/// Whether serde_json escapes any byte of `text`: `"`, `\\` and the controls below U+0020
/// (it leaves the rest, non-ASCII and DEL included, as they are). No early exit, so that the
/// loop is vectorized.
fn needs_escape(text: &[u8]) -> bool {
    text.iter().fold(false, |any, &b| {
        any | (b < 0x20) | (b == b'"') | (b == b'\\')
    })
}

/// Serializes `value` after `out`'s bytes, as serde_json does.
fn serialize(out: &mut Vec<u8>, value: &(impl Serialize + ?Sized)) {
    // Writing into a `Vec` cannot fail, and strings, integers and async-graphql's values
    // always serialize: there is no error to report.
    let _ = serde_json::to_writer(out, value);
}

/// Writes a response's `data` as JSON after `out`'s bytes: the bytes serde_json writes for
/// `data`, with the text of every [`Writer`] value in its place.
pub fn write_data(out: &mut Vec<u8>, data: &Value) {
    match data {
        Value::Binary(bytes) if bytes.starts_with(MARK) => {
            out.extend_from_slice(&bytes[MARK.len()..]);
        }
        Value::List(items) => {
            out.push(b'[');
            for (at, item) in items.iter().enumerate() {
                if at > 0 {
                    out.push(b',');
                }
                write_data(out, item);
            }
            out.push(b']');
        }
        Value::Object(fields) => {
            out.push(b'{');
            for (at, (key, value)) in fields.iter().enumerate() {
                if at > 0 {
                    out.push(b',');
                }
                serialize(out, key.as_str());
                out.push(b':');
                write_data(out, value);
            }
            out.push(b'}');
        }
        other => serialize(out, other),
    }
}

#[cfg(test)]
mod tests {
    use async_graphql::indexmap::IndexMap;
    use async_graphql::{Name, Number};

    use super::*;

    fn written(data: &Value) -> String {
        let mut out = Vec::new();
        write_data(&mut out, data);
        String::from_utf8(out).expect("JSON is UTF-8")
    }

    #[test]
    fn values_are_written_as_serde_json_writes_them() {
        let mut object = IndexMap::new();
        object.insert(Name::new("s"), Value::String("a \"q\"\n\u{1}é/".into()));
        object.insert(Name::new("n"), Value::Number(Number::from(-7)));
        object.insert(
            Name::new("f"),
            Value::Number(Number::from_f64(1.5).expect("finite")),
        );
        object.insert(Name::new("e"), Value::Enum(Name::new("NEWEST")));
        object.insert(Name::new("l"), Value::List(vec![Value::Null, true.into()]));
        object.insert(Name::new("o"), Value::Object(IndexMap::new()));
        object.insert(Name::new("b"), Value::Binary(Bytes::from_static(b"\x01x")));
        let data = Value::List(vec![Value::Object(object), Value::List(vec![])]);
        assert_eq!(
            written(&data),
            serde_json::to_string(&data).expect("serializes")
        );
    }

    #[test]
    fn strings_are_escaped_as_serde_json_escapes_them() {
        let mut texts: Vec<String> = (0u8..=0x7f).map(|b| format!("ab{}cd", b as char)).collect();
        texts.extend(
            [
                "",
                "plain text of a review, long enough to fill a vector or two",
                "é 😀 \u{7f}",
            ]
            .map(String::from),
        );
        texts.push("x".repeat(40) + "\"" + &"y".repeat(40));
        for text in texts {
            let mut writer = Writer::new(0);
            writer.string(&text);
            let written = &writer.0[MARK.len()..];
            assert_eq!(
                written,
                serde_json::to_vec(&text).expect("serializes"),
                "{text:?}"
            );
        }
    }

    #[test]
    fn a_writers_text_is_written_in_its_place() {
        let mut writer = Writer::new(16);
        let fields = [(Name::new("k"), 1), (Name::new("m"), 2)];
        writer.list(["x\"", "y"], |w, s| {
            w.object(&fields, |w, n| {
                if *n == 1 {
                    w.string(s);
                } else {
                    w.raw("[").int(i64::MIN).raw(",").boolean(false).raw("]");
                }
            });
        });
        let mut object = IndexMap::new();
        object.insert(Name::new("edges"), writer.finish());
        assert_eq!(
            written(&Value::Object(object)),
            format!(
                r#"{{"edges":[{{"k":"x\"","m":[{min},false]}},{{"k":"y","m":[{min},false]}}]}}"#,
                min = i64::MIN
            )
        );
    }
}
