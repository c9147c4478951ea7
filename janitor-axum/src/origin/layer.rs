//! The layer that refuses cross-site requests to the application's state-changing routes.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::extract::Request;
use axum::response::{IntoResponse, Response};
use tower::{Layer, Service};

use crate::config::OriginConfig;

/// Wraps routes in an [`OriginService`]. Made by [`Janitor::origin_layer`](crate::Janitor::origin_layer),
/// or from an [`OriginConfig`] of its own.
///
/// ```
/// use axum::{routing::post, Router};
/// use janitor_axum::{OriginConfig, OriginLayer};
///
/// let origin = OriginConfig::builder().allow_origin("https://shop.example").build().unwrap();
/// let app: Router = Router::new()
///     .route("/login", post(|| async { "signed in" }))
///     .layer(OriginLayer::new(origin));
/// ```
#[derive(Debug, Clone)]
pub struct OriginLayer {
    config: Arc<OriginConfig>,
}

impl OriginLayer {
    /// A layer applying `config`: its allowed origins and trusted proxies.
    pub fn new(config: OriginConfig) -> Self {
        OriginLayer {
            config: Arc::new(config),
        }
    }
}

impl<I> Layer<I> for OriginLayer {
    type Service = OriginService<I>;

    fn layer(&self, inner: I) -> Self::Service {
        OriginService {
            inner,
            config: Arc::clone(&self.config),
        }
    }
}

/// Answers a state-changing request (any method but `GET`, `HEAD`, `OPTIONS` and `TRACE`) that another site's
/// page sent with 403, and one with more than one `Host` with 400, before the inner service sees it; every
/// other request goes on unchanged. The refusal's body is a route's text
/// ([`Refusal::for_route`](crate::Refusal::for_route)).
#[derive(Debug, Clone)]
pub struct OriginService<I> {
    inner: I,
    config: Arc<OriginConfig>,
}

impl<I> Service<Request> for OriginService<I>
where
    I: Service<Request, Response = Response> + Clone + Send + 'static,
    I::Future: Send,
{
    type Response = Response;
    type Error = I::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Response, I::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request) -> Self::Future {
        if !super::is_safe(request.method()) {
            let (parts, body) = request.into_parts();
            if let Err(refusal) = super::check(&parts, &self.config) {
                crate::telemetry::refused(refusal);
                return Box::pin(async move { Ok(refusal.for_route().into_response()) });
            }
            return Box::pin(self.inner.call(Request::from_parts(parts, body)));
        }
        Box::pin(self.inner.call(request))
    }
}
