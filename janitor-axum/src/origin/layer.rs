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
/// use janitor_axum::config::OriginConfig;
/// use janitor_axum::OriginLayer;
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

#[cfg(test)]
mod tests {
    use axum::body::Body;
    use axum::routing::any;
    use axum::Router;
    use http::{Method, StatusCode};
    use tower::ServiceExt;

    use super::*;

    async fn status(method: Method, headers: &[(&str, &str)]) -> StatusCode {
        let app: Router = Router::new()
            .route("/account", any(|| async { "done" }))
            .layer(OriginLayer::new(OriginConfig::default()));
        let mut request = Request::builder()
            .method(method)
            .uri("/account")
            .header("host", "shop.example");
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let request = request.body(Body::empty()).unwrap();
        app.oneshot(request).await.unwrap().status()
    }

    #[tokio::test]
    async fn state_changing_methods_from_another_site_are_refused_and_safe_ones_pass() {
        let cross = [("origin", "https://attacker.example")];
        for method in [Method::POST, Method::PUT, Method::PATCH, Method::DELETE] {
            assert_eq!(
                status(method.clone(), &cross).await,
                StatusCode::FORBIDDEN,
                "{method}"
            );
            let fetch = [("sec-fetch-site", "cross-site")];
            assert_eq!(
                status(method.clone(), &fetch).await,
                StatusCode::FORBIDDEN,
                "{method}"
            );
            let own = [("origin", "https://shop.example")];
            assert_eq!(
                status(method.clone(), &own).await,
                StatusCode::OK,
                "{method}"
            );
            // No Origin and no Sec-Fetch-Site: not a browser another site could drive.
            assert_eq!(
                status(method.clone(), &[]).await,
                StatusCode::OK,
                "{method}"
            );
            let hosts = [("host", "evil.example")];
            assert_eq!(
                status(method.clone(), &hosts).await,
                StatusCode::BAD_REQUEST,
                "{method}"
            );
        }
        for method in [Method::GET, Method::HEAD, Method::OPTIONS, Method::TRACE] {
            assert_eq!(
                status(method.clone(), &cross).await,
                StatusCode::OK,
                "{method}"
            );
        }
    }
}
