//! Visitor ids (`vis_` + 48 lower-case hex) and reading them, and the library's other cookies, from a request's
//! `Cookie` headers.

use std::fmt;

use rand::RngCore;

/// Name of the visitor cookie.
pub const COOKIE_NAME: &str = "__visitor";
/// Random bytes in an id.
const ID_BYTES: usize = 24;
const PREFIX: &str = "vis_";
const HEX: &[u8; 16] = b"0123456789abcdef";

/// An opaque visitor id: `vis_` followed by 48 lower-case hex digits from a CSPRNG.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct VisitorId(String);

impl VisitorId {
    /// A fresh id from the operating system-seeded CSPRNG.
    pub fn generate() -> Self {
        let mut bytes = [0u8; ID_BYTES];
        // ThreadRng is a ChaCha-based CSPRNG reseeded from the operating system.
        rand::rng().fill_bytes(&mut bytes);
        let mut id = String::with_capacity(PREFIX.len() + 2 * ID_BYTES);
        id.push_str(PREFIX);
        for b in bytes {
            id.push(char::from(HEX[usize::from(b >> 4)]));
            id.push(char::from(HEX[usize::from(b & 15)]));
        }
        VisitorId(id)
    }

    /// Accepts exactly `^vis_[a-f0-9]{48}$`.
    pub fn parse(value: &str) -> Option<Self> {
        let hex = value.strip_prefix(PREFIX)?;
        let valid = hex.len() == 2 * ID_BYTES
            && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
        valid.then(|| VisitorId(value.to_owned()))
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The id's text, owned.
    pub fn into_string(self) -> String {
        self.0
    }
}

impl fmt::Display for VisitorId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for VisitorId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Ids are pseudonymous but still identifiers: show only a prefix in debug output and logs.
        write!(f, "VisitorId({}…)", &self.0[..PREFIX.len() + 6])
    }
}

impl AsRef<str> for VisitorId {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

/// The visitor id carried by a request's `Cookie` header values, if there is exactly one `__visitor` cookie
/// and its value is a well-formed id. Several `__visitor` cookies (a planted duplicate, say) count as none.
pub fn visitor_from_cookies<'a>(headers: impl IntoIterator<Item = &'a str>) -> Option<VisitorId> {
    VisitorId::parse(cookie_value(headers, COOKIE_NAME)?)
}

/// The value of the one cookie named `name` in a request's `Cookie` header values, read as browsers write
/// them (RFC 6265 §5.2): pairs split at `;`, name and value trimmed of spaces and tabs, and a value in double
/// quotes taken without them. Several cookies of that name, in one header or in several, count as none: a
/// duplicate planted by a sibling domain must not choose which one is read. Every cookie the library reads
/// goes through here, so they cannot disagree on how a header is read.
pub fn cookie_value<'a>(headers: impl IntoIterator<Item = &'a str>, name: &str) -> Option<&'a str> {
    let mut found = None;
    for header in headers {
        for pair in header.split(';') {
            let Some((key, value)) = pair.split_once('=') else {
                continue;
            };
            if key.trim_matches([' ', '\t']) != name {
                continue;
            }
            if found.is_some() {
                return None;
            }
            let value = value.trim_matches([' ', '\t']);
            let value = value
                .strip_prefix('"')
                .and_then(|v| v.strip_suffix('"'))
                .unwrap_or(value);
            found = Some(value);
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_ids_are_well_formed_and_distinct() {
        let a = VisitorId::generate();
        let b = VisitorId::generate();
        assert_ne!(a, b);
        assert_eq!(VisitorId::parse(a.as_str()), Some(a.clone()));
        assert_eq!(a.as_str().len(), 52);
        assert!(!format!("{a:?}").contains(&a.as_str()[12..]));
    }

    #[test]
    fn parse_is_exact() {
        let good = format!("vis_{}", "a1".repeat(24));
        assert!(VisitorId::parse(&good).is_some());
        assert!(VisitorId::parse(&good.to_uppercase()).is_none());
        assert!(VisitorId::parse(&format!("{good}0")).is_none());
        assert!(VisitorId::parse(&good[..51]).is_none());
        assert!(VisitorId::parse(&format!("vis_{}", "g".repeat(48))).is_none());
        assert!(VisitorId::parse(&format!("sub_{}", "a".repeat(48))).is_none());
    }

    #[test]
    fn exactly_one_cookie_counts() {
        let id = format!("vis_{}", "0f".repeat(24));
        let one = format!("a=1; __visitor={id}; b=2");
        assert_eq!(visitor_from_cookies([one.as_str()]).unwrap().as_str(), id);
        let twice = format!("__visitor={id}; __visitor={id}");
        assert_eq!(visitor_from_cookies([twice.as_str()]), None);
        let split = format!("__visitor={id}");
        assert_eq!(visitor_from_cookies([split.as_str(), split.as_str()]), None);
        assert_eq!(visitor_from_cookies(["__visitor=vis_bad"]), None);
        assert_eq!(visitor_from_cookies(["x__visitor=1"]), None);
        assert_eq!(visitor_from_cookies(std::iter::empty()), None);
    }

    #[test]
    fn every_cookie_is_read_alike() {
        for header in [
            "__visitor_learning=ses_x",
            "a=1;__visitor_learning=ses_x",
            " __visitor_learning = ses_x ; b=2",
            "\t__visitor_learning=\"ses_x\"\t",
        ] {
            assert_eq!(
                cookie_value([header], "__visitor_learning"),
                Some("ses_x"),
                "{header:?}"
            );
        }
        let two = ["__visitor_learning=a", " __visitor_learning=\"a\""];
        assert_eq!(cookie_value(two, "__visitor_learning"), None);
        assert_eq!(
            cookie_value(
                ["__visitor_learningx=a; x__visitor_learning=b"],
                "__visitor_learning"
            ),
            None
        );
        // The visitor cookie the same way, then checked as an id.
        let id = format!("vis_{}", "0f".repeat(24));
        let spaced = format!(" __visitor = \"{id}\" ");
        assert_eq!(
            visitor_from_cookies([spaced.as_str()]).unwrap().as_str(),
            id
        );
    }
}
