//! The handle an application holds: the endpoint, its routes' identification, quotas, origin, cookies,
//! erasure, the key check and maintenance, and the core services it hands out.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::response::Response;
use axum::routing::{any, get};
use axum::Router;
use http::request::Parts;
use janitor_core::automation::Automation;
use janitor_core::directory::Directory;
use janitor_core::erasure::{AccountErasure, ErasureError};
use janitor_core::evidence::Evidence;
use janitor_core::learning::Learning;
use janitor_core::protection::quota::RequestQuotas;
use janitor_core::protection::signin::SignInGuard;
use janitor_core::stores::erased::{
    ErasedDirectoryStore, ErasedEvaluator, ErasedEvidenceStore, ErasedLearningStore,
    ErasedQuotaStore, ErasedVisitorStore,
};
use janitor_core::{Engine, ErasedStores, Identity, VisitorId, VisitorPayload};

use crate::admission::Admission;
use crate::config::JanitorConfig;
use crate::endpoint;
use crate::origin::OriginLayer;
use crate::refusal::Refusal;
use crate::visitor::{ClearVisitorCookie, IdentifiedVisitor, VisitorLayer};
use crate::VisitorContext;

pub use janitor_core::{Clock, Evaluator, KeyCheck, NoEvaluator, StoreError, Stores};

/// The identification engine a handle holds: over any store family, with any evaluator (or none).
pub type JanitorEngine = Engine<Arc<dyn ErasedVisitorStore>, Arc<dyn ErasedEvaluator>>;
/// The evidence service a handle hands out.
pub type JanitorEvidence = Evidence<Arc<dyn ErasedEvidenceStore>>;
/// The identity directory a handle hands out.
pub type JanitorDirectory = Directory<Arc<dyn ErasedDirectoryStore>>;
/// The learning service a handle hands out.
pub type JanitorLearning = Learning<Arc<dyn ErasedLearningStore>>;

/// Janitor for one application: cheap to clone, shared by every route and task, and without type parameters:
/// the store family and the evaluator it was built with are behind it.
///
/// The stores are [`MemoryStores`](janitor_core::MemoryStores) in this process, or `PgStores` of `janitor-sql`
/// (feature `postgres`) shared by every instance on one database. What needs HTTP or spans services is a
/// method here; the core services are handed out as they are ([`evidence`](Self::evidence),
/// [`directory`](Self::directory), [`learning`](Self::learning), [`engine`](Self::engine)), each reading the
/// time from the clock it holds.
#[derive(Clone)]
pub struct Janitor {
    pub(crate) inner: Arc<Inner>,
}

impl std::fmt::Debug for Janitor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Janitor")
            .field("config", &self.inner.config)
            .field("stores", &self.inner.stores.kind())
            .finish_non_exhaustive()
    }
}

pub(crate) struct Inner {
    pub(crate) config: JanitorConfig,
    pub(crate) admission: Admission,
    pub(crate) stores: ErasedStores,
    pub(crate) engine: JanitorEngine,
    pub(crate) quotas: Option<RequestQuotas<Arc<dyn ErasedQuotaStore>>>,
    /// The sign-in defence, over the quota store (`quota_store`).
    pub(crate) signin: SignInGuard,
    pub(crate) quota_store: Arc<dyn ErasedQuotaStore>,
    pub(crate) evidence: JanitorEvidence,
    pub(crate) directory: JanitorDirectory,
    pub(crate) learning: JanitorLearning,
    /// The time of everything the handle does: what its services read, and its own quotas and maintenance.
    pub(crate) clock: Clock,
}

/// What [`Janitor::assess`] gives server code: the answer to send, and the full identity when there is one.
#[derive(Debug)]
pub struct Assessment {
    /// Send this to the browser (it carries the cookie, and only what the configuration exposes).
    pub response: Response,
    /// Confidence, risk, risk status and browser match, for the application's own decisions; `None` when the
    /// request was refused (the response says why).
    pub identity: Option<Identity>,
    /// The automation verdict, when the configuration turns it on and the request was identified.
    pub automation: Option<Automation>,
}

/// Builds a [`Janitor`]: its configuration and stores, and optionally an evaluator and a clock.
///
/// ```
/// use janitor_axum::{Janitor, JanitorConfig, MemoryStores};
/// # fn main() -> Result<(), janitor_axum::SetupError> {
/// use janitor_axum::handle::Clock;
/// let config = JanitorConfig::builder()
///     .secret("a secret of at least thirty-two bytes, never logged")
///     .build()?;
/// // A clock that moves only when told, for a test or a simulation.
/// let clock = Clock::manual(1_700_000_000_000);
/// let janitor = Janitor::builder(config, MemoryStores::new())
///     .clock(clock.clone())
///     .build();
/// assert_eq!(janitor.evidence().clock().now_ms(), 1_700_000_000_000);
/// # let _ = janitor;
/// # Ok(())
/// # }
/// ```
#[must_use = "a builder does nothing until `build` is called"]
pub struct JanitorBuilder {
    config: JanitorConfig,
    stores: ErasedStores,
    evaluator: Option<Arc<dyn ErasedEvaluator>>,
    clock: Clock,
}

impl std::fmt::Debug for JanitorBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JanitorBuilder")
            .field("stores", &self.stores.kind())
            .field("evaluator", &self.evaluator.is_some())
            .finish_non_exhaustive()
    }
}

impl JanitorBuilder {
    /// The engine asks `evaluator` for risk (wrap it in the shared inference budget:
    /// `janitor_core::protection::budget::BudgetedEvaluator` over the stores' budget). Without one the risk
    /// status is `disabled`.
    pub fn evaluator(mut self, evaluator: impl Evaluator + 'static) -> Self {
        self.evaluator = Some(janitor_core::stores::erased::erase_evaluator(evaluator));
        self
    }

    /// The clock of the whole handle (the system's unless set): the endpoint's and the routes' identification
    /// and quotas, maintenance, and the engine, evidence, directory and learning services it hands out. A manual
    /// [`Clock`] lets a test or a simulation move time.
    pub fn clock(mut self, clock: Clock) -> Self {
        self.clock = clock;
        self
    }

    /// The stores this handle will use (for an evaluator that shares them, such as the inference budget).
    pub fn stores(&self) -> &ErasedStores {
        &self.stores
    }

    /// The configuration this handle will use.
    pub fn config(&self) -> &JanitorConfig {
        &self.config
    }

    /// The handle.
    pub fn build(self) -> Janitor {
        let JanitorBuilder {
            config,
            stores,
            evaluator,
            clock,
        } = self;
        crate::telemetry::handle_built(&config, stores.kind());
        let engine = Engine::new(stores.visitors(config.retention), config.engine)
            .with_optional_evaluator(evaluator)
            .with_clock(clock.clone());
        let quotas = config
            .quotas
            .map(|q| RequestQuotas::new(stores.quotas(), config.key.clone(), q));
        let signin = SignInGuard::new(config.key.clone(), config.signin);
        let quota_store = stores.quotas();
        let evidence = Evidence::new(stores.evidence(), config.key.clone(), config.evidence)
            .with_clock(clock.clone());
        let directory =
            Directory::new(stores.directory(), config.key.clone()).with_clock(clock.clone());
        // The configuration refuses shadow mode (which needs a predictor), so collect mode without one always
        // builds.
        let learning = Learning::new(stores.learning(), &config.key, config.learning, None)
            .expect("JanitorConfig admits collect mode only")
            .with_clock(clock.clone());
        let admission = Admission::new(config.admission);
        Janitor {
            inner: Arc::new(Inner {
                config,
                admission,
                stores,
                engine,
                quotas,
                signin,
                quota_store,
                evidence,
                directory,
                learning,
                clock,
            }),
        }
    }
}

impl Janitor {
    /// A handle with deterministic matching only (risk status `disabled`) over `stores`.
    pub fn new(config: JanitorConfig, stores: impl Stores) -> Self {
        Janitor::builder(config, stores).build()
    }

    /// A builder, for an evaluator or a clock of its own.
    pub fn builder(config: JanitorConfig, stores: impl Stores) -> JanitorBuilder {
        JanitorBuilder {
            config,
            stores: ErasedStores::new(stores),
            evaluator: None,
            clock: Clock::system(),
        }
    }

    /// The configuration.
    pub fn config(&self) -> &JanitorConfig {
        &self.inner.config
    }

    /// The identification engine, for server code that identifies a payload itself (no HTTP checks, no
    /// quota).
    pub fn engine(&self) -> &JanitorEngine {
        &self.inner.engine
    }

    /// The evidence service: application events, velocity and device links (see
    /// [docs/evidence.md](https://github.com/janitor-rust/janitor/blob/main/docs/evidence.md)).
    pub fn evidence(&self) -> &JanitorEvidence {
        &self.inner.evidence
    }

    /// The identity directory: verified people and agents, their keys and delegations (see
    /// [docs/identity.md](https://github.com/janitor-rust/janitor/blob/main/docs/identity.md)).
    pub fn directory(&self) -> &JanitorDirectory {
        &self.inner.directory
    }

    /// The learning service (see
    /// [docs/learning.md](https://github.com/janitor-rust/janitor/blob/main/docs/learning.md)): off unless the
    /// configuration enables it.
    pub fn learning(&self) -> &JanitorLearning {
        &self.inner.learning
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

    /// The endpoint's routes, to merge into the application's router before or after its own
    /// `.with_state(...)` (they carry this handle as their state, whatever the application's is).
    ///
    /// The endpoint is at its path (any method; it answers 405 itself), behind this handle's admission layer:
    /// when `max_in_flight_requests` are being measured, the next request is refused with 503 before anything
    /// else happens. The browser client is served at the script path (GET and HEAD), and its extended
    /// signals' part beside it (`janitor-extended.js`), outside the admission layer: a static file must load
    /// even while measurements are busy.
    pub fn router<S: Clone + Send + Sync + 'static>(&self) -> Router<S> {
        use crate::script;
        let script_path = self.inner.config.endpoint.script_path();
        Router::new()
            .route(
                self.inner.config.endpoint.path(),
                any(endpoint).layer(self.inner.admission.layer()),
            )
            .route(
                self.inner.config.endpoint.script_path(),
                get(crate::script::serve),
            )
            .route(
                &script::part_path(script_path, script::EXTENDED_SCRIPT_NAME),
                get(script::serve_extended),
            )
            .route(
                &script::part_path(script_path, script::AUTOMATION_SCRIPT_NAME),
                get(script::serve_automation),
            )
            .with_state(self.clone())
    }

    /// Runs the endpoint on `request` and gives the full identity to server code along with the response to
    /// send, so the application can decide on a challenge without exposing scores to the browser.
    pub async fn assess(&self, request: Request) -> Assessment {
        let (response, identified) = endpoint::handle(&self.inner, request).await;
        let (identity, automation) = match identified.map(IdentifiedVisitor::into_assessed) {
            Some((identity, automation)) => (Some(identity), automation),
            None => (None, None),
        };
        Assessment {
            response,
            identity,
            automation,
        }
    }

    /// Claims the quotas of a request made in `context` on a route of the application (a sign-in keyed by
    /// the account being signed into, say): the global counter, the network's of the client of `parts` when
    /// that counter is on, then the account's and the session's when `context` names them. Nothing else is
    /// checked (see [`check_origin`](Self::check_origin)); a refusal is [`Refusal::RateLimited`] (429 with
    /// `Retry-After`) or [`Refusal::Unavailable`] (503). A sign-in uses [`sign_in`](Self::sign_in), which
    /// claims these and its own counters in one step.
    pub async fn claim_quota(
        &self,
        parts: &Parts,
        context: &VisitorContext,
    ) -> Result<(), Refusal> {
        endpoint::claim_quota(&self.inner, parts, context)
            .await
            .inspect_err(|refusal| crate::telemetry::refused(*refusal))
    }

    /// On a route of the application: claims the quotas of `context` whether or not the request carries a
    /// payload (a client that leaves the payload out is counted all the same), then identifies `payload`, when
    /// there is one, with the request's `__visitor` cookie. `Ok(None)` means the quotas had room and there
    /// was nothing to identify. The [`IdentifiedVisitor`] holds the private identity and, as response parts, the
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
    ) -> Result<Option<IdentifiedVisitor>, Refusal> {
        endpoint::identify_parts(&self.inner, parts, context, payload).await
    }

    /// The engine on `payload` with the cookie (and, with network evidence, the client address; with extended
    /// signals, their header) of `parts`, without the quota claim (the visitor layer made it first).
    pub(crate) async fn identify_visitor(
        &self,
        parts: &http::request::Parts,
        payload: &VisitorPayload,
    ) -> Result<IdentifiedVisitor, Refusal> {
        endpoint::identify_visitor(&self.inner, parts, payload, endpoint::Route::Application)
            .await
            .inspect_err(|refusal| crate::telemetry::refused(*refusal))
    }

    /// A layer for the application's routes that claims each request's quotas and identifies the `visitor`
    /// field of their JSON bodies before the handler runs (see [`VisitorLayer`]); handlers read a
    /// [`Visitor`](crate::Visitor).
    pub fn visitor_layer(&self) -> VisitorLayer {
        VisitorLayer::new(self.clone())
    }

    /// The endpoint's origin policy (`Origin`, `Sec-Fetch-Site`, forwarded headers from trusted proxies, one
    /// `Host`) as a layer for the application's own state-changing routes.
    pub fn origin_layer(&self) -> OriginLayer {
        OriginLayer::new(self.inner.config.origin.clone())
    }

    /// The endpoint's origin policy on one request: [`Refusal::CrossOrigin`] (403) for a request another
    /// site's page sent, [`Refusal::AmbiguousHost`] (400) for more than one `Host`.
    pub fn check_origin(&self, parts: &Parts) -> Result<(), Refusal> {
        crate::origin::check(parts, &self.inner.config.origin).map(|_| ())
    }

    /// The visitor named by the request's `__visitor` cookie, when exactly one well-formed cookie names one.
    pub fn visitor_cookie(&self, headers: &http::HeaderMap) -> Option<VisitorId> {
        endpoint::cookie::visitor(headers)
    }

    /// Response parts that make the browser forget its `__visitor` cookie (after erasure, say), with the
    /// attributes the cookie was set with.
    pub fn clear_visitor_cookie(&self) -> ClearVisitorCookie {
        ClearVisitorCookie::new(self.inner.config.cookie.secure())
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

    /// Erases a browser: its visitor row, observations, device links and the events naming it that name no
    /// account. Events about accounts are kept without it, so erasing a browser never resets an account's
    /// lockout. Returns whether the visitor existed. The application must authorize erasure and should not
    /// re-identify the browser automatically afterwards. To erase an account (with or without its browser),
    /// call [`erase_account`](Self::erase_account).
    pub async fn erase_visitor(&self, visitor: &VisitorId) -> Result<bool, StoreError> {
        // The family's erasure, not the visitor store's delete: on PostgreSQL the visitor row's foreign keys
        // would cascade to other accounts' events.
        self.inner.stores.erase_visitor(visitor).await
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

async fn endpoint(State(janitor): State<Janitor>, request: Request) -> Response {
    endpoint::handle(&janitor.inner, request).await.0
}
