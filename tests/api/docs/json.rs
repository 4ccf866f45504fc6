//! JSON read as written, key order included, so that a shown answer is compared with the
//! server's bytes as a reader compares them (serde_json's `Value` sorts keys here), and written
//! back for `DOCS_BLESS=1` in the shape the docs use: a value on one line when it fits, else
//! one member a line.

/// A JSON value with its object members in order and its numbers as written.
#[derive(Clone, Debug, PartialEq)]
pub enum Json {
    Null,
    Bool(bool),
    Number(String),
    String(String),
    Array(Vec<Json>),
    Object(Vec<(String, Json)>),
}

impl Json {
    pub fn parse(text: &str) -> Result<Json, String> {
        let mut parser = Parser { text, at: 0 };
        let value = parser.value()?;
        parser.space();
        if parser.at != text.len() {
            return Err(format!("text after the value at byte {}", parser.at));
        }
        Ok(value)
    }

    fn kind(&self) -> &'static str {
        match self {
            Json::Null => "null",
            Json::Bool(_) => "a boolean",
            Json::Number(_) => "a number",
            Json::String(_) => "a string",
            Json::Array(_) => "an array",
            Json::Object(_) => "an object",
        }
    }

    /// The value on one line: `{ "a": 1, "b": [2, 3] }`.
    fn one_line(&self) -> String {
        match self {
            Json::Null => "null".to_owned(),
            Json::Bool(b) => b.to_string(),
            Json::Number(n) => n.clone(),
            Json::String(s) => serde_json::to_string(s).expect("a string serializes"),
            Json::Array(items) if items.is_empty() => "[]".to_owned(),
            Json::Array(items) => {
                let items: Vec<String> = items.iter().map(Json::one_line).collect();
                format!("[{}]", items.join(", "))
            }
            Json::Object(members) if members.is_empty() => "{}".to_owned(),
            Json::Object(members) => {
                let members: Vec<String> = members
                    .iter()
                    .map(|(key, value)| format!("{}: {}", quoted(key), value.one_line()))
                    .collect();
                format!("{{ {} }}", members.join(", "))
            }
        }
    }

    /// The value as the docs show it: on one line when it fits in `width` columns from
    /// `column`, where it starts, else one member or item a line, indented from `indent`.
    pub fn pretty(&self, indent: usize, column: usize, width: usize) -> String {
        let line = self.one_line();
        if column + line.len() <= width {
            return line;
        }
        let inner = indent + 2;
        let pad = " ".repeat(inner);
        match self {
            Json::Array(items) => {
                let items: Vec<String> = items
                    .iter()
                    .map(|item| format!("{pad}{}", item.pretty(inner, inner, width)))
                    .collect();
                format!("[\n{}\n{}]", items.join(",\n"), " ".repeat(indent))
            }
            Json::Object(members) => {
                let members: Vec<String> = members
                    .iter()
                    .map(|(key, value)| {
                        let key = quoted(key);
                        let value = value.pretty(inner, inner + key.len() + 2, width);
                        format!("{pad}{key}: {value}")
                    })
                    .collect();
                format!("{{\n{}\n{}}}", members.join(",\n"), " ".repeat(indent))
            }
            _ => line,
        }
    }
}

fn quoted(key: &str) -> String {
    serde_json::to_string(key).expect("a string serializes")
}

/// Where `shown` and `served` differ, by path; the values of `varies` keys may differ, not
/// their kind.
pub fn differences(shown: &Json, served: &Json, varies: &[String]) -> Vec<String> {
    let mut found = Vec::new();
    compare(shown, served, varies, "$", &mut found);
    found
}

fn compare(shown: &Json, served: &Json, varies: &[String], path: &str, found: &mut Vec<String>) {
    match (shown, served) {
        (Json::Object(a), Json::Object(b)) => {
            let keys_a: Vec<&str> = a.iter().map(|(k, _)| k.as_str()).collect();
            let keys_b: Vec<&str> = b.iter().map(|(k, _)| k.as_str()).collect();
            if keys_a != keys_b {
                found.push(format!("{path}: keys {keys_a:?} shown, {keys_b:?} served"));
                return;
            }
            for ((key, a), (_, b)) in a.iter().zip(b) {
                let path = format!("{path}.{key}");
                if varies.iter().any(|v| v == key) {
                    if a.kind() != b.kind() {
                        found.push(format!("{path}: {} shown, {} served", a.kind(), b.kind()));
                    }
                } else {
                    compare(a, b, varies, &path, found);
                }
            }
        }
        (Json::Array(a), Json::Array(b)) if a.len() == b.len() => {
            for (i, (a, b)) in a.iter().zip(b).enumerate() {
                compare(a, b, varies, &format!("{path}[{i}]"), found);
            }
        }
        (a, b) if a == b => {}
        (a, b) => found.push(format!(
            "{path}: {} shown, {} served",
            a.one_line(),
            b.one_line()
        )),
    }
}

struct Parser<'a> {
    text: &'a str,
    at: usize,
}

impl Parser<'_> {
    fn space(&mut self) {
        let rest = &self.text[self.at..];
        self.at += rest.len() - rest.trim_start().len();
    }

    fn peek(&self) -> Option<u8> {
        self.text.as_bytes().get(self.at).copied()
    }

    fn expect(&mut self, byte: u8) -> Result<(), String> {
        self.space();
        if self.peek() == Some(byte) {
            self.at += 1;
            Ok(())
        } else {
            Err(format!("`{}` expected at byte {}", byte as char, self.at))
        }
    }

    fn value(&mut self) -> Result<Json, String> {
        self.space();
        match self.peek() {
            Some(b'{') => self.object(),
            Some(b'[') => self.array(),
            Some(b'"') => self.string().map(Json::String),
            Some(b't') => self.word("true", Json::Bool(true)),
            Some(b'f') => self.word("false", Json::Bool(false)),
            Some(b'n') => self.word("null", Json::Null),
            Some(b'-' | b'0'..=b'9') => {
                let start = self.at;
                while matches!(
                    self.peek(),
                    Some(b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9')
                ) {
                    self.at += 1;
                }
                Ok(Json::Number(self.text[start..self.at].to_owned()))
            }
            _ => Err(format!("a value expected at byte {}", self.at)),
        }
    }

    fn word(&mut self, word: &str, value: Json) -> Result<Json, String> {
        if self.text[self.at..].starts_with(word) {
            self.at += word.len();
            Ok(value)
        } else {
            Err(format!("`{word}` expected at byte {}", self.at))
        }
    }

    fn string(&mut self) -> Result<String, String> {
        let start = self.at;
        self.at += 1;
        loop {
            match self.peek() {
                Some(b'\\') => self.at += 2,
                Some(b'"') => break,
                Some(_) => self.at += 1,
                None => return Err(format!("a string from byte {start} does not end")),
            }
        }
        self.at += 1;
        serde_json::from_str(&self.text[start..self.at]).map_err(|e| format!("byte {start}: {e}"))
    }

    fn array(&mut self) -> Result<Json, String> {
        self.expect(b'[')?;
        let mut items = Vec::new();
        self.space();
        if self.peek() == Some(b']') {
            self.at += 1;
            return Ok(Json::Array(items));
        }
        loop {
            items.push(self.value()?);
            self.space();
            match self.peek() {
                Some(b',') => self.at += 1,
                Some(b']') => {
                    self.at += 1;
                    return Ok(Json::Array(items));
                }
                _ => return Err(format!("`,` or `]` expected at byte {}", self.at)),
            }
        }
    }

    fn object(&mut self) -> Result<Json, String> {
        self.expect(b'{')?;
        let mut members = Vec::new();
        self.space();
        if self.peek() == Some(b'}') {
            self.at += 1;
            return Ok(Json::Object(members));
        }
        loop {
            self.space();
            if self.peek() != Some(b'"') {
                return Err(format!("a key expected at byte {}", self.at));
            }
            let key = self.string()?;
            self.expect(b':')?;
            members.push((key, self.value()?));
            self.space();
            match self.peek() {
                Some(b',') => self.at += 1,
                Some(b'}') => {
                    self.at += 1;
                    return Ok(Json::Object(members));
                }
                _ => return Err(format!("`,` or `}}` expected at byte {}", self.at)),
            }
        }
    }
}

#[test]
fn answers_compare_in_order_and_varying_keys_only_by_kind() {
    let shown =
        Json::parse(r#"{ "data": { "a": 1, "id": "x", "b": [true, null] } }"#).expect("valid");
    let served = Json::parse(r#"{"data":{"a":1,"id":"y","b":[true,null]}}"#).expect("valid");
    assert_eq!(
        differences(&shown, &served, &[]),
        [r#"$.data.id: "x" shown, "y" served"#]
    );
    assert!(differences(&shown, &served, &["id".to_owned()]).is_empty());
    let reordered = Json::parse(r#"{"data":{"id":"x","a":1,"b":[true,null]}}"#).expect("valid");
    assert_eq!(differences(&shown, &reordered, &[]).len(), 1);
    let other_kind = Json::parse(r#"{"data":{"a":1,"id":7,"b":[true,null]}}"#).expect("valid");
    assert_eq!(
        differences(&shown, &other_kind, &["id".to_owned()]).len(),
        1
    );
    assert!(Json::parse(r#"{"a": 1} x"#).is_err());
}

#[test]
fn a_blessed_answer_keeps_short_values_on_one_line() {
    let answer = Json::parse(
        r#"{"data":{"comments":{"totalCount":3,"pageInfo":{"hasNextPage":true,"endCursor":"AVqkEmngMeDktawIi1z4"}}}}"#,
    )
    .expect("valid");
    assert_eq!(
        answer.pretty(0, 0, 100),
        "{\n  \"data\": {\n    \"comments\": {\n      \"totalCount\": 3,\n      \"pageInfo\": { \"hasNextPage\": true, \"endCursor\": \"AVqkEmngMeDktawIi1z4\" }\n    }\n  }\n}"
    );
}
