//! The content codings the server sends (identity, gzip, brotli, zstd): which one a request
//! gets ([`preferred`]) and the encoders themselves ([`Coding::encode`], at the layer's
//! qualities), for the response cache, which encodes a kept answer once per coding instead of
//! once per hit (`response_cache`).
//!
//! [`preferred`] is the server's one choice: the compression guard hands it to tower-http's
//! layer (`super::Guard`), and the response cache sends kept answers in it, so a client never
//! sees its page change coding depending on whether it was cached.
//!
//! Why br, then gzip, then zstd among equal weights (tower-http prefers zstd): clients list
//! codings they cannot decode. GraphQL Code Generator's URL loader (`@whatwg-node/node-fetch`
//! 0.9) sends `Accept-Encoding: gzip, deflate, br, zstd` on Node 20, whose zlib has no zstd
//! decoder, and crashed on a zstd answer; br and gzip are decoded by every client that lists
//! them, and br was the smaller of the three on a 100-comment page (8,566 bytes, gzip 8,590,
//! zstd 8,643). A client that ranks zstd higher by weight still gets it.

use std::io::Write;

use axum::http::{HeaderMap, HeaderValue, header};

/// A content coding.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Coding {
    Identity,
    Gzip,
    Brotli,
    Zstd,
}

impl Coding {
    /// The codings that change the bytes.
    #[cfg(test)]
    pub(crate) const ENCODED: [Coding; 3] = [Coding::Gzip, Coding::Brotli, Coding::Zstd];

    /// The token in `Content-Encoding` (and the suffix of an encoded answer's `ETag`).
    pub(crate) fn token(self) -> &'static str {
        match self {
            Coding::Identity => "identity",
            Coding::Gzip => "gzip",
            Coding::Brotli => "br",
            Coding::Zstd => "zstd",
        }
    }

    /// Which coding wins among codings of equal weight, higher first: br, gzip, zstd, then
    /// identity (the module's comment says why).
    fn rank(self) -> u8 {
        match self {
            Coding::Brotli => 3,
            Coding::Gzip => 2,
            Coding::Zstd => 1,
            Coding::Identity => 0,
        }
    }

    /// `Content-Encoding`'s value; `None` for identity, which is sent without one.
    pub(crate) fn header(self) -> Option<HeaderValue> {
        (self != Coding::Identity).then(|| HeaderValue::from_static(self.token()))
    }

    /// `body` in this coding, at the qualities the layer uses: gzip at level 6 (flate2's and
    /// async-compression's default), brotli at quality 4 (tower-http's default: 11 is far too
    /// slow on the fly) and window 22, zstd at level 3. Identity is the body itself.
    pub(crate) fn encode(self, body: &[u8]) -> std::io::Result<Vec<u8>> {
        let mut out = Vec::with_capacity(body.len() / 4 + 64);
        match self {
            Coding::Identity => out.extend_from_slice(body),
            Coding::Gzip => {
                let mut encoder =
                    flate2::write::GzEncoder::new(&mut out, flate2::Compression::default());
                encoder.write_all(body)?;
                encoder.finish()?;
            }
            Coding::Brotli => {
                let params = brotli::enc::BrotliEncoderParams {
                    quality: 4,
                    lgwin: 22,
                    ..Default::default()
                };
                brotli::BrotliCompress(&mut &body[..], &mut out, &params)?;
            }
            Coding::Zstd => zstd::stream::copy_encode(body, &mut out, 3)?,
        }
        out.shrink_to_fit();
        Ok(out)
    }
}

/// The coding a request with `headers` gets (RFC 9110 §12.5.3): the acceptable coding with the
/// highest weight, ties to br, then gzip, then zstd, then identity ([`Coding::rank`]); `*`
/// weighs every coding not listed; identity when nothing is listed and it is not refused.
/// Entries that cannot be read (an unknown coding, a malformed weight) are skipped, as
/// tower-http's layer skips them. `None`: nothing acceptable (the compression guard refuses
/// such requests).
pub(crate) fn preferred(headers: &HeaderMap) -> Option<Coding> {
    let entries: Vec<(&str, u16)> = headers
        .get_all(header::ACCEPT_ENCODING)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .filter_map(|entry| {
            let mut parts = entry.splitn(2, ';');
            let name = parts.next().unwrap_or_default().trim();
            let weight = match parts.next() {
                Some(weight) => q_value(weight.trim())?,
                None => 1000,
            };
            Some((name, weight))
        })
        .collect();
    let explicit: Vec<(Coding, u16)> = entries
        .iter()
        .filter_map(|&(name, q)| Some((coding(name)?, q)))
        .collect();
    let best = |candidates: &mut dyn Iterator<Item = (Coding, u16)>| {
        candidates
            .filter(|&(_, q)| q > 0)
            .max_by_key(|&(coding, q)| (q, coding.rank()))
            .map(|(coding, _)| coding)
    };
    match entries.iter().find(|(name, _)| *name == "*") {
        None => best(&mut explicit.iter().copied()).or_else(|| {
            let refused = explicit.contains(&(Coding::Identity, 0));
            (!refused).then_some(Coding::Identity)
        }),
        Some(&(_, wildcard)) => {
            let all = [Coding::Identity, Coding::Gzip, Coding::Brotli, Coding::Zstd];
            let weight = |c: Coding| {
                explicit
                    .iter()
                    .find(|(e, _)| *e == c)
                    .map_or(wildcard, |(_, q)| *q)
            };
            best(&mut all.into_iter().map(|c| (c, weight(c))))
        }
    }
}

fn coding(name: &str) -> Option<Coding> {
    let is = |token: &str| name.eq_ignore_ascii_case(token);
    if is("gzip") || is("x-gzip") {
        Some(Coding::Gzip)
    } else if is("br") {
        Some(Coding::Brotli)
    } else if is("zstd") {
        Some(Coding::Zstd)
    } else if is("identity") {
        Some(Coding::Identity)
    } else {
        None
    }
}

/// `q=<weight>` in thousandths (RFC 9110 §12.4.2: `0`, `1`, or up to three decimals), as
/// tower-http reads it; anything else is `None`.
fn q_value(text: &str) -> Option<u16> {
    let rest = text
        .strip_prefix('q')
        .or_else(|| text.strip_prefix('Q'))?
        .strip_prefix('=')?;
    let (whole, fraction) = rest.split_once('.').unwrap_or((rest, ""));
    if fraction.len() > 3 || !fraction.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let thousandths: u16 = format!("{fraction:0<3}").parse().ok()?;
    match whole {
        "0" => Some(thousandths),
        "1" if thousandths == 0 => Some(1000),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use std::io::Read;

    use super::*;

    fn pick(value: Option<&str>) -> Option<Coding> {
        let mut headers = HeaderMap::new();
        if let Some(value) = value {
            headers.insert(header::ACCEPT_ENCODING, value.parse().expect("a value"));
        }
        preferred(&headers)
    }

    #[test]
    fn the_choice_is_the_highest_weight_then_br_gzip_zstd() {
        assert_eq!(pick(None), Some(Coding::Identity));
        assert_eq!(pick(Some("gzip")), Some(Coding::Gzip));
        assert_eq!(pick(Some("gzip, deflate, br")), Some(Coding::Brotli));
        assert_eq!(pick(Some("gzip, deflate, br, zstd")), Some(Coding::Brotli));
        assert_eq!(pick(Some("zstd, gzip")), Some(Coding::Gzip));
        assert_eq!(pick(Some("zstd, identity")), Some(Coding::Zstd));
        assert_eq!(pick(Some("zstd;q=1, br;q=0.5")), Some(Coding::Zstd));
        assert_eq!(pick(Some("br;q=0.9, zstd")), Some(Coding::Zstd));
        assert_eq!(pick(Some("br;q=0.5, gzip;q=0.8")), Some(Coding::Gzip));
        assert_eq!(pick(Some("br;q=0.5, gzip; q=0.8")), Some(Coding::Gzip));
        assert_eq!(pick(Some("deflate")), Some(Coding::Identity));
        assert_eq!(pick(Some("identity;q=0, gzip")), Some(Coding::Gzip));
        assert_eq!(pick(Some("identity;q=0")), None);
        assert_eq!(pick(Some("*")), Some(Coding::Brotli));
        assert_eq!(pick(Some("*, br;q=0.5")), Some(Coding::Gzip));
        assert_eq!(pick(Some("*;q=0.5, zstd;q=0, br;q=0")), Some(Coding::Gzip));
        assert_eq!(pick(Some("*;q=0")), None);
        assert_eq!(pick(Some("gzip;q=2, br;q=0.25")), Some(Coding::Brotli));
        assert_eq!(pick(Some("gzip;q=0.0001")), Some(Coding::Identity));
    }

    #[test]
    fn every_coding_decodes_to_the_body() {
        let body = br#"{"data":{"comments":["a tie","a tie","another"]}}"#.repeat(200);
        for coding in Coding::ENCODED {
            let encoded = coding.encode(&body).expect("encoded");
            assert!(encoded.len() < body.len() / 4, "{coding:?} compresses");
            let mut plain = Vec::new();
            match coding {
                Coding::Gzip => {
                    flate2::read::GzDecoder::new(&encoded[..])
                        .read_to_end(&mut plain)
                        .expect("gzip");
                }
                Coding::Brotli => {
                    brotli_decompressor::Decompressor::new(&encoded[..], 4096)
                        .read_to_end(&mut plain)
                        .expect("brotli");
                }
                Coding::Zstd => plain = zstd::stream::decode_all(&encoded[..]).expect("zstd"),
                Coding::Identity => unreachable!("not encoded"),
            }
            assert_eq!(plain, body, "{coding:?}");
        }
        assert_eq!(Coding::Identity.encode(b"x").expect("itself"), b"x");
    }
}
