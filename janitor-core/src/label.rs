//! Pseudonymous labels: `"sub_" + hex(HMAC-SHA256(secret, JSON(["janitor-subject-v1", namespace, value])))`.
//!
//! Labels are a cross-language contract: an instance in any language with the same secret and namespace must
//! derive the same label, so the JSON is written exactly as JavaScript's `JSON.stringify` writes it (no spaces,
//! non-ASCII raw, lower-case `\u00xx` escapes for control characters, whole numbers without a fraction).
//! `serde_json`'s compact writer has those properties for strings and integers; floats are never part of a label.

use hmac::{Hmac, Mac};
use serde_json::{json, Value};
use sha2::Sha256;

use crate::js::is_js_whitespace;

/// Shortest secret, in UTF-16 code units (as JavaScript counts a string's length).
pub const MIN_SECRET_UNITS: usize = 32;
/// Longest secret, in UTF-16 code units.
pub const MAX_SECRET_UNITS: usize = 4096;
/// Longest namespace, in UTF-16 code units.
pub const MAX_NAMESPACE_UNITS: usize = 128;
/// Prefix of every label.
pub const LABEL_PREFIX: &str = "sub_";

const DOMAIN: &str = "janitor-subject-v1";

/// Why a label key could not be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LabelError {
    /// The secret is shorter or longer than allowed.
    #[error(
        "secret must be {MIN_SECRET_UNITS}–{MAX_SECRET_UNITS} UTF-16 code units long, got {0}"
    )]
    SecretLength(usize),
    /// The namespace is blank after trimming.
    #[error("namespace must not be blank")]
    BlankNamespace,
    /// The namespace is too long.
    #[error("namespace must be at most {MAX_NAMESPACE_UNITS} UTF-16 code units long, got {0}")]
    NamespaceLength(usize),
    /// The secret is a placeholder rather than a random value (see [`check_secret_strength`]).
    #[error("secret is too weak: {0}; use a random value, e.g. `openssl rand -hex 32`")]
    WeakSecret(&'static str),
}

/// Fewest distinct characters a deployment's secret may have.
pub const MIN_SECRET_DISTINCT: usize = 6;

/// Refuses a secret that is plainly not random, for deployments (the configuration of
/// [`JanitorConfig`](https://docs.rs/janitor-axum) applies it; [`LabelKey::new`] does not, so that the
/// contract's vectors, whose secrets are placeholders, still verify).
///
/// The rules, each a [`LabelError::WeakSecret`]:
/// - at least 32 characters (Unicode scalar values). A character is at least one UTF-8 byte and one UTF-16
///   unit, so the secret is also 32 long as Rust, Elixir (bytes), JavaScript (UTF-16 units) and Python
///   (code points) count; `LabelKey::new` alone would take 16 emoji, which JavaScript counts as 32;
/// - not only whitespace;
/// - at least [`MIN_SECRET_DISTINCT`] distinct characters, none of them making up half of the secret or more
///   (`"abcdef"` and 27 `a`s);
/// - not one shorter string repeated (`"0123456789abcdef"` twice), nor such a repetition with a partial last
///   copy or up to two characters added (`"abcdefabcdef…ab"`, `"passwordpassword…1"`);
/// - not mostly a run of consecutive characters (`"0123456789…"`);
/// - at least 32 characters left without placeholder words (`secret`, `password`, `change`, `example`, …).
///
/// No rule can measure entropy from one sample; these catch what people actually deploy by mistake (a run
/// of one key, a pattern typed by hand, a test fixture) and never refuse a generated secret in practice: 32
/// random hex digits show fewer than 6 distinct digits with probability below 10⁻¹², one digit 16 times or
/// more with probability below 10⁻⁹, and are a repetition with probability below 10⁻¹⁸.
pub fn check_secret_strength(secret: &str) -> Result<(), LabelError> {
    let characters = secret.chars().count();
    if characters < MIN_SECRET_UNITS {
        return Err(LabelError::WeakSecret("it has fewer than 32 characters"));
    }
    if secret.chars().all(char::is_whitespace) {
        return Err(LabelError::WeakSecret("it is only whitespace"));
    }
    let mut distinct: Vec<char> = secret.chars().collect();
    distinct.sort_unstable();
    distinct.dedup();
    if distinct.len() < MIN_SECRET_DISTINCT {
        return Err(LabelError::WeakSecret(
            "it has fewer than 6 distinct characters",
        ));
    }
    let chars: Vec<char> = secret.chars().collect();
    let most = distinct
        .iter()
        .map(|d| chars.iter().filter(|c| *c == d).count())
        .max()
        .unwrap_or(0);
    if most * 2 >= characters {
        return Err(LabelError::WeakSecret(
            "one character makes up half of it or more",
        ));
    }
    if repeats_a_unit(&chars) {
        return Err(LabelError::WeakSecret("it is one shorter string repeated"));
    }
    if runs_in_sequence(&chars) {
        return Err(LabelError::WeakSecret(
            "it is mostly a run of consecutive characters",
        ));
    }
    let rest = PLACEHOLDER_WORDS
        .iter()
        .fold(secret.to_lowercase(), |rest, word| rest.replace(word, ""));
    if rest.chars().count() < MIN_SECRET_UNITS {
        return Err(LabelError::WeakSecret(
            "without its placeholder words (\"secret\", \"password\", \"change\", ...) it has fewer than 32 \
             characters",
        ));
    }
    Ok(())
}

/// Words found in secrets typed as placeholders. A secret may contain them (`prod-secret-` before 32 random
/// characters is fine); it is refused when what is left without them is shorter than 32 characters.
const PLACEHOLDER_WORDS: [&str; 13] = [
    "secret",
    "password",
    "passwd",
    "passw0rd",
    "change",
    "example",
    "placeholder",
    "replace",
    "default",
    "qwerty",
    "letmein",
    "sample",
    "insecure",
];

/// Whether the whole secret, but for at most its last two characters, repeats a unit at most half its length:
/// `abcdefabcdef…ab` (a partial last copy), `passwordpassword…1`.
fn repeats_a_unit(chars: &[char]) -> bool {
    let n = chars.len();
    (1..=n / 2).any(|period| {
        let periodic = chars[period..]
            .iter()
            .zip(chars)
            .take_while(|(later, earlier)| later == earlier)
            .count()
            + period;
        periodic + 2 >= n
    })
}

/// Whether at least three quarters of the neighbouring pairs step up or down by one (`0123456789abc…`,
/// `zyxw…`): a random secret of 32 hex digits does so with probability below 10⁻²⁰.
fn runs_in_sequence(chars: &[char]) -> bool {
    let steps = chars
        .windows(2)
        .filter(|pair| (pair[0] as i64 - pair[1] as i64).abs() == 1)
        .count();
    steps * 4 >= (chars.len() - 1) * 3
}

/// A validated secret and namespace, with the HMAC key schedule computed once.
///
/// `Debug` never prints the secret.
#[derive(Clone)]
pub struct LabelKey {
    mac: Hmac<Sha256>,
    namespace: String,
}

impl std::fmt::Debug for LabelKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LabelKey")
            .field("namespace", &self.namespace)
            .finish_non_exhaustive()
    }
}

impl LabelKey {
    /// Validates the secret (32–4096 UTF-16 units) and namespace (non-blank, ≤ 128 units). The namespace is
    /// signed as given, untrimmed, as the reference does.
    pub fn new(secret: &str, namespace: &str) -> Result<Self, LabelError> {
        let units = secret.encode_utf16().count();
        if !(MIN_SECRET_UNITS..=MAX_SECRET_UNITS).contains(&units) {
            return Err(LabelError::SecretLength(units));
        }
        if namespace.trim_matches(is_js_whitespace).is_empty() {
            return Err(LabelError::BlankNamespace);
        }
        let ns_units = namespace.encode_utf16().count();
        if ns_units > MAX_NAMESPACE_UNITS {
            return Err(LabelError::NamespaceLength(ns_units));
        }
        // HMAC hashes keys longer than the block size itself, as the contract requires.
        let mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes())
            .expect("HMAC accepts keys of any length");
        Ok(LabelKey {
            mac,
            namespace: namespace.to_owned(),
        })
    }

    /// The namespace labels are bound to.
    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    /// The label of an arbitrary value string.
    pub fn label(&self, value: &str) -> String {
        let message = compact_json(&json!([DOMAIN, self.namespace, value]));
        let mut mac = self.mac.clone();
        mac.update(message.as_bytes());
        let digest = mac.finalize().into_bytes();
        let mut out = String::with_capacity(LABEL_PREFIX.len() + 64);
        out.push_str(LABEL_PREFIX);
        for byte in digest {
            out.push(char::from(HEX[usize::from(byte >> 4)]));
            out.push(char::from(HEX[usize::from(byte & 15)]));
        }
        out
    }

    /// A keyed fingerprint of the secret and namespace: instances that share a database compare it to find one
    /// started with another secret. It reveals nothing of the secret.
    pub fn fingerprint(&self) -> String {
        self.label("janitor.key-check")
    }

    /// The subject label of an account id (`sub_<64 hex>`).
    pub fn subject(&self, account_id: &str) -> String {
        self.label(account_id)
    }

    /// The label of a protection key (quota rows, the inference budget row).
    pub fn protection(&self, key: &ProtectionKey<'_>) -> String {
        self.label(&key.value())
    }

    /// The label of an evidence value under a purpose.
    pub fn evidence(&self, key: &EvidenceKey<'_>) -> String {
        self.label(&key.value())
    }
}

const HEX: &[u8; 16] = b"0123456789abcdef";

/// JSON as JavaScript's `JSON.stringify` writes it, for the strings, integers and arrays labels are made of.
pub fn compact_json(value: &Value) -> String {
    // serde_json's compact writer and JSON.stringify agree on strings (same escapes, lower-case hex, DEL and
    // U+2028/U+2029 left raw) and on integers; labels never hold floats.
    serde_json::to_string(value).expect("serializing a JSON value cannot fail")
}

/// What a protection label is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProtectionKey<'a> {
    /// The unsharded global request quota.
    Global,
    /// The shared inference budget row.
    Evaluator,
    /// The per-account request quota.
    Account(&'a str),
    /// The per-session request quota.
    Session(&'a str),
    /// One slice of a sharded global quota.
    GlobalShard {
        /// Effective number of shards.
        shards: u32,
        /// This shard, `0..shards`.
        shard: u32,
    },
}

impl ProtectionKey<'_> {
    /// The value that is labelled: `JSON(["protection-v1", v])`.
    pub fn value(&self) -> String {
        let inner = match *self {
            ProtectionKey::Global => "global".to_owned(),
            ProtectionKey::Evaluator => "evaluator".to_owned(),
            ProtectionKey::Account(id) => compact_json(&json!(["account", id])),
            ProtectionKey::Session(id) => compact_json(&json!(["session", id])),
            ProtectionKey::GlobalShard { shards, shard } => {
                compact_json(&json!(["global-shard-v1", shards, shard]))
            }
        };
        compact_json(&json!(["protection-v1", inner]))
    }
}

/// What an evidence label is for: a purpose and its value (a string or an array such as `[issuer, eventId]`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum EvidenceKey<'a> {
    /// The application scope (`"application"`).
    Scope(&'a str),
    /// An event id (idempotency key).
    Event(&'a str),
    /// An event payload digest.
    EventPayload(&'a str),
    /// A raw session id.
    Session(&'a str),
    /// A verification by an issuer of an event.
    Verification {
        /// Who verified.
        issuer: &'a str,
        /// Which event.
        event_id: &'a str,
    },
    /// A revocation by an issuer of an event.
    Revocation {
        /// Who revoked.
        issuer: &'a str,
        /// Which event.
        event_id: &'a str,
    },
    /// A device payload digest.
    DevicePayload(&'a str),
    /// Any purpose with any JSON value, for purposes this version does not name.
    Other {
        /// The purpose string.
        purpose: &'a str,
        /// The value.
        value: &'a Value,
    },
}

impl EvidenceKey<'_> {
    /// The value that is labelled: `JSON(["evidence-v1", purpose, value])`.
    pub fn value(&self) -> String {
        let (purpose, value) = match *self {
            EvidenceKey::Scope(v) => ("scope", json!(v)),
            EvidenceKey::Event(v) => ("event", json!(v)),
            EvidenceKey::EventPayload(v) => ("event-payload", json!(v)),
            EvidenceKey::Session(v) => ("session", json!(v)),
            EvidenceKey::Verification { issuer, event_id } => {
                ("verification", json!([issuer, event_id]))
            }
            EvidenceKey::Revocation { issuer, event_id } => {
                ("revocation", json!([issuer, event_id]))
            }
            EvidenceKey::DevicePayload(v) => ("device-payload", json!(v)),
            EvidenceKey::Other { purpose, value } => (purpose, value.clone()),
        };
        compact_json(&json!(["evidence-v1", purpose, value]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compact_json_matches_json_stringify() {
        let v = json!([
            "\u{1}\u{8}\u{c}\n\r\t\u{1f}\u{7f}\u{2028}é\"\\/",
            1735689600000_i64,
            -3
        ]);
        assert_eq!(
            compact_json(&v),
            "[\"\\u0001\\b\\f\\n\\r\\t\\u001f\u{7f}\u{2028}é\\\"\\\\/\",1735689600000,-3]"
        );
    }

    #[test]
    fn secret_and_namespace_bounds() {
        let ns = "fixture";
        assert_eq!(
            LabelKey::new(&"a".repeat(31), ns).unwrap_err(),
            LabelError::SecretLength(31)
        );
        assert!(LabelKey::new(&"a".repeat(32), ns).is_ok());
        assert!(LabelKey::new(&"a".repeat(4096), ns).is_ok());
        assert_eq!(
            LabelKey::new(&"a".repeat(4097), ns).unwrap_err(),
            LabelError::SecretLength(4097)
        );
        // 16 emoji are 32 UTF-16 units although only 16 characters.
        assert!(LabelKey::new(&"😀".repeat(16), ns).is_ok());
        assert!(LabelKey::new(&"😀".repeat(15), ns).is_err());
        let secret = "s".repeat(32);
        assert_eq!(
            LabelKey::new(&secret, " \u{FEFF} ").unwrap_err(),
            LabelError::BlankNamespace
        );
        assert!(LabelKey::new(&secret, &"n".repeat(128)).is_ok());
        assert_eq!(
            LabelKey::new(&secret, &"n".repeat(129)).unwrap_err(),
            LabelError::NamespaceLength(129)
        );
    }

    #[test]
    fn placeholder_secrets_are_weak() {
        let weak = |s: &str| match check_secret_strength(s) {
            Err(LabelError::WeakSecret(reason)) => reason,
            other => panic!("{s:?} gave {other:?}"),
        };
        assert_eq!(weak(&" ".repeat(32)), "it is only whitespace");
        assert_eq!(weak(&"\t\n \u{3000}".repeat(8)), "it is only whitespace");
        assert_eq!(
            weak(&"a".repeat(64)),
            "it has fewer than 6 distinct characters"
        );
        assert_eq!(
            weak(&"abcde".repeat(7)),
            "it has fewer than 6 distinct characters"
        );
        assert_eq!(
            weak("0123456789abcdef0123456789abcdef"),
            "it is one shorter string repeated"
        );
        assert_eq!(
            weak(&"changeme-".repeat(4)),
            "it is one shorter string repeated"
        );
        // A partial last copy, or a character added (issue 28, defect 11).
        for repeated in [
            "abcdefabcdefabcdefabcdefabcdefab".to_owned(),
            "passwordpasswordpasswordpassword1".to_owned(),
            format!("{}x", "1a2b3c".repeat(6)),
        ] {
            assert_eq!(
                weak(&repeated),
                "it is one shorter string repeated",
                "{repeated}"
            );
        }
        assert_eq!(
            weak("0123456789abcdefghijklmnopqrstuv"),
            "it is mostly a run of consecutive characters"
        );
        for placeholder in [
            "your-secret-key-here-change-it-now!",
            "my-Production-Password-for-janitor-2024",
            "please-REPLACE-this-with-a-real-value",
            "default-key-for-janitor-dev-only!!",
        ] {
            assert!(
                weak(placeholder).contains("placeholder words"),
                "{placeholder}"
            );
        }
        // A placeholder word beside 32 random characters leaves enough.
        assert_eq!(
            check_secret_strength("prod-secret-f3a91c07be5d4e28a6b0c9d17e4f2a38"),
            Ok(())
        );
        // 16 emoji are 32 units to JavaScript but 16 characters to Python or Elixir's String.length.
        assert_eq!(
            weak("😀😁😂🤣😃😄😅😆😉😊😋😎😍😘🥰😗"),
            "it has fewer than 32 characters"
        );
        // 31 characters, one short; 32, just enough.
        let random = "f3a91c07be5d4e28a6b0c9d17e4f2a38";
        assert_eq!(weak(&random[..31]), "it has fewer than 32 characters");
        assert_eq!(check_secret_strength(random), Ok(()));
        // Six distinct characters are enough, five are not, whatever the length.
        let six = "aebfcdafbecdfaebdcfabecdafbdcebfad";
        assert_eq!(check_secret_strength(six), Ok(()));
        assert_eq!(
            weak(&six.replace('f', "e")),
            "it has fewer than 6 distinct characters"
        );
        // Repetition means the whole secret: a repeated run inside it is fine, and so is a non-ASCII secret;
        // but not one character making up half of it (the probe's `abcdef` and 27 `a`s), at the bound ±1.
        assert_eq!(
            check_secret_strength("aaaaaaaaaaaaaaa-f3a91c07be5d4e2a6b0c"),
            Ok(())
        );
        assert_eq!(
            weak(&format!("abcdef{}", "a".repeat(27))),
            "one character makes up half of it or more"
        );
        let half = format!("{}{}", "x".repeat(16), "f3a91c07be5d4e28");
        assert_eq!(weak(&half), "one character makes up half of it or more");
        let under_half = format!("{}{}", "x".repeat(15), "f3a91c07be5d4e28b");
        assert_eq!(check_secret_strength(&under_half), Ok(()));
        assert_eq!(
            check_secret_strength("ключ-для-подписи-меток-2026-ξψω-€"),
            Ok(())
        );
        assert!(!LabelError::WeakSecret("x").to_string().contains(random));
    }

    #[test]
    fn namespace_is_signed_untrimmed_and_isolates() {
        let secret = "k".repeat(40);
        let a = LabelKey::new(&secret, "app").unwrap();
        let b = LabelKey::new(&secret, " app").unwrap();
        assert_ne!(a.subject("x"), b.subject("x"));
        assert_eq!(a.subject("x").len(), 68);
        assert!(format!("{a:?}").contains("app") && !format!("{a:?}").contains(&secret));
    }

    #[test]
    fn long_secrets_are_hashed_first() {
        // HMAC's rule: a key longer than the 64-byte block equals its SHA-256 digest used as the key.
        use sha2::Digest;
        let long = "L".repeat(100);
        let digest = Sha256::digest(long.as_bytes());
        let mut direct = Hmac::<Sha256>::new_from_slice(&digest).unwrap();
        direct.update(compact_json(&json!([DOMAIN, "ns", "v"])).as_bytes());
        let hex: String = direct
            .finalize()
            .into_bytes()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(
            LabelKey::new(&long, "ns").unwrap().label("v"),
            format!("sub_{hex}")
        );
    }

    #[test]
    fn purposes_nest_as_json_strings() {
        assert_eq!(
            ProtectionKey::Global.value(),
            r#"["protection-v1","global"]"#
        );
        assert_eq!(
            ProtectionKey::GlobalShard {
                shards: 4,
                shard: 0
            }
            .value(),
            r#"["protection-v1","[\"global-shard-v1\",4,0]"]"#
        );
        assert_eq!(
            EvidenceKey::Verification {
                issuer: "auth",
                event_id: "proof-123"
            }
            .value(),
            r#"["evidence-v1","verification",["auth","proof-123"]]"#
        );
    }
}
