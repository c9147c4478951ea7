//! Verified keys: an email address, an external account or a public key that the application verified as a
//! subject's. Only a label of the key is stored (its digest), never the value.

use serde::{Deserialize, Serialize};
use serde_json::json;

use super::error::{trimmed, DirectoryError};
use crate::evidence::SubjectId;
use crate::label::{compact_json, LabelKey};

/// Characters of an issuer after trimming.
pub const MAX_ISSUER_CHARS: usize = 256;
/// Characters of a key value after trimming.
pub const MAX_KEY_VALUE_CHARS: usize = 512;
/// Characters of an email address (after trimming).
pub const MAX_EMAIL_CHARS: usize = 254;
/// The first element of the JSON text a key's digest labels.
pub const KEY_DIGEST_VERSION: &str = "identity-key-v1";

/// What kind of key the application verified.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum KeyType {
    /// An email address the subject proved to receive.
    Email,
    /// An account at an external identity provider.
    External,
    /// A public key (or its fingerprint) the subject proved to hold.
    PublicKey,
}

impl KeyType {
    /// The name in records and digests: `email`, `external` or `public-key`.
    pub fn as_str(&self) -> &'static str {
        match self {
            KeyType::Email => "email",
            KeyType::External => "external",
            KeyType::PublicKey => "public-key",
        }
    }
}

/// A key as the application verified it. The value is only ever labelled, never stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyInput {
    /// The kind of key.
    pub key_type: KeyType,
    /// Who verified it (the application, an identity provider): 1–256 characters after trimming.
    pub issuer: String,
    /// The key itself: 1–512 characters after trimming; an email address of at most 254 for
    /// [`KeyType::Email`].
    pub value: String,
}

impl KeyInput {
    /// A key input.
    pub fn new(key_type: KeyType, issuer: impl Into<String>, value: impl Into<String>) -> Self {
        KeyInput {
            key_type,
            issuer: issuer.into(),
            value: value.into(),
        }
    }

    /// The trimmed issuer and the trimmed, normalized value.
    ///
    /// An email is checked simply: one `@`, non-empty parts on both sides, no whitespace. Only the domain part
    /// is lower-cased; the local part is kept as given, since mail systems may tell its cases apart.
    pub fn normalized(&self) -> Result<(String, String), DirectoryError> {
        let issuer = trimmed("issuer", &self.issuer, 1, MAX_ISSUER_CHARS)?;
        let value = trimmed("value", &self.value, 1, MAX_KEY_VALUE_CHARS)?;
        if self.key_type != KeyType::Email {
            return Ok((issuer, value));
        }
        let length = value.chars().count();
        if length > MAX_EMAIL_CHARS {
            return Err(DirectoryError::invalid(
                "value",
                format!("an email must be at most {MAX_EMAIL_CHARS} characters, got {length}"),
            ));
        }
        let malformed = || {
            DirectoryError::invalid(
                "value",
                "an email needs one '@' with text on both sides and no whitespace",
            )
        };
        if value.chars().any(char::is_whitespace) || value.matches('@').count() != 1 {
            return Err(malformed());
        }
        let (local, domain) = value.rsplit_once('@').ok_or_else(malformed)?;
        if local.is_empty() || domain.is_empty() {
            return Err(malformed());
        }
        Ok((issuer, format!("{local}@{}", domain.to_lowercase())))
    }

    /// The digest the key is stored under: the label of `["identity-key-v1",type,issuer,value]` written as
    /// compact JSON, after normalization.
    pub fn digest(&self, key: &LabelKey) -> Result<String, DirectoryError> {
        let (issuer, value) = self.normalized()?;
        let text = compact_json(&json!([
            KEY_DIGEST_VERSION,
            self.key_type.as_str(),
            issuer,
            value
        ]));
        Ok(key.label(&text))
    }
}

/// A stored verified key: `{"digest","subjectId","type","issuer","verifiedAt"}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct KeyRecord {
    /// The label of the key.
    pub digest: String,
    /// The subject it belongs to.
    pub subject_id: SubjectId,
    /// The kind of key.
    #[serde(rename = "type")]
    pub key_type: KeyType,
    /// Who verified it (trimmed).
    pub issuer: String,
    /// When it was last verified, epoch milliseconds.
    pub verified_at: i64,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn email(value: &str) -> Result<String, DirectoryError> {
        KeyInput::new(KeyType::Email, "app", value)
            .normalized()
            .map(|(_, v)| v)
    }

    #[test]
    fn emails_lower_case_only_their_domain() {
        assert_eq!(
            email(" Ann.Lee@Example.COM ").unwrap(),
            "Ann.Lee@example.com"
        );
        for bad in ["ann", "@example.com", "ann@", "a@b@c", "an n@example.com"] {
            assert!(email(bad).is_err(), "{bad}");
        }
        let local = "a".repeat(64);
        let at_limit = format!("{local}@{}", "d".repeat(MAX_EMAIL_CHARS - 65));
        assert_eq!(at_limit.len(), MAX_EMAIL_CHARS);
        assert!(email(&at_limit).is_ok());
        assert!(email(&format!("{at_limit}d")).is_err());
    }

    #[test]
    fn issuer_and_value_bounds() {
        let ok = |issuer: &str, value: &str| {
            KeyInput::new(KeyType::External, issuer, value)
                .normalized()
                .is_ok()
        };
        assert!(ok(&"i".repeat(256), &"v".repeat(512)));
        assert!(!ok(&"i".repeat(257), "v"));
        assert!(!ok("i", &"v".repeat(513)));
        assert!(!ok(" ", "v"));
        assert!(!ok("i", " "));
    }

    #[test]
    fn the_digest_labels_the_compact_array() {
        let key = LabelKey::new(&"s".repeat(32), "ns").unwrap();
        let input = KeyInput::new(KeyType::PublicKey, " idp ", " ab\"c ");
        assert_eq!(
            input.digest(&key).unwrap(),
            key.label(r#"["identity-key-v1","public-key","idp","ab\"c"]"#)
        );
        let record = KeyRecord {
            digest: input.digest(&key).unwrap(),
            subject_id: SubjectId::from_label(key.subject("a")),
            key_type: KeyType::PublicKey,
            issuer: "idp".into(),
            verified_at: 5,
        };
        let value = serde_json::to_value(&record).unwrap();
        let mut keys: Vec<&str> = value
            .as_object()
            .unwrap()
            .keys()
            .map(|k| k.as_str())
            .collect();
        keys.sort();
        assert_eq!(
            keys,
            ["digest", "issuer", "subjectId", "type", "verifiedAt"]
        );
        assert_eq!(value["type"], "public-key");
    }
}
