//! The object-safe face of a `Janitor<S, E>`: every operation [`DynJanitor`](super::DynJanitor) offers, its
//! futures boxed so that the stores' types stay behind the trait object.

use std::future::Future;
use std::pin::Pin;

use axum::extract::Request;
use axum::Router;
use http::request::Parts;
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
use crate::identity::Identified;
use crate::janitor::{Assessment, CleanupError, KeyCheckError, Maintenance};
use crate::maintenance::{MaintenanceSchedule, MaintenanceTask};
use crate::refusal::Refusal;
use crate::{Janitor, VisitorContext};

/// A boxed future that may cross threads.
pub(crate) type Boxed<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// What a handle does, whatever its stores.
pub(crate) trait Handle: Send + Sync + 'static {
    fn config(&self) -> &JanitorConfig;
    fn admission(&self) -> &Admission;
    fn router(&self) -> Router;
    fn subject_id(&self, account_id: &str) -> SubjectId;
    fn spawn_maintenance(&self, schedule: MaintenanceSchedule) -> MaintenanceTask;

    fn check_key(&self) -> Boxed<'_, Result<KeyCheck, KeyCheckError>>;
    fn assess(&self, request: Request) -> Boxed<'_, Assessment>;
    fn claim_quota<'a>(&'a self, context: &'a VisitorContext) -> Boxed<'a, Result<(), Refusal>>;
    fn identify_parts<'a>(
        &'a self,
        parts: &'a Parts,
        context: &'a VisitorContext,
        payload: Option<&'a VisitorPayload>,
    ) -> Boxed<'a, Result<Option<Identified>, Refusal>>;
    /// The engine and the cookie for `parts`, without the quota claim (the caller made it).
    fn identify_visitor<'a>(
        &'a self,
        parts: &'a Parts,
        payload: &'a VisitorPayload,
    ) -> Boxed<'a, Result<Identified, Refusal>>;
    fn identify<'a>(
        &'a self,
        payload: &'a VisitorPayload,
        cookie: Option<&'a VisitorId>,
    ) -> Boxed<'a, Result<Identification, IdentifyError>>;
    fn cleanup<'a>(
        &'a self,
        after: Option<&'a str>,
        batch: usize,
    ) -> Boxed<'a, Result<Maintenance, CleanupError>>;

    fn record_event<'a>(
        &'a self,
        event: &'a EventInput,
    ) -> Boxed<'a, Result<Recorded, EvidenceError>>;
    fn velocity<'a>(
        &'a self,
        query: &'a VelocityQuery,
    ) -> Boxed<'a, Result<ActivitySummary, EvidenceError>>;
    fn link_device<'a>(
        &'a self,
        link: &'a DeviceLinkInput,
    ) -> Boxed<'a, Result<DeviceLink, EvidenceError>>;
    fn assess_device<'a>(
        &'a self,
        link: &'a LinkId,
        subject: &'a SubjectId,
        visitor: &'a VisitorId,
    ) -> Boxed<'a, Result<DeviceAssessment, EvidenceError>>;
    fn list_devices<'a>(
        &'a self,
        subject: &'a SubjectId,
        limit: usize,
    ) -> Boxed<'a, Result<Vec<DeviceLink>, EvidenceError>>;
    fn revoke_device<'a>(
        &'a self,
        link: &'a LinkId,
        revocation: &'a RevocationInput,
    ) -> Boxed<'a, Result<bool, EvidenceError>>;
    fn delete_session<'a>(&'a self, session: &'a str) -> Boxed<'a, Result<u64, EvidenceError>>;
    fn delete_visitor<'a>(&'a self, visitor: &'a VisitorId) -> Boxed<'a, Result<bool, StoreError>>;
    fn erase_account<'a>(
        &'a self,
        account_id: &'a str,
        browser: Option<&'a VisitorId>,
    ) -> Boxed<'a, Result<AccountErasure, ErasureError>>;

    fn register_subject<'a>(
        &'a self,
        subject: &'a SubjectId,
        kind: SubjectKind,
    ) -> Boxed<'a, Result<(), DirectoryError>>;
    fn add_verified_key<'a>(
        &'a self,
        subject: &'a SubjectId,
        key: &'a KeyInput,
    ) -> Boxed<'a, Result<KeyRecord, DirectoryError>>;
    fn find_subject<'a>(
        &'a self,
        key: &'a KeyInput,
    ) -> Boxed<'a, Result<Option<SubjectId>, DirectoryError>>;
    fn create_delegation<'a>(
        &'a self,
        input: &'a DelegationInput,
    ) -> Boxed<'a, Result<Delegation, DirectoryError>>;
    fn revoke_delegation<'a>(
        &'a self,
        id: &'a DelegationId,
    ) -> Boxed<'a, Result<bool, DirectoryError>>;
    fn attribute<'a>(
        &'a self,
        context: &'a AssessmentContext,
    ) -> Boxed<'a, Result<Attribution, DirectoryError>>;
}

impl<S: Stores, E: Evaluator + 'static> Handle for Janitor<S, E> {
    fn config(&self) -> &JanitorConfig {
        Janitor::config(self)
    }
    fn admission(&self) -> &Admission {
        Janitor::admission(self)
    }
    fn router(&self) -> Router {
        Janitor::router(self)
    }
    fn subject_id(&self, account_id: &str) -> SubjectId {
        self.evidence().subject_id(account_id)
    }
    fn spawn_maintenance(&self, schedule: MaintenanceSchedule) -> MaintenanceTask {
        Janitor::spawn_maintenance(self, schedule)
    }

    fn check_key(&self) -> Boxed<'_, Result<KeyCheck, KeyCheckError>> {
        Box::pin(Janitor::check_key(self))
    }
    fn assess(&self, request: Request) -> Boxed<'_, Assessment> {
        Box::pin(Janitor::assess(self, request))
    }
    fn claim_quota<'a>(&'a self, context: &'a VisitorContext) -> Boxed<'a, Result<(), Refusal>> {
        Box::pin(Janitor::claim_quota(self, context))
    }
    fn identify_parts<'a>(
        &'a self,
        parts: &'a Parts,
        context: &'a VisitorContext,
        payload: Option<&'a VisitorPayload>,
    ) -> Boxed<'a, Result<Option<Identified>, Refusal>> {
        Box::pin(Janitor::identify_parts(self, parts, context, payload))
    }
    fn identify_visitor<'a>(
        &'a self,
        parts: &'a Parts,
        payload: &'a VisitorPayload,
    ) -> Boxed<'a, Result<Identified, Refusal>> {
        Box::pin(Janitor::identify_visitor(self, parts, payload))
    }
    fn identify<'a>(
        &'a self,
        payload: &'a VisitorPayload,
        cookie: Option<&'a VisitorId>,
    ) -> Boxed<'a, Result<Identification, IdentifyError>> {
        Box::pin(Janitor::identify(self, payload, cookie))
    }
    fn cleanup<'a>(
        &'a self,
        after: Option<&'a str>,
        batch: usize,
    ) -> Boxed<'a, Result<Maintenance, CleanupError>> {
        Box::pin(Janitor::cleanup(self, after, batch))
    }

    fn record_event<'a>(
        &'a self,
        event: &'a EventInput,
    ) -> Boxed<'a, Result<Recorded, EvidenceError>> {
        Box::pin(Janitor::record_event(self, event))
    }
    fn velocity<'a>(
        &'a self,
        query: &'a VelocityQuery,
    ) -> Boxed<'a, Result<ActivitySummary, EvidenceError>> {
        Box::pin(Janitor::velocity(self, query))
    }
    fn link_device<'a>(
        &'a self,
        link: &'a DeviceLinkInput,
    ) -> Boxed<'a, Result<DeviceLink, EvidenceError>> {
        Box::pin(Janitor::link_device(self, link))
    }
    fn assess_device<'a>(
        &'a self,
        link: &'a LinkId,
        subject: &'a SubjectId,
        visitor: &'a VisitorId,
    ) -> Boxed<'a, Result<DeviceAssessment, EvidenceError>> {
        Box::pin(Janitor::assess_device(self, link, subject, visitor))
    }
    fn list_devices<'a>(
        &'a self,
        subject: &'a SubjectId,
        limit: usize,
    ) -> Boxed<'a, Result<Vec<DeviceLink>, EvidenceError>> {
        Box::pin(Janitor::list_devices(self, subject, limit))
    }
    fn revoke_device<'a>(
        &'a self,
        link: &'a LinkId,
        revocation: &'a RevocationInput,
    ) -> Boxed<'a, Result<bool, EvidenceError>> {
        Box::pin(Janitor::revoke_device(self, link, revocation))
    }
    fn delete_session<'a>(&'a self, session: &'a str) -> Boxed<'a, Result<u64, EvidenceError>> {
        Box::pin(Janitor::delete_session(self, session))
    }
    fn delete_visitor<'a>(&'a self, visitor: &'a VisitorId) -> Boxed<'a, Result<bool, StoreError>> {
        Box::pin(Janitor::delete_visitor(self, visitor))
    }
    fn erase_account<'a>(
        &'a self,
        account_id: &'a str,
        browser: Option<&'a VisitorId>,
    ) -> Boxed<'a, Result<AccountErasure, ErasureError>> {
        Box::pin(Janitor::erase_account(self, account_id, browser))
    }

    fn register_subject<'a>(
        &'a self,
        subject: &'a SubjectId,
        kind: SubjectKind,
    ) -> Boxed<'a, Result<(), DirectoryError>> {
        Box::pin(Janitor::register_subject(self, subject, kind))
    }
    fn add_verified_key<'a>(
        &'a self,
        subject: &'a SubjectId,
        key: &'a KeyInput,
    ) -> Boxed<'a, Result<KeyRecord, DirectoryError>> {
        Box::pin(Janitor::add_verified_key(self, subject, key))
    }
    fn find_subject<'a>(
        &'a self,
        key: &'a KeyInput,
    ) -> Boxed<'a, Result<Option<SubjectId>, DirectoryError>> {
        Box::pin(Janitor::find_subject(self, key))
    }
    fn create_delegation<'a>(
        &'a self,
        input: &'a DelegationInput,
    ) -> Boxed<'a, Result<Delegation, DirectoryError>> {
        Box::pin(Janitor::create_delegation(self, input))
    }
    fn revoke_delegation<'a>(
        &'a self,
        id: &'a DelegationId,
    ) -> Boxed<'a, Result<bool, DirectoryError>> {
        Box::pin(Janitor::revoke_delegation(self, id))
    }
    fn attribute<'a>(
        &'a self,
        context: &'a AssessmentContext,
    ) -> Boxed<'a, Result<Attribution, DirectoryError>> {
        Box::pin(Janitor::attribute(self, context))
    }
}
