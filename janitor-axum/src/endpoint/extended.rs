//! The `janitor-extended-signals` request header: the browser client's extended signals
//! ([`ExtendedSignals`]), read only when the application enables them.

use base64::alphabet::URL_SAFE;
use base64::engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig};
use base64::engine::DecodePaddingMode;
use base64::Engine as _;
use http::HeaderMap;
use janitor_core::identification::payload::{
    ExtendedSignals, EXTENDED_SIGNALS_HEADER, MAX_EXTENDED_HEADER,
};

use crate::refusal::Refusal;

/// base64url; the client leaves the padding off, but a value with it is as readable.
pub(super) const BASE64URL: GeneralPurpose = GeneralPurpose::new(
    &URL_SAFE,
    GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
);

/// The extended signals of a request: `None` without the header, refused as an invalid payload when the header
/// is repeated, longer than [`MAX_EXTENDED_HEADER`], not base64url, or not valid extended signals.
pub(crate) fn extended_signals(headers: &HeaderMap) -> Result<Option<ExtendedSignals>, Refusal> {
    let mut values = headers.get_all(EXTENDED_SIGNALS_HEADER).iter();
    let Some(value) = values.next() else {
        return Ok(None);
    };
    // Two values would make the signals a guess about which one a proxy kept.
    if values.next().is_some() || value.len() > MAX_EXTENDED_HEADER {
        tracing::debug!("refused extended signals: repeated or over {MAX_EXTENDED_HEADER} bytes");
        return Err(Refusal::InvalidPayload);
    }
    let json = BASE64URL.decode(value.as_bytes()).map_err(|_| {
        tracing::debug!("refused extended signals: not base64url");
        Refusal::InvalidPayload
    })?;
    ExtendedSignals::from_slice(&json)
        .map(Some)
        .map_err(|error| {
            tracing::debug!(%error, "refused extended signals");
            Refusal::InvalidPayload
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    fn read(values: &[&str]) -> Result<Option<ExtendedSignals>, Refusal> {
        let mut headers = HeaderMap::new();
        for value in values {
            headers.append(
                EXTENDED_SIGNALS_HEADER,
                HeaderValue::from_str(value).unwrap(),
            );
        }
        extended_signals(&headers)
    }

    fn encode(json: &str) -> String {
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(json)
    }

    #[test]
    fn a_header_is_decoded_and_validated() {
        assert_eq!(read(&[]), Ok(None));
        let dark = encode(r#"{"preferences":{"colorScheme":"dark"}}"#);
        let signals = read(&[&dark]).unwrap().unwrap();
        assert_eq!(signals.color_scheme.as_deref(), Some("dark"));
        let padded = base64::engine::general_purpose::URL_SAFE.encode(r#"{"intl":{}}"#);
        assert!(padded.ends_with('='), "{padded}");
        assert!(read(&[&padded]).unwrap().is_some());
    }

    #[test]
    fn repeated_oversized_undecodable_or_invalid_headers_are_refused() {
        let ok = encode("{}");
        assert_eq!(read(&[&ok, &ok]), Err(Refusal::InvalidPayload));
        assert_eq!(read(&["not base64!"]), Err(Refusal::InvalidPayload));
        assert_eq!(
            read(&[&encode(r#"{"ip":"1.2.3.4"}"#)]),
            Err(Refusal::InvalidPayload)
        );
        // At the bound a value is read, and four characters (three bytes) past it refused unread. Spaces
        // between JSON tokens keep the decoded document valid at any length.
        let sized = |chars: usize| encode(&format!("{{{}}}", " ".repeat(chars / 4 * 3 - 2)));
        let at_limit = sized(MAX_EXTENDED_HEADER);
        assert_eq!(at_limit.len(), MAX_EXTENDED_HEADER);
        assert!(read(&[&at_limit]).unwrap().unwrap().is_empty());
        let over = sized(MAX_EXTENDED_HEADER + 4);
        assert_eq!(over.len(), MAX_EXTENDED_HEADER + 4);
        assert_eq!(read(&[&over]), Err(Refusal::InvalidPayload));
    }
}
