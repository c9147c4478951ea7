//! Reading the request body: bounded in bytes and in time.

use std::time::Duration;

use axum::body::Body;
use http::header::CONTENT_LENGTH;
use http::HeaderMap;
use http_body_util::BodyExt;

/// Why the body could not be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BodyError {
    /// `Content-Length` not all digits, or above the limit, or the body grew past it: 413.
    TooLarge,
    /// Empty: 400.
    Missing,
    /// Not complete within the timeout: 408.
    TimedOut,
    /// The client went away or the stream broke: treated as an invalid payload (400).
    Broken,
}

/// Refuses a declared length that is not all digits or exceeds `max_bytes`, before reading anything.
pub(crate) fn check_declared_length(
    headers: &HeaderMap,
    max_bytes: usize,
) -> Result<(), BodyError> {
    let Some(value) = headers.get(CONTENT_LENGTH) else {
        return Ok(());
    };
    let text = value.to_str().map_err(|_| BodyError::TooLarge)?;
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return Err(BodyError::TooLarge);
    }
    match text.parse::<u64>() {
        Ok(n) if n <= max_bytes as u64 => Ok(()),
        _ => Err(BodyError::TooLarge),
    }
}

/// Reads the whole body, at most `max_bytes`, within `timeout`.
pub(crate) async fn read(
    body: Body,
    max_bytes: usize,
    timeout: Duration,
) -> Result<Vec<u8>, BodyError> {
    let read = async {
        let mut body = body;
        let mut bytes = Vec::new();
        while let Some(frame) = body.frame().await {
            let frame = frame.map_err(|_| BodyError::Broken)?;
            if let Ok(data) = frame.into_data() {
                if bytes.len() + data.len() > max_bytes {
                    return Err(BodyError::TooLarge);
                }
                bytes.extend_from_slice(&data);
            }
        }
        Ok(bytes)
    };
    let bytes = tokio::time::timeout(timeout, read)
        .await
        .map_err(|_| BodyError::TimedOut)??;
    if bytes.is_empty() {
        return Err(BodyError::Missing);
    }
    Ok(bytes)
}
