//! The SQL this crate runs, for plan checks (`EXPLAIN`) and benchmark replays (pgbench): the one doorway to
//! texts that are otherwise private. They are an implementation detail, not an API: a release may change any of
//! them with the schema, so nothing outside tests and benchmarks should depend on one.

use janitor_core::evidence::ActivityColumn;
use janitor_core::identification::candidates::Probe;

use crate::{
    budget_store, directory_store, erasure, evidence_store, key_check, learning_store,
    visitor_store,
};

/// Every fixed statement, by a stable name: `<store>.<statement>`.
pub const STATEMENTS: &[(&str, &str)] = &[
    ("visitors.create", visitor_store::statements::CREATE),
    ("visitors.touch", visitor_store::statements::TOUCH),
    (
        "visitors.create_and_save",
        visitor_store::statements::CREATE_AND_SAVE,
    ),
    ("visitors.save", visitor_store::statements::SAVE),
    ("visitors.history", visitor_store::statements::HISTORY),
    (
        "visitors.returning_visit",
        visitor_store::statements::RETURNING_VISIT,
    ),
    (
        "visitors.history_batch",
        visitor_store::statements::HISTORY_BATCH,
    ),
    ("visitors.delete", visitor_store::statements::DELETE_VISITOR),
    ("visitors.expire", visitor_store::statements::EXPIRE),
    ("visitors.page", visitor_store::statements::VISITOR_PAGE),
    ("visitors.prune", visitor_store::statements::PRUNE_VISITORS),
    (
        "visitors.remove_empty_stale",
        visitor_store::statements::REMOVE_EMPTY_STALE,
    ),
    ("budget.read", budget_store::statements::READ),
    ("budget.insert", budget_store::statements::INSERT),
    ("budget.update", budget_store::statements::UPDATE),
    ("budget.cleanup", budget_store::statements::CLEANUP),
    (
        "evidence.insert_event",
        evidence_store::statements::INSERT_EVENT,
    ),
    (
        "evidence.event_digest",
        evidence_store::statements::EVENT_DIGEST,
    ),
    (
        "evidence.insert_link",
        evidence_store::statements::INSERT_LINK,
    ),
    ("evidence.link", evidence_store::statements::LINK),
    (
        "evidence.links_of_subject",
        evidence_store::statements::LINKS_OF_SUBJECT,
    ),
    (
        "evidence.revoke_link",
        evidence_store::statements::REVOKE_LINK,
    ),
    (
        "evidence.delete_subject_events",
        evidence_store::statements::DELETE_SUBJECT_EVENTS,
    ),
    (
        "evidence.delete_session_events",
        evidence_store::statements::DELETE_SESSION_EVENTS,
    ),
    (
        "evidence.put_subject",
        evidence_store::statements::PUT_SUBJECT,
    ),
    (
        "evidence.delete_subject",
        evidence_store::statements::DELETE_SUBJECT,
    ),
    ("evidence.erase", evidence_store::statements::ERASE_EVIDENCE),
    ("erasure.lock_targets", erasure::statements::LOCK_TARGETS),
    ("erasure.erase_subject", erasure::statements::ERASE_SUBJECT),
    ("evidence.cleanup", evidence_store::statements::CLEANUP),
    ("key_checks.record", key_check::RECORD),
    ("directory.subject", directory_store::statements::SUBJECT),
    ("directory.put_key", directory_store::statements::PUT_KEY),
    (
        "directory.key_owner",
        directory_store::statements::KEY_OWNER,
    ),
    (
        "directory.remove_key",
        directory_store::statements::REMOVE_KEY,
    ),
    (
        "directory.put_delegation",
        directory_store::statements::PUT_DELEGATION,
    ),
    (
        "directory.delegation",
        directory_store::statements::DELEGATION,
    ),
    (
        "directory.revoke_delegation",
        directory_store::statements::REVOKE_DELEGATION,
    ),
    ("directory.cleanup", directory_store::statements::CLEANUP),
    (
        "learning.insert_session",
        learning_store::statements::INSERT_SESSION,
    ),
    ("learning.session", learning_store::statements::SESSION),
    (
        "learning.update_session",
        learning_store::statements::UPDATE_SESSION,
    ),
    (
        "learning.confirm_session",
        learning_store::statements::CONFIRM_SESSION,
    ),
    (
        "learning.delete_session",
        learning_store::statements::DELETE_SESSION,
    ),
    ("learning.examples", learning_store::statements::EXAMPLES),
    ("learning.reports", learning_store::statements::REPORTS),
    (
        "learning.cleanup_retired",
        learning_store::statements::CLEANUP_RETIRED,
    ),
    (
        "learning.cleanup_surplus",
        learning_store::statements::CLEANUP_SURPLUS,
    ),
    (
        "learning.delete_subject_sessions",
        learning_store::statements::DELETE_SUBJECT_SESSIONS,
    ),
];

/// The fixed statement called `name` (see [`STATEMENTS`]).
///
/// # Panics
/// When no statement has that name, listing the names there are.
pub fn statement(name: &str) -> &'static str {
    STATEMENTS
        .iter()
        .find(|(known, _)| *known == name)
        .map(|(_, text)| *text)
        .unwrap_or_else(|| {
            let names: Vec<&str> = STATEMENTS.iter().map(|(known, _)| *known).collect();
            panic!("no statement named {name:?}; known: {}", names.join(", "))
        })
}

/// The candidate lookup the visitor store runs for `probes` by default (`None` when there is nothing to look
/// up).
pub fn candidate_lookup(probes: &[Probe]) -> Option<String> {
    candidate_lookup_reading(probes, crate::LookupRead::default())
}

/// The candidate lookup for `probes` as it was before its last key became a range: `key = value` on each key,
/// ordered by `seen_at DESC` alone (the plan benchmark's "before").
pub fn candidate_lookup_by_equality(probes: &[Probe]) -> Option<String> {
    visitor_store::statements::lookup_matching(
        probes,
        crate::LookupRead::default(),
        visitor_store::statements::KeyMatch::Equality,
    )
}

/// The candidate lookup for `probes` that reads rows the way `read` says.
pub fn candidate_lookup_reading(probes: &[Probe], read: crate::LookupRead) -> Option<String> {
    visitor_store::statements::lookup(probes, read)
}

/// The activity read the evidence store runs for a key column, with or without an action filter.
pub fn recent_event_types(column: ActivityColumn, with_action: bool) -> &'static str {
    evidence_store::recent_types_statement(column, with_action)
}

/// The index of migration 0001 that serves `family`'s probe: its keys, then `seen_at DESC`.
pub fn family_index(family: janitor_core::identification::candidates::ProbeFamily) -> &'static str {
    use janitor_core::identification::candidates::ProbeFamily;
    match family {
        ProbeFamily::ScreenHardware => "idx_observation_screen_hardware",
        ProbeFamily::ScreenTimezone => "idx_observation_screen_timezone",
        ProbeFamily::RendererTimezone => "idx_observation_graphics_timezone",
        ProbeFamily::PlatformBrowser => "idx_observation_platform_browser",
        ProbeFamily::Renderer => "idx_observation_webgl_renderer",
        ProbeFamily::TimezoneBrowser => "idx_observation_timezone_browser",
    }
}
