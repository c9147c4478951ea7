//! Delegations: a person's grant that lets an agent act for them, for one audience and a set of scopes, until
//! a time at most 30 days ahead.

use std::collections::BTreeSet;
use std::fmt;

use rand::RngCore;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::error::{trimmed, DirectoryError};
use crate::config::DAY_MS;
use crate::evidence::SubjectId;

/// Prefix of a delegation id.
pub const DELEGATION_PREFIX: &str = "dlg_";
/// Random bytes in a delegation id (written as 48 lower-case hex digits).
pub const DELEGATION_ID_BYTES: usize = 24;
/// The longest a delegation may last: 30 days, in milliseconds.
pub const MAX_DELEGATION_LIFETIME_MS: i64 = 30 * DAY_MS;
/// Scopes a delegation may grant (counted on the input, before duplicates are removed), and scopes an
/// assessment may require.
pub const MAX_SCOPES: usize = 32;
/// Characters of a scope after trimming.
pub const MAX_SCOPE_CHARS: usize = 256;
/// Characters of an audience after trimming.
pub const MAX_AUDIENCE_CHARS: usize = 256;

const HEX: &[u8; 16] = b"0123456789abcdef";

/// A delegation id, `^dlg_[a-f0-9]{48}$`, drawn from the operating system-seeded CSPRNG.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DelegationId(String);

impl DelegationId {
    /// A fresh random id.
    pub fn generate() -> Self {
        let mut bytes = [0u8; DELEGATION_ID_BYTES];
        rand::rng().fill_bytes(&mut bytes);
        let mut id = String::with_capacity(DELEGATION_PREFIX.len() + 2 * DELEGATION_ID_BYTES);
        id.push_str(DELEGATION_PREFIX);
        for b in bytes {
            id.push(char::from(HEX[usize::from(b >> 4)]));
            id.push(char::from(HEX[usize::from(b & 15)]));
        }
        DelegationId(id)
    }

    /// Accepts exactly `^dlg_[a-f0-9]{48}$`.
    pub fn parse(value: &str) -> Option<Self> {
        let hex = value.strip_prefix(DELEGATION_PREFIX)?;
        let well_formed = hex.len() == 2 * DELEGATION_ID_BYTES
            && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
        well_formed.then(|| DelegationId(value.to_owned()))
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for DelegationId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for DelegationId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "DelegationId({})", self.0)
    }
}

impl Serialize for DelegationId {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for DelegationId {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        DelegationId::parse(&text)
            .ok_or_else(|| serde::de::Error::custom("a delegation id is dlg_ and 48 hex digits"))
    }
}

/// What [`Directory::create_delegation`](super::Directory::create_delegation) is asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DelegationInput {
    /// The subject granting (usually a person).
    pub principal: SubjectId,
    /// The subject acting for it (usually an agent); never the principal.
    pub actor: SubjectId,
    /// Where the grant may be used: 1–256 characters after trimming.
    pub audience: String,
    /// What it allows: 1–32 scopes of 1–256 characters each after trimming.
    pub scopes: Vec<String>,
    /// When it ends, epoch milliseconds: after now and at most 30 days ahead.
    pub expires_at: i64,
}

/// A stored delegation: `{"id","principalId","actorId","audience","scopes","expiresAt"}`, plus `"revokedAt"`
/// once revoked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Delegation {
    /// Its id.
    pub id: DelegationId,
    /// The subject granting.
    pub principal_id: SubjectId,
    /// The subject acting.
    pub actor_id: SubjectId,
    /// Where it may be used (trimmed).
    pub audience: String,
    /// What it allows: trimmed, without duplicates, sorted.
    pub scopes: Vec<String>,
    /// When it ends, epoch milliseconds.
    pub expires_at: i64,
    /// When it was revoked (the first revocation), epoch milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revoked_at: Option<i64>,
}

/// Checks a list of scopes: 1–32 (`min` 1) or 0–32 (`min` 0) entries on the input list, each 1–256
/// characters after trimming; returns them trimmed, without duplicates, sorted.
pub(crate) fn scope_set(
    field: &str,
    scopes: &[String],
    min: usize,
) -> Result<Vec<String>, DirectoryError> {
    if scopes.len() < min || scopes.len() > MAX_SCOPES {
        return Err(DirectoryError::invalid(
            field,
            format!("must hold {min}–{MAX_SCOPES} scopes, got {}", scopes.len()),
        ));
    }
    let mut set = BTreeSet::new();
    for (i, scope) in scopes.iter().enumerate() {
        set.insert(trimmed(
            &format!("{field}[{i}]"),
            scope,
            1,
            MAX_SCOPE_CHARS,
        )?);
    }
    Ok(set.into_iter().collect())
}

impl DelegationInput {
    /// The delegation this input makes at `now_ms`, with a fresh id, or the first rule it breaks. The scope
    /// count is checked on the list as given; duplicates are then removed and the rest sorted.
    pub(crate) fn delegation(&self, now_ms: i64) -> Result<Delegation, DirectoryError> {
        if self.principal == self.actor {
            return Err(DirectoryError::SelfDelegation);
        }
        let audience = trimmed("audience", &self.audience, 1, MAX_AUDIENCE_CHARS)?;
        let scopes = scope_set("scopes", &self.scopes, 1)?;
        let latest = now_ms.saturating_add(MAX_DELEGATION_LIFETIME_MS);
        if self.expires_at <= now_ms || self.expires_at > latest {
            return Err(DirectoryError::invalid(
                "expiresAt",
                format!(
                    "must be after now ({now_ms}) and at most 30 days ahead ({latest}), got {}",
                    self.expires_at
                ),
            ));
        }
        Ok(Delegation {
            id: DelegationId::generate(),
            principal_id: self.principal.clone(),
            actor_id: self.actor.clone(),
            audience,
            scopes,
            expires_at: self.expires_at,
            revoked_at: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_random_and_well_formed() {
        let a = DelegationId::generate();
        assert!(DelegationId::parse(a.as_str()).is_some());
        assert_eq!(a.as_str().len(), 4 + 48);
        assert_ne!(a, DelegationId::generate());
        assert!(DelegationId::parse(&format!("dlg_{}", "a".repeat(47))).is_none());
        assert!(DelegationId::parse(&format!("dlg_{}", "a".repeat(49))).is_none());
        assert!(DelegationId::parse(&format!("dlg_{}", "A".repeat(48))).is_none());
        assert!(DelegationId::parse(&format!("sub_{}", "a".repeat(48))).is_none());
    }

    #[test]
    fn scopes_are_counted_then_deduplicated_and_sorted() {
        let list = |items: &[&str]| items.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            scope_set("scopes", &list(&[" b", "a ", "b"]), 1).unwrap(),
            ["a", "b"]
        );
        assert!(scope_set("scopes", &[], 1).is_err());
        assert!(scope_set("requiredScopes", &[], 0).unwrap().is_empty());
        let many: Vec<String> = (0..33).map(|_| "same".to_owned()).collect();
        assert!(
            scope_set("scopes", &many, 1).is_err(),
            "33 duplicates still count as 33"
        );
        assert_eq!(scope_set("scopes", &many[..32], 1).unwrap(), ["same"]);
        let err = scope_set("scopes", &list(&["ok", " "]), 1).unwrap_err();
        assert!(matches!(err, DirectoryError::Invalid { ref field, .. } if field == "scopes[1]"));
    }
}
