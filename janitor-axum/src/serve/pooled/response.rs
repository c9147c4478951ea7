//! Writing an answer: its head, then its body with a `Content-Length` when its size is known and chunked
//! otherwise (or delimited by the close, for HTTP/1.0), and no body at all for HEAD, 1xx, 204 and 304.

use std::io::Write;
use std::pin::Pin;
use std::task::Poll;
use std::time::{SystemTime, UNIX_EPOCH};

use axum::body::Body;
use axum::response::Response;
use http::header::{CONNECTION, CONTENT_LENGTH, DATE, TRANSFER_ENCODING};
use http::{HeaderMap, StatusCode, Version};
use http_body::Body as _;
use tokio::io::{AsyncRead, AsyncWrite};

use super::wire::Link;

/// Bytes an answer gathers before it writes them: small answers go out in one write.
const GATHER_BYTES: usize = 16 * 1024;

/// What the request asked of its answer.
#[derive(Debug, Clone, Copy)]
pub(super) struct Asked {
    pub(super) head: bool,
    pub(super) version: Version,
    /// Whether the connection may carry another request after this one (the request's and the server's say).
    pub(super) keep_alive: bool,
}

/// How the body goes on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Framing {
    None,
    Length(u64),
    Chunked,
    UntilClose,
}

/// Writes `response`; `Ok(true)` when the connection may carry another request.
pub(super) async fn write<Io: AsyncRead + AsyncWrite + Unpin>(
    link: &Link<Io>,
    response: Response,
    asked: Asked,
) -> std::io::Result<bool> {
    let (parts, mut body) = response.into_parts();
    let status = parts.status;
    let says_close = parts.headers.get_all(CONNECTION).iter().any(|v| {
        v.to_str()
            .is_ok_and(|t| t.split(',').any(|t| t.trim().eq_ignore_ascii_case("close")))
    });
    let declared = parts
        .headers
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
    let length = declared.or(body.size_hint().exact());
    let framing = framing_of(status, asked, length);
    let keep_alive = asked.keep_alive && !says_close && framing != Framing::UntilClose;
    let mut out = Vec::with_capacity(1024);
    // An answer to HEAD says the length the body would have had when it is known, as hyper's does.
    let bodiless_status = status.is_informational() || status == 204 || status == 304;
    let framing_said = match length {
        Some(length) if asked.head && !bodiless_status => Framing::Length(length),
        _ => framing,
    };
    write_head(
        &mut out,
        status,
        &parts.headers,
        asked,
        framing_said,
        keep_alive,
        declared.is_some(),
    );
    if framing == Framing::None {
        link.write_all(&out).await?;
        return Ok(keep_alive);
    }
    let mut written: u64 = 0;
    loop {
        let frame = match poll_once(&mut body) {
            Some(frame) => frame,
            None => {
                link.write_all(&out).await?;
                out.clear();
                std::future::poll_fn(|cx| Pin::new(&mut body).poll_frame(cx)).await
            }
        };
        let Some(frame) = frame else { break };
        let Ok(data) = frame.map_err(std::io::Error::other)?.into_data() else {
            continue; // Trailers are not sent: no client of ours asks for them.
        };
        written += data.len() as u64;
        match framing {
            Framing::Length(length) if written > length => {
                return Err(std::io::Error::other(
                    "the answer's body is longer than its length",
                ));
            }
            Framing::Chunked if !data.is_empty() => {
                let _ = write!(out, "{:x}\r\n", data.len());
                out.extend_from_slice(&data);
                out.extend_from_slice(b"\r\n");
            }
            _ => out.extend_from_slice(&data),
        }
        if out.len() >= GATHER_BYTES {
            link.write_all(&out).await?;
            out.clear();
        }
    }
    match framing {
        Framing::Chunked => out.extend_from_slice(b"0\r\n\r\n"),
        Framing::Length(length) if written != length => {
            link.write_all(&out).await?;
            return Err(std::io::Error::other(
                "the answer's body is shorter than its length",
            ));
        }
        _ => {}
    }
    link.write_all(&out).await?;
    Ok(keep_alive)
}

/// How an answer of `status` and known `length` (if any) goes on the wire.
fn framing_of(status: StatusCode, asked: Asked, length: Option<u64>) -> Framing {
    if asked.head || status.is_informational() || status == 204 || status == 304 {
        Framing::None
    } else if let Some(length) = length {
        Framing::Length(length)
    } else if asked.version == Version::HTTP_11 {
        Framing::Chunked
    } else {
        Framing::UntilClose
    }
}

/// The body's next frame if it is ready now; `None` when it is not (the gathered bytes go out first).
fn poll_once(
    body: &mut Body,
) -> Option<Option<Result<http_body::Frame<bytes::Bytes>, axum::Error>>> {
    let waker = std::task::Waker::noop();
    let mut cx = std::task::Context::from_waker(waker);
    match Pin::new(body).poll_frame(&mut cx) {
        Poll::Ready(frame) => Some(frame),
        Poll::Pending => None,
    }
}

fn write_head(
    out: &mut Vec<u8>,
    status: StatusCode,
    headers: &HeaderMap,
    asked: Asked,
    framing: Framing,
    keep_alive: bool,
    declared: bool,
) {
    let version = if asked.version == Version::HTTP_10 {
        "HTTP/1.0"
    } else {
        "HTTP/1.1"
    };
    let reason = status.canonical_reason().unwrap_or("");
    let _ = write!(out, "{version} {} {reason}\r\n", status.as_u16());
    let bodiless_status = status.is_informational() || status == 204 || status == 304;
    for (name, value) in headers {
        let framing_header =
            *name == TRANSFER_ENCODING || (*name == CONTENT_LENGTH && bodiless_status);
        if framing_header || *name == CONNECTION {
            continue;
        }
        out.extend_from_slice(name.as_str().as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(value.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    match framing {
        Framing::Length(length) if !declared => {
            let _ = write!(out, "content-length: {length}\r\n");
        }
        Framing::Chunked => out.extend_from_slice(b"transfer-encoding: chunked\r\n"),
        _ => {}
    }
    if !keep_alive {
        out.extend_from_slice(b"connection: close\r\n");
    } else if asked.version == Version::HTTP_10 {
        out.extend_from_slice(b"connection: keep-alive\r\n");
    }
    if !headers.contains_key(DATE) {
        out.extend_from_slice(b"date: ");
        out.extend_from_slice(&http_date(SystemTime::now()));
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"\r\n");
}

/// A fixed answer the driver gives itself (400, 431), closing the connection.
pub(super) fn refusal(status: StatusCode) -> Vec<u8> {
    let mut out = Vec::with_capacity(160);
    let asked = Asked {
        head: false,
        version: Version::HTTP_11,
        keep_alive: false,
    };
    write_head(
        &mut out,
        status,
        &HeaderMap::new(),
        asked,
        Framing::Length(0),
        false,
        false,
    );
    out
}

/// `time` in the IMF-fixdate form of RFC 9110 (`Sun, 06 Nov 1994 08:49:37 GMT`).
pub(super) fn http_date(time: SystemTime) -> [u8; 29] {
    const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let secs = time.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let days = secs / 86_400;
    let (year, month, day) = civil_from_days(days);
    let clock = secs % 86_400;
    let mut text = [0u8; 29];
    let formatted = format!(
        "{}, {day:02} {} {year:04} {:02}:{:02}:{:02} GMT",
        DAYS[(days % 7) as usize],
        MONTHS[(month - 1) as usize],
        clock / 3_600,
        clock / 60 % 60,
        clock % 60
    );
    let bytes = formatted.as_bytes();
    let n = bytes.len().min(text.len());
    text[..n].copy_from_slice(&bytes[..n]);
    text
}

/// (year, month 1–12, day 1–31) of a count of days since 1970-01-01 (Howard Hinnant's civil-from-days).
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + u64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn dates_are_imf_fixdates() {
        let at = |secs| {
            String::from_utf8(http_date(UNIX_EPOCH + Duration::from_secs(secs)).to_vec()).unwrap()
        };
        assert_eq!(at(0), "Thu, 01 Jan 1970 00:00:00 GMT");
        assert_eq!(at(784_111_777), "Sun, 06 Nov 1994 08:49:37 GMT");
        assert_eq!(at(951_782_400), "Tue, 29 Feb 2000 00:00:00 GMT");
        assert_eq!(at(4_102_444_799), "Thu, 31 Dec 2099 23:59:59 GMT");
    }

    #[test]
    fn a_refusal_closes_and_has_no_body() {
        let text = String::from_utf8(refusal(StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE)).unwrap();
        assert!(
            text.starts_with("HTTP/1.1 431 Request Header Fields Too Large\r\n"),
            "{text}"
        );
        assert!(text.contains("content-length: 0\r\n") && text.contains("connection: close\r\n"));
        assert!(text.ends_with("\r\n\r\n"));
    }
}
