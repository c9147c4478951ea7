//! The behaviour every [`Stores`] family must show where its stores meet: erasing an account or a browser
//! across all of them at once. [`stores_tests!`](crate::stores_tests) runs each case as its own test; the
//! factory must return empty stores.

mod erasure;

pub use erasure::*;

use super::Fresh;
pub use super::{label_key, visitor, T0};
use crate::config::DAY_MS;
use crate::directory::{Delegation, DelegationInput, Directory, KeyInput, KeyType};
use crate::erasure::{erase_account, AccountErasure};
use crate::evidence::*;
use crate::identification::config::Retention;
use crate::identification::store::VisitorStore;
use crate::learning::{
    CollectionPolicy, Learning, LearningConfig, LearningCookie, LearningVisit, Login, SessionId,
};
use crate::stores::Stores;
use crate::testing::visitor_store::observation;
use crate::visitor::VisitorId;
use crate::Clock;

/// One family with the services server code reaches it through, all labelling with one key.
struct Family<S: Stores> {
    stores: S,
    evidence: Evidence<S::Evidence>,
    directory: Directory<S::Directory>,
    learning: Learning<S::Learning>,
}

async fn family<S: Stores>(fresh: impl Fresh<(), Store = S>) -> Family<S> {
    let stores = fresh.store(()).await;
    let key = label_key("suite");
    let config = LearningConfig::builder()
        .enabled(true)
        .collection(CollectionPolicy::Application)
        .build()
        .expect("valid");
    Family {
        evidence: Evidence::new(stores.evidence(), key.clone(), EvidenceConfig::default())
            .with_clock(Clock::manual(0)),
        directory: Directory::new(stores.directory(), key.clone()).with_clock(Clock::manual(0)),
        learning: Learning::new(stores.learning(), &key, config, None)
            .expect("collect mode")
            .with_clock(Clock::manual(0)),
        stores,
    }
}

impl<S: Stores> Family<S> {
    fn account(&self, name: &str) -> SubjectId {
        self.evidence.subject_id(name)
    }

    /// Erases `name` (a raw account id, as server code passes it) and, when given, `browser`.
    async fn erase(&self, name: &str, browser: Option<&VisitorId>) -> AccountErasure {
        erase_account(&self.stores, &label_key("suite"), name, browser)
            .await
            .expect("erase")
    }

    /// A browser that visited once: its visitor row and one observation.
    async fn browser(&self, n: u64) -> VisitorId {
        let browser = visitor(n);
        let visitors = self.stores.visitors(Retention::default());
        visitors
            .create_visitor(&browser, T0)
            .await
            .expect("visitor");
        let seen = observation(&format!("browser-{n}"));
        visitors
            .save_observation(&browser, &seen, T0)
            .await
            .expect("observation");
        browser
    }

    /// The browser's observations still held.
    async fn observations(&self, browser: &VisitorId) -> usize {
        let visitors = self.stores.visitors(Retention::default());
        let held = visitors.recent_observations(browser, 5, T0).await;
        held.expect("history").len()
    }

    async fn record(&self, input: EventInputBuilder) -> Recorded {
        let input = input.build().expect("valid");
        self.evidence.at(T0).record(&input).await.expect("record")
    }

    /// Records `n` failed sign-ins against `subject` from `browser`, ids `{prefix}-0` onwards.
    async fn fail_sign_ins(&self, prefix: &str, subject: &SubjectId, browser: &VisitorId, n: u32) {
        for i in 0..n {
            self.record(failure(&format!("{prefix}-{i}"), subject, browser))
                .await;
        }
    }

    /// Events of one key in the default window, as a velocity read counts them.
    async fn count(&self, key: ActivityKey) -> u32 {
        let read = self
            .evidence
            .at(T0)
            .velocity(&VelocityQuery::new(key))
            .await;
        read.expect("velocity").total
    }

    /// Links `subject` to `browser` with the verification `proof`.
    async fn link(&self, subject: &SubjectId, browser: &VisitorId, proof: &str) -> DeviceLink {
        let input = DeviceLinkInput {
            subject: subject.clone(),
            visitor: browser.clone(),
            verification: VerificationInput {
                method: VerificationMethod::Passkey,
                issuer: "auth".into(),
                event_id: proof.into(),
                verified_at: T0,
            },
            expires_at: T0 + DAY_MS,
        };
        self.evidence.at(T0).link(&input).await.expect("link")
    }

    /// Everything an account accumulates besides events: a verified email, a delegation to an agent, and a
    /// learning flow its verified login labelled.
    async fn settle_in(&self, subject: &SubjectId, email: &str) -> (Delegation, SessionId) {
        let d = &self.directory;
        d.at(T0)
            .put_subject(subject, SubjectKind::Person)
            .await
            .expect("person");
        let key = KeyInput::new(KeyType::Email, "app", email);
        d.at(T0).add_verified_key(subject, &key).await.expect("key");
        let agent = self.account(&format!("agent-of-{email}"));
        d.at(T0)
            .put_subject(&agent, SubjectKind::Agent)
            .await
            .expect("agent");
        let grant = DelegationInput {
            principal: subject.clone(),
            actor: agent,
            audience: "shop".into(),
            scopes: vec!["order".into()],
            expires_at: T0 + 3_600_000,
        };
        let grant = d.at(T0).create_delegation(&grant).await.expect("grant");
        (grant, self.labelled_flow(subject).await)
    }

    async fn labelled_flow(&self, subject: &SubjectId) -> SessionId {
        let snapshot = observation("learning");
        let visit = |cookie, login| LearningVisit {
            cookie,
            consent: None,
            login,
            observation: &snapshot,
        };
        let started = self.learning.at(T0).observe(visit(None, &Login::Anonymous));
        let Some(LearningCookie::Set { id, .. }) = started.await.expect("observe") else {
            panic!("a learning flow starts");
        };
        let login = Login::VerifiedSelf(subject.clone());
        let labelled = self
            .learning
            .at(T0 + 1)
            .observe(visit(Some(id.as_str()), &login));
        labelled.await.expect("label");
        id
    }

    /// Whether a learning session is still stored.
    async fn learning_session(&self, id: &SessionId) -> bool {
        let store = self.learning.store();
        let stored = crate::learning::LearningStore::session(store, self.learning.scope(), id);
        stored.await.expect("session").is_some()
    }
}

fn failure(id: &str, subject: &SubjectId, browser: &VisitorId) -> EventInputBuilder {
    EventInput::builder(id, EventType::LoginFailure)
        .action(Action::SignIn)
        .subject(subject.clone())
        .visitor(browser.clone())
}

/// One `#[tokio::test]` per case of the [`Stores`] suite ([`crate::testing`] shows the forms).
///
/// `fresh` makes empty stores.
///
/// ```ignore
/// janitor_core::stores_tests!(fresh: |()| async { MemoryStores::new() });
/// ```
#[macro_export]
macro_rules! stores_tests {
    ($($setup:tt)+) => {
        $crate::__store_suite!(
            stores [
            erasing_an_account_keeps_another_accounts_lockout,
            erasing_an_actor_detaches_it_from_events_about_others,
            erasing_a_browser_deletes_its_anonymous_events,
            erasing_an_account_takes_only_its_own_browser,
            erasing_a_browser_alone_keeps_lockouts,
            erasure_is_idempotent,
            erasing_without_a_browser_leaves_the_browser,
            ]
            $($setup)+
        );
    };
}
