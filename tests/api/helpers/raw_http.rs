//! HTTP below the GraphQL helpers: requests written by hand and responses read as the bytes a
//! client receives (`Raw`: no client that would decode, merge or retry anything), and whole
//! responses through reqwest (`Reply`: status, headers and the body as sent) for the tests
//! that look past the JSON.

use std::io::Read;

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// One response as it came off the socket.
#[derive(Debug)]
pub struct Raw {
    pub status: u16,
    headers: Vec<(String, String)>,
    /// The body after chunked transfer coding is undone; still content-encoded.
    pub body: Vec<u8>,
}

impl Raw {
    /// Every value of `name`, joined as a list.
    pub fn header(&self, name: &str) -> Option<String> {
        let values: Vec<&str> = self
            .headers
            .iter()
            .filter(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
            .collect();
        (!values.is_empty()).then(|| values.join(", "))
    }

    /// Whether `Vary` names `name`.
    pub fn varies_with(&self, name: &str) -> bool {
        self.header("vary")
            .is_some_and(|vary| vary.split(',').any(|v| v.trim().eq_ignore_ascii_case(name)))
    }

    /// `r=` of the `RateLimit` field: the points left of the client's cost budget.
    pub fn remaining(&self) -> u64 {
        let field = self.header("ratelimit").expect("RateLimit");
        assert!(field.starts_with("\"cost\";r="), "{field}");
        let r = field
            .split(';')
            .find_map(|p| p.strip_prefix("r="))
            .expect("r=");
        r.parse().expect("a number")
    }

    /// The body as JSON, decoded from its `Content-Encoding`.
    pub fn json(&self) -> Value {
        let mut plain = Vec::new();
        match self.header("content-encoding").as_deref() {
            None => plain.clone_from(&self.body),
            Some("gzip") => {
                flate2::read::GzDecoder::new(&self.body[..])
                    .read_to_end(&mut plain)
                    .expect("gzip");
            }
            Some("br") => {
                brotli_decompressor::Decompressor::new(&self.body[..], 4096)
                    .read_to_end(&mut plain)
                    .expect("brotli");
            }
            Some("zstd") => plain = zstd::stream::decode_all(&self.body[..]).expect("zstd"),
            Some(other) => panic!("unexpected encoding {other}"),
        }
        serde_json::from_slice(&plain).expect("a JSON body")
    }
}

/// `method` `path` written by hand to `authority` over a fresh connection (`Connection:
/// close`, `Accept: application/json`, a `Content-Length`), with `headers` and `body`.
pub async fn request(
    authority: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> Raw {
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {authority}\r\nAccept: application/json\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    exchange(authority, &with_headers(head, headers, body)).await
}

/// A GraphQL GET of `query` and `variables` written by hand to `authority`, with `headers`:
/// no body and no `Content-Length`, as a browser sends it.
pub async fn get_graphql(
    authority: &str,
    query: &str,
    variables: &Value,
    headers: &[(&str, &str)],
) -> Raw {
    let head = format!(
        "GET {} HTTP/1.1\r\nHost: {authority}\r\nAccept: application/json\r\nConnection: close\r\n",
        graphql_path(query, variables)
    );
    exchange(authority, &with_headers(head, headers, "")).await
}

fn with_headers(mut head: String, headers: &[(&str, &str)], body: &str) -> Vec<u8> {
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    head.push_str(body);
    head.into_bytes()
}

/// Writes `bytes` to `authority` over a fresh connection and reads until the server closes it.
pub async fn exchange(authority: &str, bytes: &[u8]) -> Raw {
    let mut stream = tokio::net::TcpStream::connect(authority)
        .await
        .expect("connect");
    stream.write_all(bytes).await.expect("write");
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).await.expect("read");
    parse(&answer)
}

/// `/graphql?query=…&variables=…`, URL-encoded.
pub fn graphql_path(query: &str, variables: &Value) -> String {
    let url = reqwest::Url::parse_with_params(
        "http://x/graphql",
        &[("query", query), ("variables", &variables.to_string())],
    )
    .expect("a URL");
    format!("{}?{}", url.path(), url.query().unwrap_or_default())
}

/// A response's bytes as a [`Raw`]: its status line, its headers, and its body with chunked
/// transfer coding undone.
pub fn parse(bytes: &[u8]) -> Raw {
    let end = bytes
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("a header block");
    let head = String::from_utf8(bytes[..end].to_vec()).expect("ASCII headers");
    let mut lines = head.split("\r\n");
    let status = lines.next().expect("a status line")[9..12]
        .parse()
        .expect("a status");
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let mut body = bytes[end + 4..].to_vec();
    if headers
        .iter()
        .any(|(n, v)| n == "transfer-encoding" && v.contains("chunked"))
    {
        body = dechunk(&body);
    }
    Raw {
        status,
        headers,
        body,
    }
}

fn dechunk(mut rest: &[u8]) -> Vec<u8> {
    let mut body = Vec::new();
    loop {
        let line = rest.windows(2).position(|w| w == b"\r\n").expect("a size");
        let size = std::str::from_utf8(&rest[..line]).expect("hex");
        let size = usize::from_str_radix(size.split(';').next().unwrap_or("0").trim(), 16)
            .expect("a chunk size");
        if size == 0 {
            return body;
        }
        body.extend_from_slice(&rest[line + 2..line + 2 + size]);
        rest = &rest[line + 2 + size + 2..];
    }
}

/// A whole response read through reqwest (which undoes no content coding it did not ask for):
/// its status, its headers and its body's text.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub headers: reqwest::header::HeaderMap,
    pub text: String,
}

impl Reply {
    /// Sends `request` and reads its whole answer.
    pub async fn of(request: reqwest::RequestBuilder) -> Self {
        let response = request.send().await.expect("request sent");
        Self {
            status: response.status().as_u16(),
            headers: response.headers().clone(),
            text: response.text().await.expect("a body"),
        }
    }

    /// The header `name`'s value, when there is one and it is text.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// The body as JSON, failing the test when it is not.
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.text).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.text))
    }
}
