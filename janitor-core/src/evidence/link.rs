//! Device links: the application's own verified statement that a browser belongs to a subject.
//!
//! Only the application creates one, after it verified the person (a password, a passkey, a recovery). The
//! library never associates an anonymous browser with an account by itself, and a visitor id restored by
//! similarity must never be passed here as if it were verified.

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::error::InputError;
use super::event::{named_enum, subject_id, visitor_id};
use super::ids::{visitor_text, LinkId, SubjectId};
use super::json::{choice, label_text, timestamp, Object};
use crate::config::DAY_MS;
use crate::visitor::VisitorId;

/// How far in the past a verification may lie when its link is made: 300 s.
pub const VERIFICATION_MAX_AGE_MS: i64 = 300_000;
/// How far in the future a verification time may lie (clock skew between servers): 5 s.
pub const VERIFICATION_MAX_SKEW_MS: i64 = 5_000;
/// Longest life of a device link: 90 days after it is made.
pub const MAX_LINK_LIFETIME_MS: i64 = 90 * DAY_MS;

named_enum!(
    /// How the application verified the person.
    VerificationMethod, VERIFICATION_METHODS {
        /// A password.
        Password = "password",
        /// A passkey.
        Passkey = "passkey",
        /// A second factor.
        Mfa = "mfa",
        /// An OAuth provider.
        Oauth = "oauth",
        /// A link sent by email.
        EmailLink = "email-link",
        /// Account recovery.
        Recovery = "recovery",
        /// A person reviewed it.
        AdminReview = "admin-review",
    }
);

named_enum!(
    /// Why a device link was revoked.
    RevocationReason, REVOCATION_REASONS {
        /// The person signed out.
        Logout = "logout",
        /// The person removed the device.
        DeviceRemoved = "device-removed",
        /// The device or account was compromised.
        Compromised = "compromised",
        /// The account was recovered.
        AccountRecovery = "account-recovery",
    }
);

/// The verification behind a new link, as the application states it. `Debug` hides the raw event id.
#[derive(Clone, PartialEq, Eq)]
pub struct VerificationInput {
    /// How the person was verified.
    pub method: VerificationMethod,
    /// Who verified (the application's name for its sign-in system): 1–256 UTF-16 units after trimming.
    pub issuer: String,
    /// The issuer's id of the verification event, 1–256 UTF-16 units after trimming; stored only as a label.
    pub event_id: String,
    /// When it happened, epoch milliseconds: within 300 s before and 5 s after now.
    pub verified_at: i64,
}

impl fmt::Debug for VerificationInput {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("VerificationInput")
            .field("method", &self.method)
            .field("issuer", &self.issuer)
            .field("verified_at", &self.verified_at)
            .finish_non_exhaustive()
    }
}

/// A link to create: this browser belongs to this subject, as `verification` proved, until `expires_at`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceLinkInput {
    /// The subject.
    pub subject: SubjectId,
    /// The browser.
    pub visitor: VisitorId,
    /// The proof.
    pub verification: VerificationInput,
    /// When the link ends, epoch milliseconds: after now and at most 90 days after now.
    pub expires_at: i64,
}

const LINK_KEYS: &[&str] = &["subjectId", "visitorId", "verification", "expiresAt"];
const VERIFICATION_KEYS: &[&str] = &["method", "issuer", "eventId", "verifiedAt"];
const REVOCATION_KEYS: &[&str] = &["reason", "issuer", "eventId"];

impl DeviceLinkInput {
    /// Reads `{subjectId, visitorId, verification: {method, issuer, eventId, verifiedAt}, expiresAt}`,
    /// refusing unknown keys at both levels. The times are checked against now by
    /// [`Evidence::link`](super::Evidence::link).
    pub fn from_json(value: &Value) -> Result<Self, InputError> {
        let o = Object::strict(value, "", LINK_KEYS)?;
        let subject = subject_id("subjectId", o.required_text("subjectId")?)?;
        let visitor = visitor_id("visitorId", o.required_text("visitorId")?)?;
        let v = o.object("verification", VERIFICATION_KEYS)?;
        let verification = VerificationInput {
            method: choice(
                &v.field("method"),
                v.required_text("method")?,
                VerificationMethod::parse,
                VERIFICATION_METHODS,
            )?,
            issuer: v.required_text("issuer")?.to_owned(),
            event_id: v.required_text("eventId")?.to_owned(),
            verified_at: v.timestamp("verifiedAt")?,
        };
        let input = DeviceLinkInput {
            subject,
            visitor,
            verification,
            expires_at: o.timestamp("expiresAt")?,
        };
        input.normalized()
    }

    /// The input with issuer and event id trimmed, once every rule that does not depend on now holds.
    pub(crate) fn normalized(&self) -> Result<Self, InputError> {
        let v = &self.verification;
        Ok(DeviceLinkInput {
            subject: self.subject.clone(),
            visitor: self.visitor.clone(),
            verification: VerificationInput {
                method: v.method,
                issuer: label_text("verification.issuer", &v.issuer)?,
                event_id: label_text("verification.eventId", &v.event_id)?,
                verified_at: timestamp("verification.verifiedAt", v.verified_at)?,
            },
            expires_at: timestamp("expiresAt", self.expires_at)?,
        })
    }

    /// The rules that depend on now: a fresh verification, and an end within 90 days.
    pub(crate) fn check_times(&self, now_ms: i64) -> Result<(), InputError> {
        let verified_at = self.verification.verified_at;
        if verified_at < now_ms - VERIFICATION_MAX_AGE_MS
            || verified_at > now_ms + VERIFICATION_MAX_SKEW_MS
        {
            return Err(InputError::new(
                "verification.verifiedAt",
                format!(
                    "must be fresh: from {VERIFICATION_MAX_AGE_MS} ms before now to \
                     {VERIFICATION_MAX_SKEW_MS} ms after now"
                ),
            ));
        }
        if self.expires_at <= now_ms || self.expires_at > now_ms + MAX_LINK_LIFETIME_MS {
            return Err(InputError::new(
                "expiresAt",
                "must be after now and at most 90 days after now",
            ));
        }
        Ok(())
    }
}

/// A revocation to apply, as the application states it. `Debug` hides the raw event id.
#[derive(Clone, PartialEq, Eq)]
pub struct RevocationInput {
    /// Why.
    pub reason: RevocationReason,
    /// Who revoked: 1–256 UTF-16 units after trimming.
    pub issuer: String,
    /// The issuer's id of the revocation event, 1–256 UTF-16 units after trimming; stored only as a label.
    pub event_id: String,
}

impl fmt::Debug for RevocationInput {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RevocationInput")
            .field("reason", &self.reason)
            .field("issuer", &self.issuer)
            .finish_non_exhaustive()
    }
}

impl RevocationInput {
    /// Reads `{reason, issuer, eventId}`, refusing unknown keys.
    pub fn from_json(value: &Value) -> Result<Self, InputError> {
        let o = Object::strict(value, "", REVOCATION_KEYS)?;
        let input = RevocationInput {
            reason: choice(
                "reason",
                o.required_text("reason")?,
                RevocationReason::parse,
                REVOCATION_REASONS,
            )?,
            issuer: o.required_text("issuer")?.to_owned(),
            event_id: o.required_text("eventId")?.to_owned(),
        };
        input.normalized()
    }

    /// The input with issuer and event id trimmed and checked.
    pub(crate) fn normalized(&self) -> Result<Self, InputError> {
        Ok(RevocationInput {
            reason: self.reason,
            issuer: label_text("issuer", &self.issuer)?,
            event_id: label_text("eventId", &self.event_id)?,
        })
    }
}

/// The verification as stored: the event id is a label.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Verification {
    /// How the person was verified.
    pub method: VerificationMethod,
    /// Who verified.
    pub issuer: String,
    /// Label of the issuer's event id (`sub_…`).
    pub event_id: String,
    /// When, epoch milliseconds.
    pub verified_at: i64,
}

/// A revocation as stored: the event id is a label.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Revocation {
    /// Why.
    pub reason: RevocationReason,
    /// Who revoked.
    pub issuer: String,
    /// Label of the issuer's event id.
    pub event_id: String,
    /// When, epoch milliseconds.
    pub revoked_at: i64,
}

/// A device link as stored: the `record` column of `device_links`, in the reference's JSON layout.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeviceLink {
    /// The subject.
    pub subject_id: SubjectId,
    /// The browser.
    #[serde(with = "visitor_text")]
    pub visitor_id: VisitorId,
    /// The proof.
    pub verification: Verification,
    /// When the link ends.
    pub expires_at: i64,
    /// `dev_` + the hex of the verification label: one verification makes at most one link.
    pub id: LinkId,
    /// Label of the link's content; a second use of the same verification must carry the same digest.
    pub digest: String,
    /// Label of the application scope.
    pub scope: String,
    /// Server time of creation.
    pub created_at: i64,
    /// Present once revoked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revocation: Option<Revocation>,
}

impl DeviceLink {
    /// When the row may be deleted (after link retention): the end of the link, or its revocation if earlier.
    pub fn retire_at(&self) -> i64 {
        match &self.revocation {
            Some(revocation) => self.expires_at.min(revocation.revoked_at),
            None => self.expires_at,
        }
    }
}

/// Why a link does not vouch for a browser, in the order the checks run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum InvalidLinkReason {
    /// No such link.
    Missing,
    /// The link was revoked.
    Revoked,
    /// The link has ended.
    Expired,
    /// The link belongs to another subject.
    Subject,
    /// The link is for another browser.
    Visitor,
}

/// Whether a link vouches for this subject on this browser now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "kebab-case")]
pub enum DeviceAssessment {
    /// It does not.
    Invalid {
        /// The first check that failed.
        reason: InvalidLinkReason,
    },
    /// It does: the application verified this browser for this subject.
    VerifiedAssociation {
        /// The link.
        link: Box<DeviceLink>,
    },
}

impl DeviceAssessment {
    /// Judges `link` for `subject` on `visitor` at `now_ms`: missing, revoked, expired, subject, visitor — the
    /// first that applies — or a verified association.
    pub fn of(
        link: Option<DeviceLink>,
        subject: &SubjectId,
        visitor: &VisitorId,
        now_ms: i64,
    ) -> Self {
        let reason = match &link {
            None => Some(InvalidLinkReason::Missing),
            Some(l) if l.revocation.is_some() => Some(InvalidLinkReason::Revoked),
            Some(l) if l.expires_at <= now_ms => Some(InvalidLinkReason::Expired),
            Some(l) if &l.subject_id != subject => Some(InvalidLinkReason::Subject),
            Some(l) if &l.visitor_id != visitor => Some(InvalidLinkReason::Visitor),
            Some(_) => None,
        };
        match (reason, link) {
            (None, Some(link)) => DeviceAssessment::VerifiedAssociation {
                link: Box::new(link),
            },
            (reason, _) => DeviceAssessment::Invalid {
                reason: reason.unwrap_or(InvalidLinkReason::Missing),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn hex(c: char, n: usize) -> String {
        std::iter::repeat_n(c, n).collect()
    }

    fn input_json() -> Value {
        json!({
            "subjectId": format!("sub_{}", hex('a', 64)),
            "visitorId": format!("vis_{}", hex('b', 48)),
            "verification": {"method": "passkey", "issuer": " auth ", "eventId": "proof-1", "verifiedAt": 1000},
            "expiresAt": 2000
        })
    }

    #[test]
    fn link_json_is_strict_at_both_levels() {
        let input = DeviceLinkInput::from_json(&input_json()).unwrap();
        assert_eq!(input.verification.issuer, "auth");
        let mut extra = input_json();
        extra["verification"]["note"] = json!("x");
        assert_eq!(
            DeviceLinkInput::from_json(&extra).unwrap_err().field,
            "verification.note"
        );
        let mut extra = input_json();
        extra["note"] = json!("x");
        assert_eq!(
            DeviceLinkInput::from_json(&extra).unwrap_err().field,
            "note"
        );
        let mut bad = input_json();
        bad["verification"]["method"] = json!("sms");
        assert_eq!(
            DeviceLinkInput::from_json(&bad).unwrap_err().field,
            "verification.method"
        );
        let mut bad = input_json();
        bad["expiresAt"] = json!(-1);
        assert_eq!(
            DeviceLinkInput::from_json(&bad).unwrap_err().field,
            "expiresAt"
        );
        let mut bad = input_json();
        bad["verification"]["eventId"] = json!("x".repeat(257));
        assert_eq!(
            DeviceLinkInput::from_json(&bad).unwrap_err().field,
            "verification.eventId"
        );
        let mut bad = input_json();
        bad["visitorId"] = json!(format!("vis_{}", hex('b', 47)));
        assert_eq!(
            DeviceLinkInput::from_json(&bad).unwrap_err().field,
            "visitorId"
        );
    }

    #[test]
    fn revocation_json() {
        let ok = RevocationInput::from_json(
            &json!({"reason": "logout", "issuer": "auth", "eventId": "e"}),
        )
        .unwrap();
        assert_eq!(ok.reason, RevocationReason::Logout);
        let bad = RevocationInput::from_json(
            &json!({"reason": "bored", "issuer": "auth", "eventId": "e"}),
        );
        assert_eq!(bad.unwrap_err().field, "reason");
        let missing = RevocationInput::from_json(&json!({"reason": "logout", "issuer": "auth"}));
        assert_eq!(missing.unwrap_err().field, "eventId");
        assert_eq!(REVOCATION_REASONS.len(), 4);
        assert_eq!(VERIFICATION_METHODS.len(), 7);
    }

    #[test]
    fn assessment_shape() {
        let invalid = DeviceAssessment::Invalid {
            reason: InvalidLinkReason::Missing,
        };
        assert_eq!(
            serde_json::to_value(&invalid).unwrap(),
            json!({"status": "invalid", "reason": "missing"})
        );
    }
}
