//! Attribution: who a request speaks for and who is acting, as far as the directory knows. The assessment
//! reads one grant at most, so a delegation never extends through a second one.

use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};

use super::delegation::{Delegation, DelegationId};
use super::store::SubjectRecord;
use crate::evidence::{SubjectId, SubjectKind};

/// What [`Directory::assess`](super::Directory::assess) is asked about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AssessmentContext {
    /// The subject the request is for (the account signed in, or the principal an agent claims to act for).
    pub subject_id: SubjectId,
    /// The subject acting, when it is not the subject itself (an agent).
    pub actor_id: Option<SubjectId>,
    /// The grant the actor presents.
    pub delegation_id: Option<DelegationId>,
    /// Where the request is being used, compared with the grant's audience after trimming.
    pub audience: Option<String>,
    /// Scopes the request needs, 0–32, each 1–256 characters after trimming; all must be granted.
    pub required_scopes: Vec<String>,
}

impl AssessmentContext {
    /// A context for `subject` alone.
    pub fn new(subject_id: SubjectId) -> Self {
        AssessmentContext {
            subject_id,
            actor_id: None,
            delegation_id: None,
            audience: None,
            required_scopes: Vec::new(),
        }
    }
}

/// Whether the subject is in the directory.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "status", rename_all = "lowercase")]
pub enum SubjectAttribution {
    /// It is: `{"id":…,"status":"verified"}`.
    Verified {
        /// The subject.
        id: SubjectId,
    },
    /// It is not: `{"status":"unknown"}`.
    Unknown,
}

/// Who is acting.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ActorAttribution {
    /// A subject of the directory: `{"id":…,"kind":"person"|"agent","basis":"verified-credential"}`.
    Known {
        /// The actor.
        id: SubjectId,
        /// Its kind, as registered.
        kind: SubjectKind,
    },
    /// No actor was named, or it is not in the directory: `{"kind":"unknown","basis":"unknown"}`.
    Unknown,
}

impl Serialize for ActorAttribution {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            ActorAttribution::Known { id, kind } => {
                let mut map = serializer.serialize_map(Some(3))?;
                map.serialize_entry("id", id)?;
                map.serialize_entry("kind", kind.as_str())?;
                map.serialize_entry("basis", "verified-credential")?;
                map.end()
            }
            ActorAttribution::Unknown => {
                let mut map = serializer.serialize_map(Some(2))?;
                map.serialize_entry("kind", "unknown")?;
                map.serialize_entry("basis", "unknown")?;
                map.end()
            }
        }
    }
}

/// Why a presented grant does not hold, in the order the checks run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum InvalidDelegationReason {
    /// No such grant.
    Missing,
    /// It was revoked.
    Revoked,
    /// It ended: `expiresAt <= now`.
    Expired,
    /// The subject is unknown, or is not the grant's principal.
    Principal,
    /// The actor is unknown, or is not the grant's actor.
    Actor,
    /// No audience was given, or it is not the grant's.
    Audience,
    /// A required scope is not granted.
    Scope,
}

/// The grant's standing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "status", rename_all = "lowercase")]
pub enum DelegationAttribution {
    /// No grant was presented: `{"status":"none"}`.
    None,
    /// The grant holds: `{"id","status":"valid","scopes","expiresAt"}`.
    Valid {
        /// The grant.
        id: DelegationId,
        /// Everything it grants.
        scopes: Vec<String>,
        /// When it ends.
        #[serde(rename = "expiresAt")]
        expires_at: i64,
    },
    /// It does not: `{"id","status":"invalid","reason"}`.
    Invalid {
        /// The grant presented.
        id: DelegationId,
        /// The first check it failed.
        reason: InvalidDelegationReason,
    },
}

/// The answer of an assessment, serialized as `{"subject":…,"actor":…,"delegation":…}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Attribution {
    /// The subject.
    pub subject: SubjectAttribution,
    /// The actor.
    pub actor: ActorAttribution,
    /// The grant.
    pub delegation: DelegationAttribution,
}

/// What the store said about the context's subjects and grant.
pub(crate) struct Facts {
    pub(crate) subject: Option<SubjectRecord>,
    pub(crate) actor: Option<SubjectRecord>,
    pub(crate) grant: Option<Delegation>,
}

/// The attribution of `facts` for `context` at `now_ms`; `audience` and `required` are the context's,
/// normalized.
pub(crate) fn attribute(
    context: &AssessmentContext,
    facts: Facts,
    audience: Option<&str>,
    required: &[String],
    now_ms: i64,
) -> Attribution {
    let subject = match &facts.subject {
        Some(record) => SubjectAttribution::Verified {
            id: record.id.clone(),
        },
        None => SubjectAttribution::Unknown,
    };
    let actor = match &facts.actor {
        Some(record) => ActorAttribution::Known {
            id: record.id.clone(),
            kind: record.kind,
        },
        None => ActorAttribution::Unknown,
    };
    let delegation = match &context.delegation_id {
        None => DelegationAttribution::None,
        Some(id) => match grant_standing(&facts, context, audience, required, now_ms) {
            Ok(grant) => DelegationAttribution::Valid {
                id: id.clone(),
                scopes: grant.scopes.clone(),
                expires_at: grant.expires_at,
            },
            Err(reason) => DelegationAttribution::Invalid {
                id: id.clone(),
                reason,
            },
        },
    };
    Attribution {
        subject,
        actor,
        delegation,
    }
}

fn grant_standing<'a>(
    facts: &'a Facts,
    context: &AssessmentContext,
    audience: Option<&str>,
    required: &[String],
    now_ms: i64,
) -> Result<&'a Delegation, InvalidDelegationReason> {
    use InvalidDelegationReason as Reason;
    let grant = facts.grant.as_ref().ok_or(Reason::Missing)?;
    if grant.revoked_at.is_some() {
        return Err(Reason::Revoked);
    }
    if grant.expires_at <= now_ms {
        return Err(Reason::Expired);
    }
    if facts.subject.is_none() || grant.principal_id != context.subject_id {
        return Err(Reason::Principal);
    }
    let actor_matches = facts.actor.is_some() && context.actor_id.as_ref() == Some(&grant.actor_id);
    if !actor_matches {
        return Err(Reason::Actor);
    }
    if audience != Some(grant.audience.as_str()) {
        return Err(Reason::Audience);
    }
    if !required.iter().all(|scope| grant.scopes.contains(scope)) {
        return Err(Reason::Scope);
    }
    Ok(grant)
}
