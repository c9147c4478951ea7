//! What can go wrong in the identity directory: refused input (naming the field and the rule, with its
//! bounds), the conflicts the directory's rules forbid, and storage.

use crate::error::StoreError;

/// Why a directory operation failed. Nothing was changed when one is returned.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DirectoryError {
    /// The input breaks a rule; nothing was read or written.
    #[error("invalid directory input at `{field}`: {problem}")]
    Invalid {
        /// The offending field, as the JSON names it (`scopes[2]` for an item).
        field: String,
        /// The rule it broke, with its bounds.
        problem: String,
    },
    /// The subject exists with the other kind; a subject's kind never changes.
    #[error("identity subject kind cannot change")]
    KindConflict,
    /// A subject the operation needs is not in the directory.
    #[error("identity subject at `{field}` is not in the directory")]
    UnknownSubject {
        /// Which one: `subject`, `principal` or `actor`.
        field: &'static str,
    },
    /// The verified key belongs to another subject. Keys are never moved or shared: remove it from its
    /// subject first.
    #[error("verified key already belongs to another subject")]
    KeyClaimed,
    /// A subject cannot delegate to itself.
    #[error("a delegation's principal and actor must be different subjects")]
    SelfDelegation,
    /// Storage failed or refused the operation.
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl DirectoryError {
    pub(crate) fn invalid(field: impl Into<String>, problem: impl Into<String>) -> Self {
        DirectoryError::Invalid {
            field: field.into(),
            problem: problem.into(),
        }
    }
}

/// `value` trimmed, refused unless it holds `min..=max` characters (Unicode scalar values).
pub(crate) fn trimmed(
    field: &str,
    value: &str,
    min: usize,
    max: usize,
) -> Result<String, DirectoryError> {
    let text = value.trim();
    let length = text.chars().count();
    if length < min || length > max {
        return Err(DirectoryError::invalid(
            field,
            format!("must be {min}–{max} characters after trimming, got {length}"),
        ));
    }
    Ok(text.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trimming_counts_characters() {
        assert_eq!(trimmed("f", "  ab ", 1, 2).unwrap(), "ab");
        assert!(trimmed("f", "   ", 1, 2).is_err());
        assert!(trimmed("f", "abc", 1, 2).is_err());
        assert_eq!(trimmed("f", "éé", 1, 2).unwrap(), "éé");
        let err = trimmed("issuer", "", 1, 256).unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid directory input at `issuer`: must be 1–256 characters after trimming, got 0"
        );
    }
}
