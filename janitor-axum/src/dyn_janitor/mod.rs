//! [`DynJanitor`]: the handle without its type parameters, for application state and handlers.

mod object;

use std::sync::Arc;

use axum::extract::Request;
use axum::Router;
use http::request::Parts;
use http::HeaderMap;
use janitor_core::directory::{
    AssessmentContext, Attribution, Delegation, DelegationId, DelegationInput, DirectoryError,
    KeyInput, KeyRecord, SubjectKind,
};
use janitor_core::erasure::{AccountErasure, ErasureError};
use janitor_core::evidence::{
    ActivitySummary, DeviceAssessment, DeviceLink, DeviceLinkInput, EventInput, EvidenceError,
    LinkId, Recorded, RevocationInput, SubjectId, VelocityQuery,
};
use janitor_core::{
    Evaluator, Identification, IdentifyError, KeyCheck, StoreError, Stores, VisitorId,
    VisitorPayload,
};

use crate::admission::Admission;
use crate::config::JanitorConfig;
use crate::identity::{ClearVisitorCookie, Identified, IdentityLayer};
use crate::janitor::{Assessment, CleanupError, KeyCheckError, Maintenance};
use crate::maintenance::{MaintenanceSchedule, MaintenanceTask};
use crate::origin::OriginLayer;
use crate::refusal::Refusal;
use crate::{Janitor, VisitorContext};

use object::Handle;

/// A [`Janitor`] whose stores and evaluator are hidden, so that application state, handlers and helper
/// functions name one type whatever the deployment chose (memory or PostgreSQL, with or without a provider).
/// Made by [`Janitor::to_dyn`] or `From`; cheap to clone, and clones share the one handle.
///
/// It offers what the application's own routes use: quotas, identification, origin checks, the cookie,
/// evidence, the directory, erasure and maintenance. The typed stores, engine and services stay on
/// [`Janitor`]. Each call costs one boxed future over the typed handle's.
///
/// ```
/// use axum::{extract::State, routing::post, Router};
/// use janitor_axum::{DynJanitor, Janitor, JanitorConfig, MemoryStores};
///
/// async fn sign_in(State(janitor): State<DynJanitor>) -> &'static str {
///     let _subject = janitor.subject_id("ada");
///     "ok"
/// }
///
/// let config = JanitorConfig::builder()
///     .secret("a-secret-of-at-least-32-bytes-0123456789")
///     .build()
///     .unwrap();
/// let janitor = Janitor::new(config, MemoryStores::new()).to_dyn();
/// let app: Router = Router::new()
///     .route("/login", post(sign_in))
///     .with_state(janitor.clone())
///     .merge(janitor.router());
/// ```
#[derive(Clone)]
pub struct DynJanitor {
    handle: Arc<dyn Handle>,
}

impl std::fmt::Debug for DynJanitor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DynJanitor")
            .field("config", self.handle.config())
            .finish_non_exhaustive()
    }
}

impl<S: Stores, E: Evaluator + 'static> From<Janitor<S, E>> for DynJanitor {
    fn from(janitor: Janitor<S, E>) -> Self {
        DynJanitor::new(janitor)
    }
}

impl DynJanitor {
    pub(crate) fn new<S: Stores, E: Evaluator + 'static>(janitor: Janitor<S, E>) -> Self {
        DynJanitor {
            handle: Arc::new(janitor),
        }
    }

    /// The configuration.
    pub fn config(&self) -> &JanitorConfig {
        self.handle.config()
    }

    /// The admission boundary (see [`Janitor::admission`]).
    pub fn admission(&self) -> &Admission {
        self.handle.admission()
    }

    /// The endpoint and the browser client's route (see [`Janitor::router`]).
    pub fn router(&self) -> Router {
        self.handle.router()
    }

    /// The identity layer (see [`Janitor::identity_layer`]).
    pub fn identity_layer(&self) -> IdentityLayer {
        IdentityLayer::new(self.clone())
    }

    /// The origin layer (see [`Janitor::origin_layer`]).
    pub fn origin_layer(&self) -> OriginLayer {
        OriginLayer::new(self.config().origin().clone())
    }

    /// The origin policy on one request (see [`Janitor::check_origin`]).
    pub fn check_origin(&self, parts: &Parts) -> Result<(), Refusal> {
        crate::origin::check(parts, self.config().origin())
    }

    /// Claims the quotas of `context` (see [`Janitor::claim_quota`]).
    pub async fn claim_quota(&self, context: &VisitorContext) -> Result<(), Refusal> {
        self.handle.claim_quota(context).await
    }

    /// Claims the quotas of `context`, then identifies `payload` if there is one (see
    /// [`Janitor::identify_parts`]).
    pub async fn identify_parts(
        &self,
        parts: &Parts,
        context: &VisitorContext,
        payload: Option<&VisitorPayload>,
    ) -> Result<Option<Identified>, Refusal> {
        self.handle.identify_parts(parts, context, payload).await
    }

    /// Identifies with the cookie of `parts`, without claiming quotas (the identity layer claimed them).
    pub(crate) async fn identify_visitor(
        &self,
        parts: &Parts,
        payload: &VisitorPayload,
    ) -> Result<Identified, Refusal> {
        self.handle.identify_visitor(parts, payload).await
    }

    /// Runs the endpoint on `request` (see [`Janitor::assess`]).
    pub async fn assess(&self, request: Request) -> Assessment {
        self.handle.assess(request).await
    }

    /// Identifies a payload directly, with no HTTP checks and no quota (see [`Janitor::identify`]).
    pub async fn identify(
        &self,
        payload: &VisitorPayload,
        cookie: Option<&VisitorId>,
    ) -> Result<Identification, IdentifyError> {
        self.handle.identify(payload, cookie).await
    }

    /// The visitor of the request's `__visitor` cookie (see [`Janitor::visitor_cookie`]).
    pub fn visitor_cookie(&self, headers: &HeaderMap) -> Option<VisitorId> {
        crate::identify::cookie::visitor(headers)
    }

    /// Response parts that clear the `__visitor` cookie (see [`Janitor::clear_visitor_cookie`]).
    pub fn clear_visitor_cookie(&self) -> ClearVisitorCookie {
        ClearVisitorCookie::new(self.config().cookie().secure())
    }

    /// The subject id of a raw account id: its HMAC label, as evidence and the directory store it.
    pub fn subject_id(&self, account_id: &str) -> SubjectId {
        self.handle.subject_id(account_id)
    }

    /// Checks that every instance on these stores shares the secret (see [`Janitor::check_key`]).
    pub async fn check_key(&self) -> Result<KeyCheck, KeyCheckError> {
        self.handle.check_key().await
    }

    /// One bounded maintenance step (see [`Janitor::cleanup`]).
    pub async fn cleanup(
        &self,
        after: Option<&str>,
        batch: usize,
    ) -> Result<Maintenance, CleanupError> {
        self.handle.cleanup(after, batch).await
    }

    /// Background maintenance until the returned task is dropped (see [`Janitor::spawn_maintenance`]).
    pub fn spawn_maintenance(&self, schedule: MaintenanceSchedule) -> MaintenanceTask {
        self.handle.spawn_maintenance(schedule)
    }

    /// Records an application event (see [`Janitor::record_event`]).
    pub async fn record_event(&self, event: &EventInput) -> Result<Recorded, EvidenceError> {
        self.handle.record_event(event).await
    }

    /// Counts recent events of one subject, session or actor (see [`Janitor::velocity`]).
    pub async fn velocity(&self, query: &VelocityQuery) -> Result<ActivitySummary, EvidenceError> {
        self.handle.velocity(query).await
    }

    /// Records a browser the application verified as the subject's (see [`Janitor::link_device`]).
    pub async fn link_device(&self, link: &DeviceLinkInput) -> Result<DeviceLink, EvidenceError> {
        self.handle.link_device(link).await
    }

    /// Whether a device link still associates `visitor` with `subject` (see [`Janitor::assess_device`]).
    pub async fn assess_device(
        &self,
        link: &LinkId,
        subject: &SubjectId,
        visitor: &VisitorId,
    ) -> Result<DeviceAssessment, EvidenceError> {
        self.handle.assess_device(link, subject, visitor).await
    }

    /// A subject's device links, newest first (see [`Janitor::list_devices`]).
    pub async fn list_devices(
        &self,
        subject: &SubjectId,
        limit: usize,
    ) -> Result<Vec<DeviceLink>, EvidenceError> {
        self.handle.list_devices(subject, limit).await
    }

    /// Revokes a device link (see [`Janitor::revoke_device`]).
    pub async fn revoke_device(
        &self,
        link: &LinkId,
        revocation: &RevocationInput,
    ) -> Result<bool, EvidenceError> {
        self.handle.revoke_device(link, revocation).await
    }

    /// Erases a session's events (see [`Janitor::delete_session`]).
    pub async fn delete_session(&self, session: &str) -> Result<u64, EvidenceError> {
        self.handle.delete_session(session).await
    }

    /// Erases a browser (see [`Janitor::delete_visitor`]).
    pub async fn delete_visitor(&self, visitor: &VisitorId) -> Result<bool, StoreError> {
        self.handle.delete_visitor(visitor).await
    }

    /// Erases an account and, when given, its browser, keeping other accounts' evidence (see
    /// [`Janitor::erase_account`]): the call a GDPR erasure request needs.
    pub async fn erase_account(
        &self,
        account_id: &str,
        browser: Option<&VisitorId>,
    ) -> Result<AccountErasure, ErasureError> {
        self.handle.erase_account(account_id, browser).await
    }

    /// Registers a subject (see [`Janitor::register_subject`]).
    pub async fn register_subject(
        &self,
        subject: &SubjectId,
        kind: SubjectKind,
    ) -> Result<(), DirectoryError> {
        self.handle.register_subject(subject, kind).await
    }

    /// Records a verified key (see [`Janitor::add_verified_key`]).
    pub async fn add_verified_key(
        &self,
        subject: &SubjectId,
        key: &KeyInput,
    ) -> Result<KeyRecord, DirectoryError> {
        self.handle.add_verified_key(subject, key).await
    }

    /// The subject a verified key belongs to (see [`Janitor::find_subject`]).
    pub async fn find_subject(&self, key: &KeyInput) -> Result<Option<SubjectId>, DirectoryError> {
        self.handle.find_subject(key).await
    }

    /// Grants an actor the right to act for a principal (see [`Janitor::create_delegation`]).
    pub async fn create_delegation(
        &self,
        input: &DelegationInput,
    ) -> Result<Delegation, DirectoryError> {
        self.handle.create_delegation(input).await
    }

    /// Revokes a delegation (see [`Janitor::revoke_delegation`]).
    pub async fn revoke_delegation(&self, id: &DelegationId) -> Result<bool, DirectoryError> {
        self.handle.revoke_delegation(id).await
    }

    /// Who a request speaks for and who acts (see [`Janitor::attribute`]).
    pub async fn attribute(
        &self,
        context: &AssessmentContext,
    ) -> Result<Attribution, DirectoryError> {
        self.handle.attribute(context).await
    }
}
