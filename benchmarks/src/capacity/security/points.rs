//! The points of the SQL run that go through the library's evidence and quota APIs: event recording, velocity
//! reads of a sparse and of the hot subject, and global quota claims with room and without.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use janitor_core::evidence::{
    Action, ActivityKey, EventInput, EventType, Evidence, SubjectId, VelocityQuery,
};
use janitor_core::protection::quota::{QuotaConfig, QuotaContext, QuotaDecision, RequestQuotas};
use janitor_core::LabelKey;
use janitor_sql::{Database, PgEvidenceStore, PgQuotaStore};

use crate::capacity::seed::{self, now_ms, sparse_sign_ins, SPARSE_SUBJECTS};
use crate::closed_loop::{self, Gauge, Outcome, Point};

/// The event insert through the library, one statement per event.
pub const EVENT_INSERT: &str = "event-insert";
/// The same with inserts grouped.
pub const EVENT_INSERT_GROUPED: &str = "event-insert-grouped";

/// What every point of the run shares.
#[derive(Clone)]
pub struct Workload {
    /// The pool of the run.
    pub database: Database,
    /// The evidence service over it.
    pub evidence: Arc<Evidence<PgEvidenceStore>>,
    /// The same with event inserts grouped (`GroupedInserts::default()`), for `event-insert-grouped`.
    pub grouped: Arc<Evidence<PgEvidenceStore>>,
    /// Events of the fixture (without the one recorded through the API).
    pub events: u64,
    /// The fixture's clock: velocity reads are asked as of this moment.
    pub fixture_now: i64,
    /// Shards of the global quota.
    pub shards: u32,
    /// Operations per point.
    pub samples: u64,
    /// Makes this run's event ids and quota namespaces its own (a reused fixture keeps earlier runs' rows).
    pub run_tag: i64,
    /// Numbers this run's recorded events.
    pub serial: Arc<AtomicU64>,
    /// Read while each point runs.
    pub gauges: Vec<Gauge>,
}

impl Workload {
    /// Sparse subjects that hold events (all of them from 200,000 events on).
    pub fn active_subjects(&self) -> u64 {
        (self.events / 2).clamp(1, SPARSE_SUBJECTS)
    }

    /// The five evidence and quota points at `concurrency`, with `samples` operations each (the hot read: 256
    /// per 1,000, as the reference ran, and at least one per task).
    pub async fn points(&self, concurrency: u64, samples: u64) -> Result<Vec<Point>, String> {
        let mut points = vec![
            self.event_insert(EVENT_INSERT, &self.evidence, concurrency, samples)
                .await,
            self.event_insert(EVENT_INSERT_GROUPED, &self.grouped, concurrency, samples)
                .await,
            self.velocity_sparse(concurrency, samples).await,
            self.velocity_hot(concurrency, samples * 256 / 1_000).await,
        ];
        points.extend(self.quotas(concurrency, samples).await?);
        Ok(points)
    }

    async fn event_insert(
        &self,
        name: &'static str,
        evidence: &Arc<Evidence<PgEvidenceStore>>,
        concurrency: u64,
        total: u64,
    ) -> Point {
        let (evidence, serial, tag) = (evidence.clone(), self.serial.clone(), self.run_tag);
        closed_loop::run(name, concurrency, total, &self.gauges, move |i| {
            let (evidence, serial) = (evidence.clone(), serial.clone());
            async move {
                let id = format!(
                    "capacity-insert-{tag}-{}",
                    serial.fetch_add(1, Ordering::Relaxed)
                );
                let subject = seed::sparse_subject(&evidence, i * 7_919 % SPARSE_SUBJECTS);
                let input = match EventInput::builder(&id, EventType::LoginAttempt)
                    .action(Action::SignIn)
                    .subject(subject)
                    .build()
                {
                    Ok(input) => input,
                    Err(e) => return Outcome::error(e),
                };
                match evidence.at(now_ms()).record(&input).await {
                    Ok(r) if r.recorded => Outcome::expected("recorded"),
                    Ok(_) => Outcome::unexpected("repeated"),
                    Err(e) => Outcome::error(e),
                }
            }
        })
        .await
    }

    async fn velocity_sparse(&self, concurrency: u64, total: u64) -> Point {
        let (evidence, at, events) = (self.evidence.clone(), self.fixture_now, self.events);
        let active = self.active_subjects();
        closed_loop::run(
            "velocity-sparse",
            concurrency,
            total,
            &self.gauges,
            move |i| {
                let evidence = evidence.clone();
                async move {
                    let n = i * 104_729 % active;
                    let query = sign_ins(seed::sparse_subject(&evidence, n));
                    match evidence.at(at).velocity(&query).await {
                        Ok(s) if s.saturated => Outcome::unexpected("saturated"),
                        // Exactly the fixture's sign-ins of that subject, no more, no fewer.
                        Ok(s) if s.total == sparse_sign_ins(n, events) => {
                            Outcome::expected("counted")
                        }
                        Ok(_) => Outcome::unexpected("miscounted"),
                        Err(e) => Outcome::error(e),
                    }
                }
            },
        )
        .await
    }

    async fn velocity_hot(&self, concurrency: u64, total: u64) -> Point {
        let (evidence, at) = (self.evidence.clone(), self.fixture_now);
        let hot = evidence.subject_id(seed::HOT_ACCOUNT);
        let max = evidence.config().max_events_per_query();
        let total = total.max(concurrency);
        closed_loop::run(
            "velocity-hot",
            concurrency,
            total,
            &self.gauges,
            move |_| {
                let (evidence, query) = (evidence.clone(), sign_ins(hot.clone()));
                async move {
                    match evidence.at(at).velocity(&query).await {
                        Ok(s) if s.saturated && s.total == max => Outcome::expected("saturated"),
                        Ok(_) => Outcome::unexpected("not-saturated"),
                        Err(e) => Outcome::error(e),
                    }
                }
            },
        )
        .await
    }

    fn quota_key(&self, purpose: &str) -> Result<LabelKey, String> {
        // A namespace of the run's own: quota rows of earlier runs on a reused fixture do not count here.
        LabelKey::new(
            &"b".repeat(64),
            &format!("benchmark-{purpose}-{}", self.run_tag),
        )
        .map_err(|e| format!("quota key: {e}"))
    }

    async fn quotas(&self, concurrency: u64, total: u64) -> Result<Vec<Point>, String> {
        // A quota that never runs out within the run: every claim is admitted and counted.
        let roomy = self.global_quota(1_000_000, "shared-quota")?;
        let allowed = self
            .claims("shared-global-quota", concurrency, total, roomy, true)
            .await;
        // One claim per shard, used up first: every claim after is refused (and reads its reset time).
        let exhausted = self.global_quota(self.shards, "exhausted-quota")?;
        for _ in 0..self.shards {
            exhausted
                .check(&QuotaContext::anonymous(), now_ms())
                .await
                .map_err(|e| format!("exhausting the quota: {e}"))?;
        }
        let limited = self
            .claims(
                "exhausted-global-quota",
                concurrency,
                total,
                exhausted,
                false,
            )
            .await;
        Ok(vec![allowed, limited])
    }

    /// A global quota of `limit` claims an hour over the run's shards, in a namespace of its own.
    fn global_quota(&self, limit: u32, purpose: &str) -> Result<Arc<Quotas>, String> {
        let config = QuotaConfig::builder()
            .global(limit)
            .shards(self.shards)
            .window_ms(3_600_000)
            .build()
            .map_err(|e| format!("quota: {e}"))?;
        Ok(Arc::new(RequestQuotas::new(
            PgQuotaStore::new(self.database.clone()),
            self.quota_key(purpose)?,
            config,
        )))
    }

    /// Anonymous claims on `quotas` in a closed loop; `allowed` is the decision each one should get.
    async fn claims(
        &self,
        name: &str,
        concurrency: u64,
        total: u64,
        quotas: Arc<Quotas>,
        allowed: bool,
    ) -> Point {
        closed_loop::run(name, concurrency, total, &self.gauges, move |_| {
            let quotas = quotas.clone();
            async move {
                let decision = match quotas.check(&QuotaContext::anonymous(), now_ms()).await {
                    Ok(QuotaDecision::Allowed) => "allowed",
                    Ok(QuotaDecision::Limited { .. }) => "limited",
                    Err(e) => return Outcome::error(e),
                };
                if (decision == "allowed") == allowed {
                    Outcome::expected(decision)
                } else {
                    Outcome::unexpected(decision)
                }
            }
        })
        .await
    }
}

/// The quotas of the run, on PostgreSQL.
type Quotas = RequestQuotas<PgQuotaStore>;

/// The velocity read of the run: a subject's sign-ins over the default window.
pub fn sign_ins(subject: SubjectId) -> VelocityQuery {
    VelocityQuery::new(ActivityKey::Subject(subject)).action(Action::SignIn)
}
