//! The browser client, served from the binary: `janitor.js`, an ES module that collects the payload's signals
//! and calls the endpoint (see the README's "Add the client to your app"), and beside it `janitor-extended.js`,
//! the part it loads only when the page turns the extended signals on.

use std::sync::LazyLock;

use axum::body::Body;
use axum::response::Response;
use http::header::{
    HeaderValue, CACHE_CONTROL, CONTENT_TYPE, ETAG, IF_NONE_MATCH, X_CONTENT_TYPE_OPTIONS,
};
use http::{HeaderMap, StatusCode};
use sha2::{Digest, Sha256};

/// The browser client's source, as served at the script path.
pub const CLIENT_SCRIPT: &str = include_str!("../assets/janitor.js");

/// The extended signals' part of the client, served beside it as [`EXTENDED_SCRIPT_NAME`]: the client imports
/// it only when `extendedSignals` is on, so every other page loads [`CLIENT_SCRIPT`] alone.
pub const EXTENDED_SCRIPT: &str = include_str!("../assets/janitor-extended.js");

/// The file name the client imports the extended part by, from the folder it was served from.
pub const EXTENDED_SCRIPT_NAME: &str = "janitor-extended.js";

/// The automation evidence's part of the client, served beside it as [`AUTOMATION_SCRIPT_NAME`]: the client
/// imports it only when `automationEvidence` is on.
pub const AUTOMATION_SCRIPT: &str = include_str!("../assets/janitor-automation.js");

/// The file name the client imports the automation part by.
pub const AUTOMATION_SCRIPT_NAME: &str = "janitor-automation.js";

/// A strong validator that changes whenever the embedded file does: the first 128 bits of its SHA-256.
fn etag_of(source: &str) -> String {
    let digest = Sha256::digest(source.as_bytes());
    let hex: String = digest[..16].iter().map(|b| format!("{b:02x}")).collect();
    format!("\"{hex}\"")
}

static ETAG_VALUE: LazyLock<String> = LazyLock::new(|| etag_of(CLIENT_SCRIPT));
static EXTENDED_ETAG: LazyLock<String> = LazyLock::new(|| etag_of(EXTENDED_SCRIPT));
static AUTOMATION_ETAG: LazyLock<String> = LazyLock::new(|| etag_of(AUTOMATION_SCRIPT));

/// The `ETag` the script is served with (quotes included).
pub fn client_script_etag() -> &'static str {
    &ETAG_VALUE
}

/// Where the client's part `name` is served for a client served at `script_path`: beside it.
pub(crate) fn part_path(script_path: &str, name: &str) -> String {
    let folder = script_path.rfind('/').map_or("/", |at| &script_path[..=at]);
    format!("{folder}{name}")
}

/// The names of the client's parts, served beside it.
pub(crate) const PART_NAMES: [&str; 2] = [EXTENDED_SCRIPT_NAME, AUTOMATION_SCRIPT_NAME];

/// Whether an `If-None-Match` header names the current version (`*`, or a tag in its list; `W/` tags compare
/// weakly, as the header requires).
fn matches(headers: &HeaderMap, etag: &str) -> bool {
    headers
        .get_all(IF_NONE_MATCH)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .any(|tag| tag == "*" || tag.strip_prefix("W/").unwrap_or(tag) == etag)
}

/// Answers a GET (or HEAD) for the script: the file, or 304 when the browser's copy is current.
pub(crate) async fn serve(headers: HeaderMap) -> Response {
    answer(&headers, CLIENT_SCRIPT, client_script_etag())
}

/// Answers a GET (or HEAD) for the extended part, as [`serve`] does for the client.
pub(crate) async fn serve_extended(headers: HeaderMap) -> Response {
    answer(&headers, EXTENDED_SCRIPT, &EXTENDED_ETAG)
}

/// Answers a GET (or HEAD) for the automation part, as [`serve`] does for the client.
pub(crate) async fn serve_automation(headers: HeaderMap) -> Response {
    answer(&headers, AUTOMATION_SCRIPT, &AUTOMATION_ETAG)
}

fn answer(headers: &HeaderMap, source: &'static str, etag: &str) -> Response {
    let fresh = matches(headers, etag);
    let mut response = if fresh {
        Response::new(Body::empty())
    } else {
        Response::new(Body::from(source))
    };
    if fresh {
        *response.status_mut() = StatusCode::NOT_MODIFIED;
    }
    let h = response.headers_mut();
    h.insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/javascript; charset=utf-8"),
    );
    h.insert(
        CACHE_CONTROL,
        HeaderValue::from_static("public, max-age=3600"),
    );
    h.insert(X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    if let Ok(value) = HeaderValue::from_str(etag) {
        h.insert(ETAG, value);
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(values: &[&str]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for v in values {
            headers.append(IF_NONE_MATCH, HeaderValue::from_str(v).unwrap());
        }
        headers
    }

    #[test]
    fn the_parts_are_served_beside_the_client() {
        let extended = |path| part_path(path, EXTENDED_SCRIPT_NAME);
        assert_eq!(extended("/janitor.js"), "/janitor-extended.js");
        assert_eq!(
            extended("/static/js/c.js"),
            "/static/js/janitor-extended.js"
        );
        assert_ne!(*EXTENDED_ETAG, client_script_etag());
        assert_ne!(*AUTOMATION_ETAG, *EXTENDED_ETAG);
        for (name, source) in [
            (EXTENDED_SCRIPT_NAME, EXTENDED_SCRIPT),
            (AUTOMATION_SCRIPT_NAME, AUTOMATION_SCRIPT),
        ] {
            assert!(
                CLIENT_SCRIPT.contains(&format!("import(new URL(\"{name}\", import.meta.url))"))
            );
            assert!(source.contains("export async function headers("));
        }
    }

    #[test]
    fn etag_is_a_strong_hash_of_the_file() {
        let etag = client_script_etag();
        assert_eq!(etag.len(), 34);
        assert!(etag.starts_with('"') && etag.ends_with('"'));
        assert!(etag[1..33].bytes().all(|b| b.is_ascii_hexdigit()));
        assert_eq!(etag, client_script_etag(), "computed once, stable");
    }

    #[test]
    fn if_none_match_forms() {
        let etag = client_script_etag();
        assert!(matches(&with(&[etag]), etag));
        assert!(matches(&with(&["*"]), etag));
        assert!(matches(&with(&[&format!("\"old\", {etag}")]), etag));
        assert!(matches(&with(&["\"old\"", etag]), etag));
        assert!(matches(&with(&[&format!("W/{etag}")]), etag));
        assert!(!matches(&with(&[]), etag));
        assert!(!matches(&with(&["\"old\""]), etag));
        assert!(!matches(&with(&[&etag[1..33]]), etag), "unquoted");
    }

    #[test]
    fn the_client_stays_small_and_self_contained() {
        assert!(CLIENT_SCRIPT.contains("export function createVisitorClient"));
        assert!(
            !CLIENT_SCRIPT
                .lines()
                .any(|l| l.trim_start().starts_with("import")),
            "no dependencies"
        );
        assert!(CLIENT_SCRIPT.len() < 16_384);
    }
}
