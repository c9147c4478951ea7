//! The behaviour every [`DirectoryStore`] must show, run through [`Directory`] as server code uses
//! it: [`directory_store_tests!`](crate::directory_store_tests) runs each case as its own test. The factory
//! must return an empty store.

mod delegations;
mod keys;

pub use delegations::*;
pub use keys::*;

use super::Fresh;
pub use super::{label_key, T0};
use crate::directory::*;
use crate::Clock;

fn directory<S: DirectoryStore>(store: S) -> Directory<S> {
    Directory::new(store, label_key("suite")).with_clock(Clock::manual(0))
}

/// The subject of fixture account `n`.
pub fn account<S: DirectoryStore>(d: &Directory<S>, n: u32) -> SubjectId {
    d.subject_id(&format!("account-{n}"))
        .expect("valid account id")
}

/// Registers fixture accounts `n` with `kind` and returns their subjects.
async fn register<S: DirectoryStore>(
    d: &Directory<S>,
    accounts: &[(u32, SubjectKind)],
) -> Vec<SubjectId> {
    let mut subjects = Vec::new();
    for (n, kind) in accounts {
        let subject = account(d, *n);
        d.at(T0)
            .put_subject(&subject, *kind)
            .await
            .expect("register");
        subjects.push(subject);
    }
    subjects
}

fn email(value: &str) -> KeyInput {
    KeyInput::new(KeyType::Email, "app", value)
}

fn invalid_at(result: Result<impl std::fmt::Debug, DirectoryError>, expected: &str) {
    match result {
        Err(DirectoryError::Invalid { field, .. }) => assert_eq!(field, expected),
        other => panic!("expected a refusal at {expected}, got {other:?}"),
    }
}

/// One `#[tokio::test]` per case of the [`DirectoryStore`] suite ([`crate::testing`] shows the forms).
///
/// ```ignore
/// janitor_core::directory_store_tests!(fresh: |()| async { MemoryDirectoryStore::new() });
/// ```
#[macro_export]
macro_rules! directory_store_tests {
    ($($setup:tt)+) => {
        $crate::__store_suite!(
            directory_store [
            subjects_keep_their_kind,
            account_ids_are_bounded,
            keys_belong_to_one_subject,
            concurrent_claims_have_one_winner,
            subjects_are_never_merged,
            key_removal_is_per_subject,
            delegation_expiry_bounds,
            delegation_scope_bounds,
            delegation_audience_bounds,
            delegations_need_two_known_subjects,
            revocation_counts_once,
            assessment_reasons_in_order,
            earlier_reasons_win,
            assessment_without_a_grant,
            deletion_cascades,
            forget_user_erases_the_account,
            cleanup_removes_ended_grants,
            ]
            $($setup)+
        );
    };
}
