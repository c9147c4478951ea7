//! Arbitrary bytes as the `Cookie` header values of one request, through the visitor cookie reader.
//!
//! The input is cut at each `\n` into several header values (a request may carry more than one `Cookie`
//! header); each value is read as UTF-8, lossily, since the reader takes text (janitor-axum hands it the values
//! that are visible ASCII, a subset). Any id returned must:
//! - be `vis_` + 48 lower-case hex digits, parse back to itself and print as the same text;
//! - appear in one of the header values (the reader never makes an id up);
//! - be the same whatever the order of the header values, and whether they come as one joined header;
//! - count as none once a second `__visitor` cookie is planted beside it.

#![no_main]

use janitor_core::{visitor_from_cookies, VisitorId};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let headers: Vec<&str> = text.split('\n').collect();
    let found = visitor_from_cookies(headers.iter().copied());

    // The order of the headers does not matter, nor does sending them as one header joined with `;`.
    let reversed = visitor_from_cookies(headers.iter().rev().copied());
    assert_eq!(
        found, reversed,
        "the header order changed the visitor: {headers:?}"
    );
    let joined = headers.join(";");
    assert_eq!(
        found,
        visitor_from_cookies([joined.as_str()]),
        "one joined header read another visitor: {headers:?}"
    );

    let Some(id) = found else {
        return;
    };
    let text = id.as_str();
    assert!(well_formed(text), "malformed id {text:?} from {headers:?}");
    assert_eq!(VisitorId::parse(text).as_ref(), Some(&id));
    assert_eq!(id.to_string(), text);
    assert_eq!(id.clone().into_string(), text);
    assert!(
        headers.iter().any(|h| h.contains(text)),
        "the id {text:?} is in none of {headers:?}"
    );

    // A planted duplicate, in the same header or another, makes the cookie count as none.
    let planted = format!("__visitor={text}");
    let mut more = headers.clone();
    more.push(&planted);
    assert_eq!(visitor_from_cookies(more.iter().copied()), None, "{more:?}");
    let same_header = format!("{joined}; {planted}");
    assert_eq!(
        visitor_from_cookies([same_header.as_str()]),
        None,
        "{same_header:?}"
    );
});

/// `^vis_[0-9a-f]{48}$`, written out.
fn well_formed(text: &str) -> bool {
    text.len() == 52
        && text.starts_with("vis_")
        && text[4..]
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}
