//! What an operator sees: counters and histograms through the `metrics` facade (feature `metrics`; the
//! application installs a recorder, such as a Prometheus exporter), and tracing events. Neither ever carries a
//! visitor id, a cookie, an account, a session or a signal.
//!
//! | metric | labels | what |
//! |---|---|---|
//! | `janitor_identifications_total` | `outcome` (cookie, restored, minted), `risk_status` | identifications |
//! | `janitor_identification_seconds` | `outcome` | the engine's time per identification |
//! | `janitor_refusals_total` | `reason` ([`Refusal::reason`]) | answers that were not an identification |
//! | `janitor_jev_calls_total` | `outcome` (answered, timeout, failed, refused) | provider calls |
//! | `janitor_budget_denials_total` | `reason` (budget, concurrency, circuit-open, storage) | calls the shared budget refused |
//! | `janitor_db_pool_wait_seconds` | | waits for a pooled connection |
//! | `janitor_db_pool_timeouts_total` | | waits that ran out |
//! | `janitor_db_statement_timeouts_total` | | statements the client gave up on (transaction pooling, the lookup replica's bound) |
//! | `janitor_db_unavailable_total` | | every outcome reported as "unavailable": connections refused or timed out, pool waits out, lost connections, statement timeouts |
//! | `janitor_maintenance_deleted_total` | `what` (observations, visitors, quotas, events, links, delegations) | rows cleanup removed |
//!
//! Every metric is described (help text and unit) and every counter's series is registered at zero when a
//! handle is built, so a scrape before the first event already lists them: install the recorder before
//! building the handle. The `janitor_db_*` metrics are there with feature `postgres`, `janitor_jev_calls_total`
//! with feature `jev`.
//!
//! Logs: the stores (a warning for the memory stores in production) and the request quotas at info when a
//! handle is built; one `janitor.identify` span per identification
//! with its outcome and risk status; warnings for overload, storage failures and provider failures, and info
//! for quota denials, each at most once a second with the count of those left out.

use std::time::Duration;

use janitor_core::automation::{Automation, AutomationVerdict};
use janitor_core::identification::engine::{IdentifyMetrics, IdentifyPath};
use janitor_core::throttle::Throttle;
use janitor_core::{Identity, StoresKind};

use crate::config::{Environment, JanitorConfig};
use crate::maintenance::Maintenance;
use crate::refusal::Refusal;

/// Every `outcome` of an identification.
#[cfg(feature = "metrics")]
const OUTCOMES: [&str; 3] = ["cookie", "restored", "minted"];
/// Every `risk_status` of an identification.
#[cfg(feature = "metrics")]
const RISK_STATUSES: [&str; 3] = ["disabled", "unavailable", "evaluated"];
/// Every `outcome` of a provider call.
#[cfg(all(feature = "metrics", feature = "jev"))]
const PROVIDER_OUTCOMES: [&str; 4] = ["answered", "timeout", "failed", "refused"];
/// Every `reason` the shared inference budget denies a call for.
#[cfg(feature = "metrics")]
const BUDGET_DENIALS: [&str; 4] = ["budget", "concurrency", "circuit-open", "storage"];
/// Every `what` of the rows maintenance removes.
#[cfg(feature = "metrics")]
const MAINTAINED: [&str; 6] = [
    "observations",
    "visitors",
    "quotas",
    "events",
    "links",
    "delegations",
];

/// What a handle reports once, when it is built: its stores and request quotas in the log (an operator should
/// see an instance on the wrong stores before its visitors are lost, and a quota that is off, or on when it was
/// not meant to be, before the first 429), and with feature `metrics` every metric described and every
/// counter at zero.
pub(crate) fn handle_built(config: &JanitorConfig, stores: StoresKind) {
    match (stores, config.environment()) {
        // A misspelled or missing DATABASE_URL in production lands here, and nothing else would say so.
        (StoresKind::Memory, Environment::Production) => tracing::warn!(
            "stores: in memory, in production: each instance keeps its own visitors, quota counters and \
             evidence, and nothing survives a restart; use PostgreSQL (DATABASE_URL) to share them and keep them"
        ),
        (stores, _) => tracing::info!("stores: {stores}"),
    }
    match config.quotas() {
        Some(quotas) => tracing::info!("request quotas on: {quotas}"),
        None => tracing::info!("request quotas off"),
    }
    #[cfg(feature = "metrics")]
    register_metrics();
}

/// Describes every metric and registers each counter's series at zero. Adding zero leaves a count another
/// handle of the process has made untouched.
#[cfg(feature = "metrics")]
fn register_metrics() {
    use metrics::{describe_counter, describe_histogram, Unit};

    describe_counter!(
        "janitor_identifications_total",
        Unit::Count,
        "Identifications, by how the visitor was known (outcome) and the risk status"
    );
    describe_histogram!(
        "janitor_identification_seconds",
        Unit::Seconds,
        "Time the engine took for one identification, by outcome"
    );
    describe_counter!(
        "janitor_refusals_total",
        Unit::Count,
        "Answers of the endpoint that were not an identification, by reason"
    );
    describe_counter!(
        "janitor_budget_denials_total",
        Unit::Count,
        "Provider calls the shared inference budget refused, by reason"
    );
    describe_counter!(
        "janitor_signin_decisions_total",
        Unit::Count,
        "Sign-in attempts the defence stopped (or would have, in dry run), by verdict and reason"
    );
    describe_counter!(
        "janitor_automation_verdicts_total",
        Unit::Count,
        "Automation verdicts given, by verdict"
    );
    describe_counter!(
        "janitor_automation_reasons_total",
        Unit::Count,
        "Automation checks that fired, by reason"
    );
    for verdict in [
        AutomationVerdict::Human,
        AutomationVerdict::Suspected,
        AutomationVerdict::Automated,
    ] {
        metrics::counter!("janitor_automation_verdicts_total", "verdict" => verdict.as_str())
            .increment(0);
    }
    for reason in janitor_core::automation::AutomationReason::ALL {
        metrics::counter!("janitor_automation_reasons_total", "reason" => reason.as_str())
            .increment(0);
    }
    describe_counter!(
        "janitor_maintenance_deleted_total",
        Unit::Count,
        "Rows maintenance deleted, by what they held"
    );
    for outcome in OUTCOMES {
        for risk_status in RISK_STATUSES {
            metrics::counter!(
                "janitor_identifications_total",
                "outcome" => outcome,
                "risk_status" => risk_status
            )
            .increment(0);
        }
    }
    for refusal in Refusal::ALL {
        metrics::counter!("janitor_refusals_total", "reason" => refusal.reason()).increment(0);
    }
    for reason in BUDGET_DENIALS {
        metrics::counter!("janitor_budget_denials_total", "reason" => reason).increment(0);
    }
    for what in MAINTAINED {
        metrics::counter!("janitor_maintenance_deleted_total", "what" => what).increment(0);
    }
    #[cfg(feature = "jev")]
    {
        describe_counter!(
            "janitor_jev_calls_total",
            Unit::Count,
            "Calls to the Jev provider, by outcome"
        );
        for outcome in PROVIDER_OUTCOMES {
            metrics::counter!("janitor_jev_calls_total", "outcome" => outcome).increment(0);
        }
    }
    #[cfg(feature = "postgres")]
    register_database_metrics();
}

/// The pool's and the statements' metrics, which janitor-sql records.
#[cfg(all(feature = "metrics", feature = "postgres"))]
fn register_database_metrics() {
    use metrics::{describe_counter, describe_histogram, Unit};

    describe_histogram!(
        "janitor_db_pool_wait_seconds",
        Unit::Seconds,
        "Time spent waiting for a pooled database connection"
    );
    for (name, help) in [
        (
            "janitor_db_pool_timeouts_total",
            "Waits for a pooled database connection that ran out (answered 503, or by the primary for the lookup replica)",
        ),
        (
            "janitor_db_statement_timeouts_total",
            "Statements the client gave up on at their timeout (transaction pooling, the lookup replica's bound)",
        ),
        (
            "janitor_db_unavailable_total",
            "Outcomes reported as unavailable: connections refused or timed out, pool waits out, lost connections, statement timeouts",
        ),
    ] {
        describe_counter!(name, Unit::Count, help);
        metrics::counter!(name).increment(0);
    }
    describe_counter!(
        "janitor_db_lookups_total",
        Unit::Count,
        "Cookieless lookups of stores with a lookup replica, by the server that was to answer (on)"
    );
    for on in ["replica", "primary"] {
        metrics::counter!("janitor_db_lookups_total", "on" => on).increment(0);
    }
    metrics::describe_gauge!(
        "janitor_db_replica_lag_seconds",
        Unit::Seconds,
        "The lookup replica's replay lag at its last reading"
    );
}

/// How an identification ended: by its cookie, by restoring an id without one, or with a new id.
pub(crate) fn outcome(metrics: &IdentifyMetrics, identity: &Identity) -> &'static str {
    match (metrics.path, identity.is_returning) {
        (IdentifyPath::Cookie, _) => "cookie",
        (IdentifyPath::Cookieless, true) => "restored",
        (IdentifyPath::Cookieless, false) => "minted",
    }
}

/// Records one identification.
pub(crate) fn identified(metrics: &IdentifyMetrics, identity: &Identity, elapsed: Duration) {
    let outcome = outcome(metrics, identity);
    let span = tracing::Span::current();
    span.record("outcome", outcome);
    span.record("risk_status", identity.risk_status.as_str());
    #[cfg(feature = "metrics")]
    {
        metrics::counter!(
            "janitor_identifications_total",
            "outcome" => outcome,
            "risk_status" => identity.risk_status.as_str()
        )
        .increment(1);
        metrics::histogram!("janitor_identification_seconds", "outcome" => outcome)
            .record(elapsed.as_secs_f64());
    }
    #[cfg(not(feature = "metrics"))]
    let _ = elapsed;
}

/// Records one refusal, and logs the ones an operator acts on.
/// Counts an automation verdict and each reason that fired; logs a verdict other than human at debug, by its
/// reasons' names only.
pub(crate) fn automation_assessed(automation: &Automation) {
    if automation.verdict() != AutomationVerdict::Human {
        let reasons: Vec<&str> = automation.reasons().iter().map(|r| r.as_str()).collect();
        tracing::debug!(verdict = automation.verdict().as_str(), reasons = ?reasons, "automation verdict");
    }
    #[cfg(feature = "metrics")]
    {
        metrics::counter!("janitor_automation_verdicts_total", "verdict" => automation.verdict().as_str())
            .increment(1);
        for reason in automation.reasons() {
            metrics::counter!("janitor_automation_reasons_total", "reason" => reason.as_str())
                .increment(1);
        }
    }
}

/// Logs and counts a sign-in decision that was not a plain allowance: one `janitor_signin_decisions_total`
/// per reason, labelled with the verdict decided and whether it was enforced (`dry_run`).
pub(crate) fn signin_decided(decision: &janitor_core::protection::signin::SignInDecision) {
    if decision.reasons().is_empty() {
        return;
    }
    let reasons: Vec<&str> = decision.reasons().iter().map(|r| r.as_str()).collect();
    tracing::info!(
        verdict = decision.decided().as_str(),
        dry_run = decision.dry_run(),
        known_browser = decision.known_browser(),
        reasons = ?reasons,
        "sign-in {}",
        if decision.dry_run() { "would be stopped (dry run)" } else { "stopped" }
    );
    #[cfg(feature = "metrics")]
    for reason in decision.reasons() {
        metrics::counter!(
            "janitor_signin_decisions_total",
            "verdict" => decision.decided().as_str(),
            "reason" => reason.as_str(),
            "dry_run" => if decision.dry_run() { "true" } else { "false" }
        )
        .increment(1);
    }
}

pub(crate) fn refused(refusal: Refusal) {
    #[cfg(feature = "metrics")]
    metrics::counter!("janitor_refusals_total", "reason" => refusal.reason()).increment(1);
    match refusal {
        Refusal::Busy => {
            if let Some(left_out) = BUSY.allow() {
                tracing::warn!(left_out, "every measurement slot is taken: answering 503");
            }
        }
        Refusal::RateLimited { .. } => {
            if let Some(left_out) = RATE_LIMITED.allow() {
                tracing::info!(left_out, "a request quota is spent: answering 429");
            }
        }
        Refusal::Unavailable => {
            if let Some(left_out) = UNAVAILABLE.allow() {
                tracing::warn!(left_out, "storage is unavailable: answering 503");
            }
        }
        _ => {}
    }
}

/// Records one provider call.
#[cfg_attr(not(feature = "jev"), allow(dead_code))]
pub(crate) fn provider_call(outcome: &'static str) {
    #[cfg(feature = "metrics")]
    metrics::counter!("janitor_jev_calls_total", "outcome" => outcome).increment(1);
    if outcome != "answered" {
        if let Some(left_out) = PROVIDER.allow() {
            tracing::warn!(
                outcome,
                left_out,
                "the Jev provider gave no answer: risk is unavailable"
            );
        }
    }
}

/// Records the rows a maintenance step removed, whether the background task or the application ran it.
pub(crate) fn maintained(step: &Maintenance) {
    #[cfg(feature = "metrics")]
    {
        let observations = step.visitors.expired_deleted + step.visitors.pruned;
        let rows = [
            observations as u64,
            step.visitors.visitors_removed as u64,
            step.quotas as u64,
            step.evidence.events_deleted,
            step.evidence.links_deleted,
            step.delegations,
        ];
        for (what, rows) in MAINTAINED.into_iter().zip(rows) {
            metrics::counter!("janitor_maintenance_deleted_total", "what" => what).increment(rows);
        }
    }
    #[cfg(not(feature = "metrics"))]
    let _ = step;
}

static BUSY: Throttle = Throttle::new();
static RATE_LIMITED: Throttle = Throttle::new();
static UNAVAILABLE: Throttle = Throttle::new();
#[cfg_attr(not(feature = "jev"), allow(dead_code))]
static PROVIDER: Throttle = Throttle::new();

/// The log lines `run` writes on this thread, as the text a plain `fmt` subscriber prints (for tests).
#[cfg(test)]
pub(crate) fn captured_logs(run: impl FnOnce()) -> String {
    use std::sync::{Arc, Mutex};

    #[derive(Clone, Default)]
    struct Buffer(Arc<Mutex<Vec<u8>>>);
    impl std::io::Write for Buffer {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    let buffer = Buffer::default();
    let writer = buffer.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .without_time()
        .with_max_level(tracing::Level::DEBUG)
        .finish();
    tracing::subscriber::with_default(subscriber, run);
    let bytes = buffer.0.lock().unwrap().clone();
    String::from_utf8(bytes).expect("utf-8 logs")
}

#[cfg(test)]
mod tests {
    use janitor_core::protection::quota::QuotaConfig;

    use super::*;

    const SECRET: &str = "7c1e9a24f0b35d86e2a4c7f190b3d5e8";

    #[test]
    fn a_built_handle_logs_its_quotas() {
        let off = JanitorConfig::builder().secret(SECRET).build().unwrap();
        let logs = captured_logs(|| handle_built(&off, StoresKind::Memory));
        assert!(logs.contains("INFO"), "{logs}");
        assert!(logs.contains("request quotas off"), "{logs}");
        let only_account = QuotaConfig::builder()
            .without_global()
            .account(3)
            .without_session()
            .build()
            .unwrap();
        let on = JanitorConfig::builder()
            .secret(SECRET)
            .quotas(only_account)
            .build()
            .unwrap();
        let logs = captured_logs(|| handle_built(&on, StoresKind::Memory));
        assert!(
            logs.contains("request quotas on: global off, account 3, session off, window 60000 ms"),
            "{logs}"
        );
    }

    #[test]
    fn a_built_handle_says_which_stores_it_runs_on_and_warns_of_memory_in_production() {
        let production = JanitorConfig::builder().secret(SECRET).build().unwrap();
        // Through the handle: the memory stores say what they are.
        let logs = captured_logs(|| {
            crate::Janitor::new(production.clone(), janitor_core::MemoryStores::new());
        });
        let line = logs.lines().find(|l| l.contains("stores:")).unwrap_or("");
        assert!(line.contains("WARN"), "{logs}");
        for consequence in [
            "each instance keeps its own visitors",
            "nothing survives a restart",
            "PostgreSQL (DATABASE_URL)",
        ] {
            assert!(line.contains(consequence), "{consequence}: {logs}");
        }

        let development = JanitorConfig::builder()
            .secret(SECRET)
            .environment(Environment::Development)
            .build()
            .unwrap();
        let logs = captured_logs(|| handle_built(&development, StoresKind::Memory));
        assert!(logs.contains("INFO") && !logs.contains("WARN"), "{logs}");
        assert!(
            logs.contains("stores: in memory (this process only, lost at a restart)"),
            "{logs}"
        );

        let logs = captured_logs(|| handle_built(&production, StoresKind::Shared("PostgreSQL")));
        assert!(!logs.contains("WARN"), "{logs}");
        assert!(
            logs.contains("INFO") && logs.contains("stores: PostgreSQL (shared by every instance)"),
            "{logs}"
        );
    }

    /// The lists of label values name every variant: each match has no wildcard, so a new variant fails to
    /// compile here until it is listed.
    #[cfg(feature = "metrics")]
    #[test]
    fn the_label_lists_name_every_variant() {
        use janitor_core::protection::budget::BudgetDenial;
        use janitor_core::RiskStatus;

        let risk = |status: RiskStatus| match status {
            RiskStatus::Disabled | RiskStatus::Unavailable | RiskStatus::Evaluated => {
                status.as_str()
            }
        };
        let statuses = [
            RiskStatus::Disabled,
            RiskStatus::Unavailable,
            RiskStatus::Evaluated,
        ];
        assert_eq!(statuses.map(risk), RISK_STATUSES);
        let denial = |denial: BudgetDenial| match denial {
            BudgetDenial::Budget
            | BudgetDenial::Concurrency
            | BudgetDenial::CircuitOpen
            | BudgetDenial::Storage => denial.as_str(),
        };
        let denials = [
            BudgetDenial::Budget,
            BudgetDenial::Concurrency,
            BudgetDenial::CircuitOpen,
            BudgetDenial::Storage,
        ];
        assert_eq!(denials.map(denial), BUDGET_DENIALS);
    }
}
