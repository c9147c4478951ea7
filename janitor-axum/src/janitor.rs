//! The handle an application holds: the endpoint, private assessment, evidence and maintenance.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::response::Response;
use axum::routing::{any, get};
use axum::Router;
use http::request::Parts;
use janitor_core::config::{cleanup_batch, ConfigError};
use janitor_core::directory::{
    AssessmentContext, Attribution, Delegation, DelegationId, DelegationInput, DirectoryError,
    IdentityDirectory, KeyInput, KeyRecord, SubjectKind,
};
use janitor_core::erasure::{AccountErasure, ErasureError};
use janitor_core::evidence::{
    ActivitySummary, DeviceAssessment, DeviceLink, DeviceLinkInput, EventInput, Evidence,
    EvidenceCleanup, EvidenceError, LinkId, Recorded, RevocationInput, SubjectId, VelocityQuery,
};
use janitor_core::identification::store::{CleanupReport, VisitorStore};
use janitor_core::learning::{Learning, LearningError, LearningReport};
use janitor_core::protection::quota::RequestQuotas;
use janitor_core::{
    now_ms, Engine, Evaluator, Identification, IdentifyError, Identity, KeyCheck, NoEvaluator,
    StoreError, Stores, VisitorId, VisitorPayload,
};

use crate::admission::Admission;
use crate::config::JanitorConfig;
use crate::dyn_janitor::DynJanitor;
use crate::identify;
use crate::identity::{ClearVisitorCookie, Identified, IdentityLayer};
use crate::origin::OriginLayer;
use crate::refusal::Refusal;
use crate::VisitorContext;

/// Janitor for one application: cheap to clone, shared by every route and task.
///
/// `S` is where state lives: [`MemoryStores`](janitor_core::MemoryStores) in this process, or `PgStores` of
/// `janitor-sql` (feature `postgres`) shared by every instance on one database; `E` the optional evaluator.
pub struct Janitor<S: Stores, E: Evaluator = NoEvaluator> {
    inner: Arc<Inner<S, E>>,
}

impl<S: Stores, E: Evaluator> Clone for Janitor<S, E> {
    fn clone(&self) -> Self {
        Janitor {
            inner: Arc::clone(&self.inner),
        }
    }
}

impl<S: Stores, E: Evaluator> std::fmt::Debug for Janitor<S, E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Janitor")
            .field("config", &self.inner.config)
            .finish_non_exhaustive()
    }
}

pub(crate) struct Inner<S: Stores, E: Evaluator> {
    pub(crate) config: JanitorConfig,
    pub(crate) admission: Admission,
    pub(crate) stores: S,
    pub(crate) engine: Engine<S::Visitors, E>,
    pub(crate) quotas: Option<RequestQuotas<S::Quotas>>,
    pub(crate) evidence: Evidence<S::Evidence>,
    pub(crate) directory: IdentityDirectory<S::Directory>,
    pub(crate) learning: Learning<S::Learning>,
}

/// What [`Janitor::assess`] gives server code: the answer to send, and the full identity when there is one.
#[derive(Debug)]
pub struct Assessment {
    /// Send this to the browser (it carries the cookie, and only what the configuration exposes).
    pub response: Response,
    /// Confidence, risk, risk status and browser match, for the application's own decisions; `None` when the
    /// request was refused (the response says why).
    pub identity: Option<Identity>,
}

/// What one [`Janitor::cleanup`] call did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Maintenance {
    /// Visitors and observations.
    pub visitors: CleanupReport,
    /// Quota rows whose window ended.
    pub quotas: usize,
    /// Expired events and retired links.
    pub evidence: EvidenceCleanup,
    /// Delegations that ended.
    pub delegations: u64,
    /// Learning sessions retired (ended anonymous flows, disputed flows, rows out of retention, surplus
    /// examples).
    pub learning_sessions: u64,
}

impl<S: Stores> Janitor<S, NoEvaluator> {
    /// A handle with deterministic matching only (risk status `disabled`).
    pub fn new(config: JanitorConfig, stores: S) -> Self {
        Janitor::with_evaluator(config, stores, None::<NoEvaluator>)
    }
}

impl<S: Stores, E: Evaluator + 'static> Janitor<S, E> {
    /// A handle whose engine asks `evaluator` (wrap it in the shared inference budget:
    /// `janitor_core::protection::budget::BudgetedEvaluator` over `stores.budget()`).
    pub fn with_evaluator(config: JanitorConfig, stores: S, evaluator: Option<E>) -> Self {
        crate::telemetry::handle_built(&config, stores.kind());
        let engine = Engine::new(stores.visitors(config.retention), config.engine)
            .with_optional_evaluator(evaluator);
        let quotas = config
            .quotas
            .map(|q| RequestQuotas::new(stores.quotas(), config.key.clone(), q));
        let evidence = Evidence::new(stores.evidence(), config.key.clone(), config.evidence);
        let directory = IdentityDirectory::new(stores.directory(), config.key.clone());
        // The configuration refuses shadow mode (which needs a predictor), so collect mode without one always
        // builds.
        let learning = Learning::new(stores.learning(), &config.key, config.learning, None)
            .expect("JanitorConfig admits collect mode only");
        let admission = Admission::new(config.admission);
        Janitor {
            inner: Arc::new(Inner {
                config,
                admission,
                stores,
                engine,
                quotas,
                evidence,
                directory,
                learning,
            }),
        }
    }

    /// The configuration.
    pub fn config(&self) -> &JanitorConfig {
        &self.inner.config
    }

    /// The stores: every handle they give out works on the state this handle uses.
    pub fn stores(&self) -> &S {
        &self.inner.stores
    }

    /// The identification engine, for direct calls from server code.
    pub fn engine(&self) -> &Engine<S::Visitors, E> {
        &self.inner.engine
    }

    /// The admission boundary of this handle: its in-flight count, its overload callback, and a layer to put
    /// the application's other sensitive routes (evidence, erasure) behind the same limit.
    pub fn admission(&self) -> &Admission {
        &self.inner.admission
    }

    /// Checks that every instance on these stores labels with the same secret: the first instance of a
    /// namespace records a keyed fingerprint of its secret, and an instance started with another secret gets
    /// [`KeyCheckError::Differs`] (call this at start, and refuse to serve on an error). Labels made with two
    /// secrets match nothing of each other's, so quotas, budgets and evidence would split silently.
    pub async fn check_key(&self) -> Result<KeyCheck, KeyCheckError> {
        let key = &self.inner.config.key;
        match self
            .inner
            .stores
            .check_key(key.namespace(), &key.fingerprint())
            .await?
        {
            KeyCheck::Differs => Err(KeyCheckError::Differs {
                namespace: key.namespace().to_owned(),
            }),
            check => Ok(check),
        }
    }

    /// A router with the endpoint at its path (any method; the endpoint answers 405 itself), behind this
    /// handle's admission layer: when `max_in_flight_requests` are being measured, the next request is refused
    /// with 503 before anything else happens. The browser client is served at the script path (GET and HEAD),
    /// and its extended signals' part beside it (`janitor-extended.js`), outside the admission layer: a static
    /// file must load even while measurements are busy.
    pub fn router(&self) -> Router {
        Router::new()
            .route(
                self.inner.config.endpoint.path(),
                any(endpoint::<S, E>).layer(self.inner.admission.layer()),
            )
            .route(
                self.inner.config.endpoint.script_path(),
                get(crate::script::serve),
            )
            .route(
                &crate::script::extended_script_path(self.inner.config.endpoint.script_path()),
                get(crate::script::serve_extended),
            )
            .with_state(self.clone())
    }

    /// Runs the endpoint on `request` and gives the full identity to server code along with the response to
    /// send, so the application can decide on a challenge without exposing scores to the browser.
    pub async fn assess(&self, request: Request) -> Assessment {
        let (response, identity) = identify::handle(&self.inner, request).await;
        Assessment { response, identity }
    }

    /// Claims the quotas of a request made in `context` on a route of the application (a sign-in keyed by
    /// the account being signed into, say): the global counter, then the account's and the session's when
    /// `context` names them. Nothing else is checked (see [`check_origin`](Self::check_origin)); a refusal is
    /// [`Refusal::RateLimited`] (429 with `Retry-After`) or [`Refusal::Unavailable`] (503).
    pub async fn claim_quota(&self, context: &VisitorContext) -> Result<(), Refusal> {
        identify::claim_quota(&self.inner, context)
            .await
            .inspect_err(|refusal| crate::telemetry::refused(*refusal))
    }

    /// On a route of the application: claims the quotas of `context` whether or not the request carries a
    /// payload (a client that leaves the payload out is counted all the same), then identifies `payload`, when
    /// there is one, with the request's `__visitor` cookie. `Ok(None)` means the quotas had room and there
    /// was nothing to identify. The [`Identified`] holds the private identity and, as response parts, the
    /// cookie the response must set. With extended signals on, their header is read from `parts` too; a bad one
    /// means no extended signals (logged at debug), never a failed request, as on every application route (the
    /// endpoint refuses it).
    ///
    /// It checks neither the origin ([`check_origin`](Self::check_origin), [`origin_layer`](Self::origin_layer))
    /// nor the body's size (the handler read it): see
    /// [docs/http.md](https://github.com/janitor-rust/janitor/blob/main/docs/http.md).
    pub async fn identify_parts(
        &self,
        parts: &Parts,
        context: &VisitorContext,
        payload: Option<&VisitorPayload>,
    ) -> Result<Option<Identified>, Refusal> {
        identify::identify_parts(&self.inner, parts, context, payload).await
    }

    /// The engine on `payload` with the cookie (and, with network evidence, the client address; with extended
    /// signals, their header) of `parts`, without the quota claim (the identity layer made it first).
    pub(crate) async fn identify_visitor(
        &self,
        parts: &http::request::Parts,
        payload: &VisitorPayload,
    ) -> Result<Identified, Refusal> {
        identify::identify_visitor(&self.inner, parts, payload, identify::Route::Application)
            .await
            .inspect_err(|refusal| crate::telemetry::refused(*refusal))
    }

    /// A layer for the application's routes that claims each request's quotas and identifies the `visitor`
    /// field of their JSON bodies before the handler runs (see [`IdentityLayer`]); handlers read a
    /// [`VisitorIdentity`](crate::VisitorIdentity) and need no type parameter of this handle.
    pub fn identity_layer(&self) -> IdentityLayer {
        IdentityLayer::new(self.to_dyn())
    }

    /// The endpoint's origin policy (`Origin`, `Sec-Fetch-Site`, forwarded headers from trusted proxies, one
    /// `Host`) as a layer for the application's own state-changing routes.
    pub fn origin_layer(&self) -> OriginLayer {
        OriginLayer::new(self.inner.config.origin.clone())
    }

    /// The endpoint's origin policy on one request: [`Refusal::CrossOrigin`] (403) for a request another
    /// site's page sent, [`Refusal::AmbiguousHost`] (400) for more than one `Host`.
    pub fn check_origin(&self, parts: &Parts) -> Result<(), Refusal> {
        crate::origin::check(parts, &self.inner.config.origin)
    }

    /// The visitor named by the request's `__visitor` cookie, when exactly one well-formed cookie names one.
    pub fn visitor_cookie(&self, headers: &http::HeaderMap) -> Option<VisitorId> {
        identify::cookie::visitor(headers)
    }

    /// Response parts that make the browser forget its `__visitor` cookie (after erasure, say), with the
    /// attributes the cookie was set with.
    pub fn clear_visitor_cookie(&self) -> ClearVisitorCookie {
        ClearVisitorCookie::new(self.inner.config.cookie.secure())
    }

    /// This handle without its type parameters, for handlers and application state that should not name
    /// the stores (the same handle: clones share everything).
    pub fn to_dyn(&self) -> DynJanitor {
        DynJanitor::new(self.clone())
    }

    /// Identifies a payload directly (no HTTP checks, no quota), for server code that has one.
    pub async fn identify(
        &self,
        payload: &VisitorPayload,
        cookie: Option<&VisitorId>,
    ) -> Result<Identification, IdentifyError> {
        self.inner.engine.identify(payload, cookie).await
    }

    /// The evidence service, for everything below and more.
    pub fn evidence(&self) -> &Evidence<S::Evidence> {
        &self.inner.evidence
    }

    /// Records an application event (see
    /// [docs/evidence.md](https://github.com/janitor-rust/janitor/blob/main/docs/evidence.md)).
    pub async fn record_event(&self, event: &EventInput) -> Result<Recorded, EvidenceError> {
        self.inner.evidence.record(event, now_ms()).await
    }

    /// Counts recent events of one subject, session or actor.
    pub async fn velocity(&self, query: &VelocityQuery) -> Result<ActivitySummary, EvidenceError> {
        self.inner.evidence.velocity(query, now_ms()).await
    }

    /// Records a browser the application verified as the subject's.
    pub async fn link_device(&self, link: &DeviceLinkInput) -> Result<DeviceLink, EvidenceError> {
        self.inner.evidence.link(link, now_ms()).await
    }

    /// Whether a device link still associates `visitor` with `subject`.
    pub async fn assess_device(
        &self,
        link: &LinkId,
        subject: &SubjectId,
        visitor: &VisitorId,
    ) -> Result<DeviceAssessment, EvidenceError> {
        let now = now_ms();
        self.inner
            .evidence
            .assess(link, subject, visitor, now)
            .await
    }

    /// A subject's device links, newest first (limit 1–100).
    pub async fn list_devices(
        &self,
        subject: &SubjectId,
        limit: usize,
    ) -> Result<Vec<DeviceLink>, EvidenceError> {
        self.inner.evidence.list(subject, limit).await
    }

    /// Revokes a device link; false when it was revoked already.
    pub async fn revoke_device(
        &self,
        link: &LinkId,
        revocation: &RevocationInput,
    ) -> Result<bool, EvidenceError> {
        let now = now_ms();
        self.inner.evidence.revoke(link, revocation, now).await
    }

    /// Erases a session's events (by its raw id), as the contract defines it. An account's erasure request
    /// needs [`erase_account`](Self::erase_account).
    pub async fn delete_session(&self, session: &str) -> Result<u64, EvidenceError> {
        self.inner.evidence.delete_session(session).await
    }

    /// Erases every event naming `subject` as subject or actor, as the contract defines it (events about
    /// other accounts in which it only acted go too). An erasure request needs
    /// [`erase_account`](Self::erase_account).
    pub async fn delete_subject_events(&self, subject: &SubjectId) -> Result<u64, EvidenceError> {
        self.inner.evidence.delete_subject_events(subject).await
    }

    /// Erases a subject by its id, as [`erase_account`](Self::erase_account) erases an account without its
    /// browser: its keys, delegations, learning sessions, device links and the events about it go; events
    /// about other accounts in which it only acted are kept, detached (unlike the contract's cascade, which
    /// deletes them). Returns whether the subject existed.
    pub async fn delete_subject(&self, subject: &SubjectId) -> Result<bool, EvidenceError> {
        let erased = self.inner.stores.erase_account(subject, None).await?;
        Ok(erased.subject_existed)
    }

    /// Erases a browser: its visitor row, observations, device links and the events naming it that name no
    /// account. Events about accounts are kept without it, so erasing a browser never resets an account's
    /// lockout. Returns whether the visitor existed. The application must authorize erasure and should not
    /// re-identify the browser automatically afterwards. To erase an account (with or without its browser),
    /// call [`erase_account`](Self::erase_account).
    pub async fn delete_visitor(&self, visitor: &VisitorId) -> Result<bool, StoreError> {
        // The family's erasure, not the visitor store's delete: on PostgreSQL the visitor row's foreign keys
        // would cascade to other accounts' events.
        self.inner.stores.erase_visitor(visitor).await
    }

    /// Erases an account — the call a GDPR erasure request needs — and, when given, the account holder's
    /// browser, in one atomic step (see [`janitor_core::erasure`]).
    ///
    /// Goes: the subject row, its keys, delegations, learning sessions, device links and the events about it;
    /// with a browser linked to the account (it signed in to it, or holds a device link to it), its visitor row,
    /// observations, links and anonymous events; any other browser is left alone and
    /// [`AccountErasure::visitor_not_linked`] says so. Stays, detached from the erased account and browser:
    /// events about other accounts (another account's failed sign-ins from the same browser keep counting). The
    /// application must authorize the request.
    pub async fn erase_account(
        &self,
        account_id: &str,
        browser: Option<&VisitorId>,
    ) -> Result<AccountErasure, ErasureError> {
        let key = &self.inner.config.key;
        janitor_core::erasure::erase_account(&self.inner.stores, key, account_id, browser).await
    }

    /// The identity directory: verified people and agents, their keys and delegations (see
    /// [docs/identity.md](https://github.com/janitor-rust/janitor/blob/main/docs/identity.md)).
    pub fn directory(&self) -> &IdentityDirectory<S::Directory> {
        &self.inner.directory
    }

    /// Registers a subject of `kind` for an account; its kind never changes.
    pub async fn register_subject(
        &self,
        subject: &SubjectId,
        kind: SubjectKind,
    ) -> Result<(), DirectoryError> {
        self.inner
            .directory
            .put_subject(subject, kind, now_ms())
            .await
    }

    /// Records a key the application verified for `subject`.
    pub async fn add_verified_key(
        &self,
        subject: &SubjectId,
        key: &KeyInput,
    ) -> Result<KeyRecord, DirectoryError> {
        self.inner
            .directory
            .add_verified_key(subject, key, now_ms())
            .await
    }

    /// The subject a verified key belongs to: a lookup, never an authentication.
    pub async fn find_subject(&self, key: &KeyInput) -> Result<Option<SubjectId>, DirectoryError> {
        self.inner.directory.find_subject(key).await
    }

    /// Grants an actor the right to act for a principal.
    pub async fn create_delegation(
        &self,
        input: &DelegationInput,
    ) -> Result<Delegation, DirectoryError> {
        self.inner
            .directory
            .create_delegation(input, now_ms())
            .await
    }

    /// Revokes a delegation; false when it was revoked already or does not exist.
    pub async fn revoke_delegation(&self, id: &DelegationId) -> Result<bool, DirectoryError> {
        self.inner.directory.revoke_delegation(id, now_ms()).await
    }

    /// Who a request speaks for and who acts, with the standing of the grant it presents.
    pub async fn attribute(
        &self,
        context: &AssessmentContext,
    ) -> Result<Attribution, DirectoryError> {
        self.inner.directory.assess(context, now_ms()).await
    }

    /// Erases everything held about a raw account id, as [`erase_account`](Self::erase_account) without a
    /// browser: its subject, keys, delegations, learning sessions, events and device links; events about
    /// other accounts in which it only acted are kept, detached. Returns whether the subject existed. The
    /// application must authorize erasure.
    pub async fn forget_user(&self, account_id: &str) -> Result<bool, DirectoryError> {
        match self.erase_account(account_id, None).await {
            Ok(erased) => Ok(erased.subject_existed),
            Err(ErasureError::InvalidAccount(error)) => Err(error),
            Err(ErasureError::Store(error)) => Err(DirectoryError::Store(error)),
        }
    }

    /// The learning service (see
    /// [docs/learning.md](https://github.com/janitor-rust/janitor/blob/main/docs/learning.md)): off unless the
    /// configuration enables it.
    pub fn learning(&self) -> &Learning<S::Learning> {
        &self.inner.learning
    }

    /// Recent verified, undisputed learning examples with their recorded predictions (limit 1–100).
    pub async fn learning_reports(
        &self,
        limit: usize,
    ) -> Result<Vec<LearningReport>, LearningError> {
        self.inner.learning.reports(limit, now_ms()).await
    }

    /// Deletes one learning flow by its session id.
    pub async fn delete_learning_session(&self, id: &str) -> Result<bool, LearningError> {
        self.inner.learning.delete_session(id).await
    }

    /// One bounded maintenance step of every store (`batch` 1–1000). Pass the returned
    /// `visitors.next_visitor` as `after` to continue the visitor scan.
    pub async fn cleanup(
        &self,
        after: Option<&str>,
        batch: usize,
    ) -> Result<Maintenance, CleanupError> {
        let batch = cleanup_batch(batch)?;
        let now = now_ms();
        let visitors = self.inner.engine.store().cleanup(after, batch, now).await?;
        let quotas = match &self.inner.quotas {
            Some(q) => q.cleanup(batch, now).await?,
            None => 0,
        };
        let evidence = self.inner.evidence.cleanup(batch, now).await?;
        let delegations = self.inner.directory.cleanup(batch, now).await?;
        let learning_sessions = self.inner.learning.cleanup(now).await?;
        let step = Maintenance {
            visitors,
            quotas,
            evidence,
            delegations,
            learning_sessions,
        };
        crate::telemetry::maintained(&step);
        Ok(step)
    }
}

/// Why [`Janitor::check_key`] refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyCheckError {
    /// The namespace was first used with another secret.
    #[error(
        "the label namespace {namespace:?} on this database was first used with another secret: every \
         instance sharing the database must use the same secret (JANITOR_SECRET) and namespace"
    )]
    Differs {
        /// The namespace.
        namespace: String,
    },
    /// The store could not answer.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Why a cleanup step failed.
#[derive(Debug, thiserror::Error)]
pub enum CleanupError {
    /// The batch size.
    #[error(transparent)]
    Batch(#[from] ConfigError),
    /// A store.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The evidence store.
    #[error(transparent)]
    Evidence(#[from] EvidenceError),
    /// The identity directory.
    #[error(transparent)]
    Directory(#[from] DirectoryError),
    /// The learning store.
    #[error(transparent)]
    Learning(#[from] LearningError),
}

async fn endpoint<S: Stores, E: Evaluator + 'static>(
    State(janitor): State<Janitor<S, E>>,
    request: Request,
) -> Response {
    identify::handle(&janitor.inner, request).await.0
}
