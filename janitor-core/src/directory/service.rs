//! [`Directory`]: the operations server code calls. Labels are computed here, so stores only ever
//! see them.

use super::assess::{attribute, AssessmentContext, Attribution, Facts};
use super::delegation::{scope_set, Delegation, DelegationId, DelegationInput, MAX_AUDIENCE_CHARS};
use super::error::{trimmed, DirectoryError};
use super::key::{KeyInput, KeyRecord};
use super::store::{DirectoryStore, KeyWrite, SubjectRecord};
use crate::clock::Clock;
use crate::evidence::{SubjectId, SubjectKind};
use crate::label::LabelKey;

/// Characters of an account id (not trimmed).
pub const MAX_ACCOUNT_ID_CHARS: usize = 512;

/// The canonical form of an account name: surrounding whitespace removed and every letter lower-cased (Unicode's
/// default lowercase mapping, `str::to_lowercase`). `Ada`, `ada` and ` ADA ` are one account.
///
/// Every label the library makes of an account (its quota counter, its evidence subject, its erasure) is a keyed
/// digest of the exact bytes it is given, as on every Janitor implementation. An application whose password
/// check ignores case or spaces must therefore pass this form (or its own, always the same) to every call, or
/// each spelling gets a quota and a lockout of its own. It does not apply Unicode normalization (NFC): an
/// application that accepts names typed on several systems normalizes them first. Instances sharing a database
/// must agree on the form, since the reference's instances key whatever the application passes.
pub fn canonical_account(name: &str) -> String {
    name.trim().to_lowercase()
}

/// The subject label of an account id of 1–512 characters under `key`: the rule of
/// [`Directory::subject_id`], shared with erasure.
pub(crate) fn account_subject(
    key: &LabelKey,
    account_id: &str,
) -> Result<SubjectId, DirectoryError> {
    let length = account_id.chars().count();
    if length == 0 || length > MAX_ACCOUNT_ID_CHARS {
        return Err(DirectoryError::invalid(
            "accountId",
            format!("must be 1–{MAX_ACCOUNT_ID_CHARS} characters, got {length}"),
        ));
    }
    Ok(SubjectId::from_label(key.subject(account_id)))
}

/// The identity directory over a store: subjects, verified keys, delegations, attribution and erasure.
/// Server code only; nothing here is reachable from a browser.
///
/// A key lookup ([`find_subject`](Self::find_subject)) says which subject the application verified a key
/// for; it is never an authentication. The directory never merges subjects: two accounts that share an email
/// domain, an address or a fingerprint stay two subjects.
#[derive(Debug, Clone)]
pub struct Directory<S> {
    store: S,
    key: LabelKey,
    clock: Clock,
}

impl<S: DirectoryStore> Directory<S> {
    /// A directory over `store`, labelling with `key` (the identity secret and namespace).
    pub fn new(store: S, key: LabelKey) -> Self {
        Directory {
            store,
            key,
            clock: Clock::system(),
        }
    }

    /// The same service reading the time from `clock` (a manual one in tests and simulations).
    pub fn with_clock(mut self, clock: Clock) -> Self {
        self.clock = clock;
        self
    }

    /// The clock this service reads the time from.
    pub fn clock(&self) -> &Clock {
        &self.clock
    }

    /// Sets this service's manual clock to `ms` and answers the service, for tests that name each call's time
    /// (feature `testing`). Panics on the system's clock, which cannot be set.
    #[cfg(feature = "testing")]
    pub fn at(&self, ms: i64) -> &Self {
        self.clock.pin(ms);
        self
    }

    /// The store.
    pub fn store(&self) -> &S {
        &self.store
    }

    /// The subject label of an account id of 1–512 characters: the same label evidence uses.
    pub fn subject_id(&self, account_id: &str) -> Result<SubjectId, DirectoryError> {
        account_subject(&self.key, account_id)
    }

    /// Registers a subject of `kind`, or refreshes its `updatedAt`. A subject's kind never changes: the other
    /// kind is [`DirectoryError::KindConflict`], changing nothing.
    pub async fn put_subject(
        &self,
        subject: &SubjectId,
        kind: SubjectKind,
    ) -> Result<(), DirectoryError> {
        let now_ms = self.clock.now_ms();
        if self.store.put_subject(subject, kind, now_ms).await? {
            Ok(())
        } else {
            Err(DirectoryError::KindConflict)
        }
    }

    /// A subject, if it is in the directory.
    pub async fn subject(
        &self,
        subject: &SubjectId,
    ) -> Result<Option<SubjectRecord>, DirectoryError> {
        Ok(self.store.subject(subject).await?)
    }

    /// Records that the application verified `key` for `subject` (which must exist), at the clock's time. Adding a
    /// key the subject has already refreshes its `verifiedAt`; a key of another subject is
    /// [`DirectoryError::KeyClaimed`], and nothing changes.
    pub async fn add_verified_key(
        &self,
        subject: &SubjectId,
        key: &KeyInput,
    ) -> Result<KeyRecord, DirectoryError> {
        let now_ms = self.clock.now_ms();
        let (issuer, _) = key.normalized()?;
        let record = KeyRecord {
            digest: key.digest(&self.key)?,
            subject_id: subject.clone(),
            key_type: key.key_type,
            issuer,
            verified_at: now_ms,
        };
        match self.store.put_key(&record).await? {
            KeyWrite::Stored => Ok(record),
            KeyWrite::Claimed => Err(DirectoryError::KeyClaimed),
            KeyWrite::NoSubject => Err(DirectoryError::UnknownSubject { field: "subject" }),
        }
    }

    /// The subject `key` was verified for, if any. A lookup, never an authentication: knowing someone's
    /// email address proves nothing.
    pub async fn find_subject(&self, key: &KeyInput) -> Result<Option<SubjectId>, DirectoryError> {
        let digest = key.digest(&self.key)?;
        Ok(self.store.key_owner(&digest).await?)
    }

    /// Removes `key` from `subject`; a key of another subject is left alone. Returns whether it was removed.
    pub async fn remove_key(
        &self,
        subject: &SubjectId,
        key: &KeyInput,
    ) -> Result<bool, DirectoryError> {
        let digest = key.digest(&self.key)?;
        Ok(self.store.remove_key(subject, &digest).await?)
    }

    /// Grants `input.actor` the right to act for `input.principal` (see [`DelegationInput`] for the limits).
    /// Both subjects must exist and differ. A grant covers one hop: the actor cannot pass it on.
    pub async fn create_delegation(
        &self,
        input: &DelegationInput,
    ) -> Result<Delegation, DirectoryError> {
        let now_ms = self.clock.now_ms();
        let delegation = input.delegation(now_ms)?;
        for (field, subject) in [("principal", &input.principal), ("actor", &input.actor)] {
            if self.store.subject(subject).await?.is_none() {
                return Err(DirectoryError::UnknownSubject { field });
            }
        }
        if self.store.put_delegation(&delegation).await? {
            Ok(delegation)
        } else {
            // A subject went away between the check and the write.
            Err(DirectoryError::UnknownSubject { field: "principal" })
        }
    }

    /// A delegation, whatever its state.
    pub async fn delegation(
        &self,
        id: &DelegationId,
    ) -> Result<Option<Delegation>, DirectoryError> {
        Ok(self.store.delegation(id).await?)
    }

    /// Revokes a delegation at the clock's time. Only the first revocation counts: later ones change nothing and
    /// return false.
    pub async fn revoke_delegation(&self, id: &DelegationId) -> Result<bool, DirectoryError> {
        let now_ms = self.clock.now_ms();
        Ok(self.store.revoke_delegation(id, now_ms).await?)
    }

    /// Who `context` speaks for and who acts, at the clock's time. A presented grant is checked in this order:
    /// missing, revoked, expired, principal, actor, audience, scope; the first failure is the reason.
    pub async fn assess(&self, context: &AssessmentContext) -> Result<Attribution, DirectoryError> {
        let now_ms = self.clock.now_ms();
        let required = scope_set("requiredScopes", &context.required_scopes, 0)?;
        let audience = match &context.audience {
            Some(a) => Some(trimmed("audience", a, 1, MAX_AUDIENCE_CHARS)?),
            None => None,
        };
        let subject = self.store.subject(&context.subject_id).await?;
        let actor = match &context.actor_id {
            Some(actor) => self.store.subject(actor).await?,
            None => None,
        };
        let grant = match &context.delegation_id {
            Some(id) => self.store.delegation(id).await?,
            None => None,
        };
        let facts = Facts {
            subject,
            actor,
            grant,
        };
        Ok(attribute(
            context,
            facts,
            audience.as_deref(),
            &required,
            now_ms,
        ))
    }

    /// Erases a subject: its record, its keys, the delegations naming it (as principal or actor) and, in a
    /// store sharing subjects with evidence, its events and device links. Returns whether it existed.
    pub async fn delete_subject(&self, subject: &SubjectId) -> Result<bool, DirectoryError> {
        Ok(self.store.delete_subject(subject).await?)
    }

    /// Erases everything the directory and evidence hold about a raw account id, found by its label: the
    /// subject record, keys, delegations, events and device links. Returns whether the subject existed.
    ///
    /// The subject row's cascade, as the reference deletes: events about other subjects in which this account
    /// only acted go too. A GDPR erasure request needs [`erasure::erase_account`](crate::erasure::erase_account),
    /// which keeps them (detached) and can erase the account holder's browser in the same step.
    pub async fn forget_user(&self, account_id: &str) -> Result<bool, DirectoryError> {
        let subject = self.subject_id(account_id)?;
        // On PostgreSQL the subject's learning sessions go with its row by cascade; an account's erasure
        // (`erasure::erase_account`, the handle's `erase_account`) also erases them from stores without one.
        self.delete_subject(&subject).await
    }

    /// One bounded retention step: deletes at most `batch` (clamped to 1–1000) delegations that ended at or
    /// before the clock's time.
    pub async fn cleanup(&self, batch: usize) -> Result<u64, DirectoryError> {
        let now_ms = self.clock.now_ms();
        Ok(self.store.cleanup(batch, now_ms).await?)
    }
}

#[cfg(test)]
mod tests {
    use super::canonical_account;

    #[test]
    fn spellings_of_one_name_are_one_account() {
        for spelling in ["ada@example.com", "Ada@Example.COM", "  ADA@example.com\t"] {
            assert_eq!(canonical_account(spelling), "ada@example.com");
        }
        assert_eq!(canonical_account("ÉMILIE"), "émilie");
        // Inner spaces are part of the name.
        assert_eq!(canonical_account(" a b "), "a b");
    }
}
