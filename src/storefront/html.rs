//! Writing HTML safely: escaping text and attribute values, JSON inside `<script>`, filling the
//! page's template in one pass, and the numbers and dates a reader sees.

use std::fmt;

/// `text` escaped for HTML text and quoted attribute values alike.
pub(super) struct Escaped<'a>(pub &'a str);

impl fmt::Display for Escaped<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut rest = self.0;
        while let Some(at) = rest.find(['&', '<', '>', '"', '\'']) {
            f.write_str(&rest[..at])?;
            f.write_str(match rest.as_bytes()[at] {
                b'&' => "&amp;",
                b'<' => "&lt;",
                b'>' => "&gt;",
                b'"' => "&quot;",
                _ => "&#39;",
            })?;
            rest = &rest[at + 1..];
        }
        f.write_str(rest)
    }
}

/// Shorthand for [`Escaped`].
pub(super) fn esc(text: &str) -> Escaped<'_> {
    Escaped(text)
}

/// JSON text made safe inside `<script>`: `<`, `>` and `&` (which can only occur inside JSON
/// strings) as `\u003c`, `\u003e`, `\u0026`, so no `</script>` or `<!--` can end or change the
/// element; U+2028 and U+2029 too, for scripts that read it as JavaScript.
pub(super) fn script_json(json: &str) -> String {
    let mut out = String::with_capacity(json.len());
    for c in json.chars() {
        match c {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c => out.push(c),
        }
    }
    out
}

/// `template` with each `{{name}}` replaced by `value(name)` (left as it is when `None`), in one
/// pass: text put in never gets its own `{{…}}` filled.
pub(super) fn fill(template: &str, value: impl Fn(&str) -> Option<String>) -> String {
    let mut out = String::with_capacity(template.len() * 2);
    let mut rest = template;
    while let Some(start) = rest.find("{{") {
        let Some(len) = rest[start..].find("}}") else {
            break;
        };
        out.push_str(&rest[..start]);
        let placeholder = &rest[start..start + len + 2];
        match value(&placeholder[2..len]) {
            Some(text) => out.push_str(&text),
            None => out.push_str(placeholder),
        }
        rest = &rest[start + len + 2..];
    }
    out.push_str(rest);
    out
}

/// `n` with thousands separated by commas: `250,000`.
pub(super) fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, digit) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

/// An RFC 3339 instant as a reader sees it before the script shows it in their own time zone:
/// `3 Mar 2025, 14:05 UTC` (the text as it is when it does not parse).
pub(super) fn date(rfc3339: &str) -> String {
    chrono::DateTime::parse_from_rfc3339(rfc3339).map_or_else(
        |_| rfc3339.to_owned(),
        |t| t.to_utc().format("%-d %b %Y, %H:%M UTC").to_string(),
    )
}

/// `rating` filled stars and `5 - rating` empty ones, for screen readers "`rating` out of 5
/// stars" (`label`: `false` where the label already says it).
pub(super) fn stars(rating: u8, label: bool) -> String {
    let rating = usize::from(rating.min(5));
    let (on, off) = ("★".repeat(rating), "★".repeat(5 - rating));
    if label {
        format!(
            "<span class=\"stars\" role=\"img\" aria-label=\"{rating} out of 5 stars\">{on}<span class=\"stars-off\" aria-hidden=\"true\">{off}</span></span>"
        )
    } else {
        format!(
            "<span class=\"stars\" aria-hidden=\"true\">{on}<span class=\"stars-off\">{off}</span></span>"
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_in_text_stays_text() {
        assert_eq!(
            esc(r#"<b a="1" b='2'>&amp;</b>"#).to_string(),
            "&lt;b a=&quot;1&quot; b=&#39;2&#39;&gt;&amp;amp;&lt;/b&gt;"
        );
        assert_eq!(esc("plain ★ text").to_string(), "plain ★ text");
    }

    #[test]
    fn json_in_a_script_cannot_close_it() {
        let json =
            serde_json::to_string(&serde_json::json!({ "body": "</script><!-- & \u{2028}" }))
                .expect("JSON");
        let safe = script_json(&json);
        assert_eq!(
            safe,
            r#"{"body":"\u003c/script\u003e\u003c!-- \u0026 \u2028"}"#
        );
        let back: serde_json::Value = serde_json::from_str(&safe).expect("still JSON");
        assert_eq!(back["body"], "</script><!-- & \u{2028}");
    }

    #[test]
    fn the_template_is_filled_once() {
        let filled = fill("<a>{{x}}</a>{{y}}{{unknown}}{{", |name| match name {
            "x" => Some("{{y}}".to_owned()),
            "y" => Some("Y".to_owned()),
            _ => None,
        });
        assert_eq!(filled, "<a>{{y}}</a>Y{{unknown}}{{");
    }

    #[test]
    fn numbers_and_dates_read_as_a_reader_expects() {
        assert_eq!(grouped(0), "0");
        assert_eq!(grouped(999), "999");
        assert_eq!(grouped(1_000), "1,000");
        assert_eq!(grouped(250_000), "250,000");
        assert_eq!(grouped(1_234_567), "1,234,567");
        assert_eq!(date("2025-03-03T14:05:09.123Z"), "3 Mar 2025, 14:05 UTC");
        assert_eq!(date("not a date"), "not a date");
    }
}
