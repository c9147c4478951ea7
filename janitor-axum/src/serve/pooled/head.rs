//! A request head, parsed by `httparse` (hyper's own parser) and checked as hyper checks it: the framing of its
//! body is unambiguous or the request is refused 400, and a head past the size limit is 431.

use std::str::FromStr;

use http::header::{CONNECTION, CONTENT_LENGTH, EXPECT, TRANSFER_ENCODING};
use http::{HeaderMap, HeaderName, HeaderValue, Method, Request, Uri, Version};

use super::framing::Decoder;

/// Most header lines a head may have, as hyper allows; more is answered 431.
pub(crate) const MAX_HEADERS: usize = 100;

/// Why a head was not read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum HeadError {
    /// More bytes are needed.
    Partial,
    /// The head is past the size limit or has too many headers (431).
    TooLarge,
    /// The head is not valid HTTP/1.x, or its body's framing is ambiguous (400).
    Malformed,
}

/// A parsed head: the request (without its body), how its body is framed, and what it asks of the connection.
#[derive(Debug)]
pub(crate) struct Head {
    pub(crate) request: Request<()>,
    /// Bytes of the buffer the head took.
    pub(crate) length: usize,
    pub(crate) body: Decoder,
    pub(crate) keep_alive: bool,
    pub(crate) expects_continue: bool,
}

/// Parses the head at the start of `bytes`, at most `max_bytes` long.
pub(crate) fn parse(bytes: &[u8], max_bytes: usize) -> Result<Head, HeadError> {
    let mut lines = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut parsed = httparse::Request::new(&mut lines);
    let length = match parsed.parse(bytes) {
        Ok(httparse::Status::Complete(length)) if length <= max_bytes => length,
        Ok(httparse::Status::Complete(_)) => return Err(HeadError::TooLarge),
        Ok(httparse::Status::Partial) if bytes.len() >= max_bytes => {
            return Err(HeadError::TooLarge)
        }
        Ok(httparse::Status::Partial) => return Err(HeadError::Partial),
        Err(httparse::Error::TooManyHeaders) => return Err(HeadError::TooLarge),
        Err(_) => return Err(HeadError::Malformed),
    };
    let method = Method::from_bytes(parsed.method.unwrap_or_default().as_bytes())
        .map_err(|_| HeadError::Malformed)?;
    let uri = Uri::from_str(parsed.path.unwrap_or_default()).map_err(|_| HeadError::Malformed)?;
    let version = match parsed.version {
        Some(0) => Version::HTTP_10,
        Some(1) => Version::HTTP_11,
        _ => return Err(HeadError::Malformed),
    };
    let mut headers = HeaderMap::with_capacity(parsed.headers.len());
    let mut declared = None;
    for line in parsed.headers.iter() {
        let name =
            HeaderName::from_bytes(line.name.as_bytes()).map_err(|_| HeadError::Malformed)?;
        let value = HeaderValue::from_bytes(line.value).map_err(|_| HeadError::Malformed)?;
        if name == CONTENT_LENGTH {
            // A repeated length equal to the first is dropped, as hyper drops it: the application sees one.
            let this = plain_length(value.as_bytes());
            if this.is_some() && declared.is_some() && this == declared {
                continue;
            }
            declared = declared.or(this);
        }
        headers.append(name, value);
    }
    let body = framing(&headers, version)?;
    let keep_alive = match version {
        Version::HTTP_11 => !has_token(&headers, &CONNECTION, "close"),
        _ => {
            has_token(&headers, &CONNECTION, "keep-alive")
                && !has_token(&headers, &CONNECTION, "close")
        }
    };
    // The last `Expect` line decides, as in hyper.
    let expects_continue = version == Version::HTTP_11
        && headers
            .get_all(EXPECT)
            .iter()
            .next_back()
            .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"100-continue"));
    let mut request = Request::new(());
    *request.method_mut() = method;
    *request.uri_mut() = uri;
    *request.version_mut() = version;
    *request.headers_mut() = headers;
    Ok(Head {
        request,
        length,
        body,
        keep_alive,
        expects_continue,
    })
}

/// How the body is framed. Refused with 400: any `Transfer-Encoding` line (even an empty one or a lone comma)
/// beside `Content-Length` (the shape of request smuggling), in HTTP/1.0, or not ending in a single
/// `chunked`; a `Content-Length` line that is not one plain decimal number (hyper refuses `5, 5` on one line
/// too), or several lines that disagree. The hyper driver's requests are held to the same rules in
/// [`framing_refused`].
fn framing(headers: &HeaderMap, version: Version) -> Result<Decoder, HeadError> {
    if headers.contains_key(TRANSFER_ENCODING) {
        if version != Version::HTTP_11 || transfer_refused(headers) {
            return Err(HeadError::Malformed);
        }
        return Ok(Decoder::chunked());
    }
    let mut length: Option<u64> = None;
    for value in headers.get_all(CONTENT_LENGTH) {
        let parsed = plain_length(value.as_bytes()).ok_or(HeadError::Malformed)?;
        if length.is_some_and(|seen| seen != parsed) {
            return Err(HeadError::Malformed);
        }
        length = Some(parsed);
    }
    // hyper keeps the two top values for its own markers and refuses them as too large (431).
    if length.is_some_and(|length| length > u64::MAX - 2) {
        return Err(HeadError::TooLarge);
    }
    Ok(Decoder::length(length.unwrap_or(0)))
}

/// A `Content-Length` value as hyper reads one: ASCII digits only (leading zeros too), within 64 bits.
fn plain_length(value: &[u8]) -> Option<u64> {
    if value.is_empty() {
        return None;
    }
    value.iter().try_fold(0u64, |length, &byte| {
        let digit = byte.is_ascii_digit().then(|| u64::from(byte - b'0'))?;
        length.checked_mul(10)?.checked_add(digit)
    })
}

/// Whether a request with `Transfer-Encoding` must be refused whatever the driver: beside `Content-Length`, or
/// its codings (every line, comma-separated) not ending in the one `chunked`, nor its last line.
pub(crate) fn transfer_refused(headers: &HeaderMap) -> bool {
    let codings: Vec<String> = tokens(headers, &TRANSFER_ENCODING).collect();
    let chunked = codings.iter().filter(|c| c.as_str() == "chunked").count();
    headers.contains_key(CONTENT_LENGTH)
        || chunked != 1
        || codings.last().is_none_or(|c| c != "chunked")
        || !last_line_ends_chunked(headers)
}

/// Whether the last `Transfer-Encoding` line's last element is `chunked`, empty elements counted (hyper's
/// test: `chunked,` is refused).
fn last_line_ends_chunked(headers: &HeaderMap) -> bool {
    let last = headers.get_all(TRANSFER_ENCODING).iter().next_back();
    last.and_then(|value| value.to_str().ok()?.rsplit(',').next())
        .is_some_and(|coding| coding.trim().eq_ignore_ascii_case("chunked"))
}

/// The comma-separated tokens of every `name` header, trimmed and lowercased; a value that is not text gives
/// one token no known word equals.
fn tokens<'a>(headers: &'a HeaderMap, name: &HeaderName) -> impl Iterator<Item = String> + 'a {
    headers.get_all(name).iter().flat_map(|value| {
        let text = value.to_str().unwrap_or("\u{0}");
        text.split(',')
            .map(|t| t.trim_matches([' ', '\t']).to_ascii_lowercase())
            .filter(|t| !t.is_empty())
            .collect::<Vec<_>>()
    })
}

fn has_token(headers: &HeaderMap, name: &HeaderName, token: &str) -> bool {
    tokens(headers, name).any(|t| t == token)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(text: &str) -> Result<Head, HeadError> {
        parse(text.as_bytes(), 16_384)
    }

    #[test]
    fn keep_alive_follows_the_version_and_the_connection_header() {
        let cases = [
            ("GET / HTTP/1.1\r\nHost: a\r\n\r\n", true),
            ("GET / HTTP/1.1\r\nConnection: Close\r\n\r\n", false),
            ("GET / HTTP/1.0\r\n\r\n", false),
            ("GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", true),
            (
                "GET / HTTP/1.0\r\nConnection: keep-alive, close\r\n\r\n",
                false,
            ),
        ];
        for (text, keep) in cases {
            assert_eq!(head(text).unwrap().keep_alive, keep, "{text}");
        }
    }

    #[test]
    fn ambiguous_framing_is_malformed() {
        for text in [
            "POST / HTTP/1.1\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n",
            "POST / HTTP/1.1\r\nTransfer-Encoding: chunked, gzip\r\n\r\n",
            "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n",
            "POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n",
            "POST / HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n",
            "POST / HTTP/1.1\r\nContent-Length: +5\r\n\r\n",
            "POST / HTTP/1.1\r\nContent-Length: 1e3\r\n\r\n",
            "POST / HTTP/1.1\r\nContent-Length: 99999999999999999999\r\n\r\n",
            "POST / HTTP/1.1\r\nContent-Length: \r\n\r\n",
            // An empty coding or a lone comma is still a Transfer-Encoding beside the length (issue 28, 1).
            "POST / HTTP/1.1\r\nTransfer-Encoding: \r\nContent-Length: 5\r\n\r\nhello",
            "POST / HTTP/1.1\r\nTransfer-Encoding: ,\r\nContent-Length: 5\r\n\r\nhello",
            "POST / HTTP/1.1\r\nContent-Length: 5\r\nTransfer-Encoding: \t\r\n\r\nhello",
            "POST / HTTP/1.1\r\nTransfer-Encoding: ,\r\n\r\n",
            // hyper looks at the last element of the last line, empty or not.
            "POST / HTTP/1.1\r\nTransfer-Encoding: chunked,\r\n\r\n",
            "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: ,\r\n\r\n",
            // A list of lengths on one line, even of one value (issue 28, 2).
            "POST / HTTP/1.1\r\nContent-Length: 676, 676\r\n\r\n",
            "POST / HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 5, 5\r\n\r\n",
        ] {
            assert_eq!(head(text).unwrap_err(), HeadError::Malformed, "{text}");
        }
        // The same length on two lines is one length, as hyper reads it.
        let same =
            head("POST / HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\n").unwrap();
        assert_eq!(same.body, Decoder::length(5));
        assert_eq!(
            same.request
                .headers()
                .get_all("content-length")
                .iter()
                .count(),
            1
        );
        // Leading zeros are digits; the two top values of 64 bits are too large, as for hyper.
        let zeros = head("POST / HTTP/1.1\r\nContent-Length: 000000000000000000005\r\n\r\n");
        assert_eq!(zeros.unwrap().body, Decoder::length(5));
        let top = head("POST / HTTP/1.1\r\nContent-Length: 18446744073709551614\r\n\r\n");
        assert_eq!(top.unwrap_err(), HeadError::TooLarge);
        let below = head("POST / HTTP/1.1\r\nContent-Length: 18446744073709551613\r\n\r\n");
        assert_eq!(below.unwrap().body, Decoder::length(u64::MAX - 2));
        let gzip = head("POST / HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n").unwrap();
        assert_eq!(gzip.body, Decoder::chunked());
    }

    #[test]
    fn a_head_at_the_limit_fits_and_one_byte_past_is_too_large() {
        let text = "GET / HTTP/1.1\r\nX-Pad: aaaa\r\n\r\n";
        assert_eq!(
            parse(text.as_bytes(), text.len()).unwrap().length,
            text.len()
        );
        assert_eq!(
            parse(text.as_bytes(), text.len() - 1).unwrap_err(),
            HeadError::TooLarge
        );
        assert_eq!(
            parse(&text.as_bytes()[..10], 10).unwrap_err(),
            HeadError::TooLarge
        );
        assert_eq!(
            parse(&text.as_bytes()[..10], 11).unwrap_err(),
            HeadError::Partial
        );
        let many: String = (0..=MAX_HEADERS).map(|i| format!("X-{i}: v\r\n")).collect();
        let text = format!("GET / HTTP/1.1\r\n{many}\r\n");
        assert_eq!(head(&text).unwrap_err(), HeadError::TooLarge);
        let fits: String = (0..MAX_HEADERS).map(|i| format!("X-{i}: v\r\n")).collect();
        assert!(head(&format!("GET / HTTP/1.1\r\n{fits}\r\n")).is_ok());
    }

    #[test]
    fn expect_continue_is_read_in_http_1_1_only() {
        assert!(
            head("POST / HTTP/1.1\r\nExpect: 100-Continue\r\nContent-Length: 1\r\n\r\n")
                .unwrap()
                .expects_continue
        );
        assert!(
            !head("POST / HTTP/1.0\r\nExpect: 100-continue\r\nContent-Length: 1\r\n\r\n")
                .unwrap()
                .expects_continue
        );
    }
}
