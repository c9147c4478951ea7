//! Erasing an account, with or without its browser, without erasing what other accounts' evidence says.
//!
//! [`erase_account`] is the call a data-subject request (GDPR art. 17) needs. It removes, in one atomic step
//! of the [`Stores`] family:
//!
//! - the account's subject row, its verified keys, every delegation naming it (as principal or actor), its
//!   learning sessions (labelled with it or predicted for it) and its device links;
//! - the events where it is the subject, and the events that name it as actor and name no other subject;
//! - with a browser that is the account's own (it signed in to the account: a login-success event names both;
//!   or a device link joins them): the visitor row, its observations, every device link of that browser, and
//!   the browser's events that name no other subject (anonymous and session-only events). Any other browser is
//!   left alone, and [`AccountErasure::visitor_not_linked`] says so: visitor ids reach page scripts, so one
//!   account holder must not erase another's browser by presenting its id.
//!
//! An event about **another** subject is evidence about that subject: it is kept and only *detached* — the
//! erased actor and the erased browser are removed from it (`actor_id` / `visitor_id` set to none, and the key
//! removed from the stored record). So erasing alice together with the browser she shares with dave keeps
//! dave's failed sign-ins, and his lockout. A detached event keeps the digest it was recorded with: a retry
//! of the original event still reads as an idempotent repeat, never as a conflict.
//!
//! [`Stores::erase_visitor`] erases a browser alone by the same rule. The contract's narrower calls
//! ([`Evidence::delete_subject_events`](crate::evidence::Evidence::delete_subject_events),
//! [`Evidence::delete_session`](crate::evidence::Evidence::delete_session)) and the subject deletion of the
//! reference (a row delete whose foreign keys cascade to every event naming the subject, as actor too) stay
//! as the contract defines them; they are not what an erasure request needs.

use serde::{Deserialize, Serialize};

use crate::directory::DirectoryError;
use crate::error::StoreError;
use crate::evidence::{ApplicationEvent, SubjectId};
use crate::label::LabelKey;
use crate::stores::Stores;
use crate::visitor::VisitorId;

/// What one account erasure removed and kept. Counts are rows; a second erasure of the same account finds
/// nothing (`subject_existed: false`, every count 0).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AccountErasure {
    /// The account's subject row existed (and is gone).
    pub subject_existed: bool,
    /// Events deleted: the account's own, and those of the erased account or browser that name no other
    /// subject.
    pub events_deleted: u64,
    /// Events about other subjects kept, with the erased actor or browser removed from them.
    pub events_detached: u64,
    /// Device links deleted: the account's, and every link of the erased browser.
    pub links_deleted: u64,
    /// Verified keys deleted.
    pub keys_deleted: u64,
    /// Delegations deleted (the account as principal or actor).
    pub delegations_deleted: u64,
    /// Learning sessions deleted (labelled with the account or predicted for it).
    pub learning_sessions_deleted: u64,
    /// The browser's visitor row existed (and is gone, with its observations).
    pub visitor_erased: bool,
    /// The browser given with the account exists and was left alone: it never signed in to the account (no
    /// login-success event names both) and holds no device link to it.
    #[serde(default)]
    pub visitor_not_linked: bool,
}

/// Why [`erase_account`] erased nothing.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ErasureError {
    /// The account id breaks the directory's rule (1–512 characters); nothing was read or written.
    #[error(transparent)]
    InvalidAccount(DirectoryError),
    /// Storage failed; every family erases atomically, so nothing is half-erased.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// What erasing a subject and/or a browser does to one event that names one of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventFate {
    /// The event is about the erased subject, or about no subject at all: it is deleted.
    Deleted,
    /// The event is about another subject: it stays, without the erased actor and browser.
    Detached,
}

/// The rule every store family applies: `None` when `event` names neither `subject` (as subject or actor) nor
/// `browser` (as visitor); [`EventFate::Deleted`] when `subject` is its subject or it names no subject other
/// than `subject`; [`EventFate::Detached`] otherwise.
pub fn event_fate(
    event: &ApplicationEvent,
    subject: Option<&SubjectId>,
    browser: Option<&VisitorId>,
) -> Option<EventFate> {
    let is_erased = |named: Option<&SubjectId>| named.is_some() && named == subject;
    let names_browser = browser.is_some() && event.visitor_id.as_ref() == browser;
    let named_subject = event.subject_id.as_ref();
    let named_actor = event.actor_id.as_ref();
    if !(is_erased(named_subject) || is_erased(named_actor) || names_browser) {
        return None;
    }
    let is_other = |named: Option<&SubjectId>| named.is_some() && named != subject;
    if is_erased(named_subject) || !(is_other(named_subject) || is_other(named_actor)) {
        Some(EventFate::Deleted)
    } else {
        Some(EventFate::Detached)
    }
}

/// `event` without the erased actor and browser (its digest untouched): what [`EventFate::Detached`] keeps.
pub fn detached(
    mut event: ApplicationEvent,
    subject: Option<&SubjectId>,
    browser: Option<&VisitorId>,
) -> ApplicationEvent {
    if subject.is_some() && event.actor_id.as_ref() == subject {
        event.actor_id = None;
    }
    if browser.is_some() && event.visitor_id.as_ref() == browser {
        event.visitor_id = None;
    }
    event
}

/// Erases the account `account_id` (labelled with `key`, as every service labels it) and, when given, the
/// browser the request came with, in one atomic step of `stores` (see the [module](self) for what goes and
/// what stays). The application must authorize the request; the browser (its `__visitor` cookie on the request
/// that asks for erasure, say) is erased only when it is linked to the account.
///
/// Server code holding a `Janitor` handle calls its `erase_account`, which is this.
pub async fn erase_account<S: Stores>(
    stores: &S,
    key: &LabelKey,
    account_id: &str,
    browser: Option<&VisitorId>,
) -> Result<AccountErasure, ErasureError> {
    let subject =
        crate::directory::account_subject(key, account_id).map_err(ErasureError::InvalidAccount)?;
    Ok(stores.erase_account(&subject, browser).await?)
}

// The fixtures are the `testing` feature's, which the crate's own tests turn on.
#[cfg(all(test, feature = "testing"))]
mod tests {
    use super::*;
    use crate::evidence::{EventType, APPLICATION_SCOPE};
    use crate::testing::{label_key, visitor};

    fn subject(n: u32) -> SubjectId {
        SubjectId::parse(&label_key("fate").subject(&format!("account-{n}"))).unwrap()
    }

    fn event(
        subject: Option<SubjectId>,
        actor: Option<SubjectId>,
        browser: Option<VisitorId>,
    ) -> ApplicationEvent {
        ApplicationEvent {
            id: "evt".into(),
            event_type: EventType::LoginFailure,
            action: None,
            subject_id: subject,
            session_id: Some("session-label".into()),
            actor_id: actor,
            visitor_id: browser,
            digest: "digest".into(),
            scope: APPLICATION_SCOPE.into(),
            occurred_at: 0,
            expires_at: 1,
        }
    }

    #[test]
    fn events_about_other_subjects_are_detached() {
        let (alice, dave, browser) = (subject(1), subject(2), visitor(1));
        let erasing = (Some(&alice), Some(&browser));
        let fate = |e: &ApplicationEvent| event_fate(e, erasing.0, erasing.1);
        let daves = event(Some(dave.clone()), None, Some(browser.clone()));
        assert_eq!(fate(&daves), Some(EventFate::Detached));
        let kept = detached(daves.clone(), erasing.0, erasing.1);
        assert_eq!((kept.visitor_id, &kept.digest), (None, &daves.digest));
        let acted_for_dave = event(Some(dave.clone()), Some(alice.clone()), None);
        assert_eq!(fate(&acted_for_dave), Some(EventFate::Detached));
        assert_eq!(
            detached(acted_for_dave, erasing.0, erasing.1).actor_id,
            None
        );
        let dave_acted_anonymously = event(None, Some(dave.clone()), Some(browser.clone()));
        assert_eq!(fate(&dave_acted_anonymously), Some(EventFate::Detached));
    }

    #[test]
    fn the_erased_subjects_and_anonymous_events_are_deleted() {
        let (alice, dave, browser) = (subject(1), subject(2), visitor(1));
        let fate = |e: &ApplicationEvent| event_fate(e, Some(&alice), Some(&browser));
        let own = [
            event(Some(alice.clone()), None, None),
            event(Some(alice.clone()), Some(dave.clone()), Some(visitor(2))),
            event(None, Some(alice.clone()), None),
            event(None, None, Some(browser.clone())),
        ];
        for e in &own {
            assert_eq!(fate(e), Some(EventFate::Deleted), "{e:?}");
        }
        assert_eq!(
            fate(&event(Some(dave.clone()), None, Some(visitor(2)))),
            None
        );
        // A browser alone: only events naming no subject at all go.
        let browser_only = |e: &ApplicationEvent| event_fate(e, None, Some(&browser));
        let daves = event(Some(dave), None, Some(browser.clone()));
        assert_eq!(browser_only(&daves), Some(EventFate::Detached));
        let anonymous = event(None, None, Some(browser.clone()));
        assert_eq!(browser_only(&anonymous), Some(EventFate::Deleted));
        assert_eq!(browser_only(&event(Some(alice), None, None)), None);
    }
}
