//! A real server on a loopback socket, the wire-level client of `janitor_test_support::http1`, and bounded waits,
//! so the tests see exactly what goes over the wire (status, headers, whether the connection stays open) and
//! fail rather than hang.

use std::future::Future;
use std::net::SocketAddr;
use std::time::Duration;

use axum::Router;
use janitor_axum::admission::{Admission, AdmissionConfig};
pub use janitor_test_support::http1::{
    get, post_json_with, post_with_length, Connection, Head, Reply,
};
use tokio::net::TcpListener;
use tokio::time::{timeout, Instant};

/// How long any single wire operation may take before the test fails instead of hanging.
pub const WIRE_TIMEOUT: Duration = Duration::from_secs(20);

/// How long a test waits for the server to reach a state (a slot freed, a handler reached, a close).
pub const SETTLE: Duration = Duration::from_secs(10);

/// An admission layer with `limit` slots.
pub fn admission_with(limit: usize) -> Admission {
    Admission::new(
        AdmissionConfig::builder()
            .max_in_flight_requests(limit)
            .build()
            .unwrap(),
    )
}

/// The driver the tests serve with: `JANITOR_SERVE_DRIVER` (`pooled`, the default, or `hyper`), so that the
/// same tests run against either.
#[cfg(feature = "serve")]
#[allow(dead_code)]
pub fn driver() -> janitor_axum::serve::Driver {
    let env = janitor_core::config::EnvSource::process();
    janitor_axum::serve::ServeConfig::from_env(&env)
        .expect("JANITOR_SERVE_DRIVER is pooled or hyper")
        .driver()
}

/// Serves `router` on 127.0.0.1 and an ephemeral port: with the production entry point
/// (`janitor_axum::serve`, default limits, the driver of [`driver`]) when it is built, else `axum::serve`.
pub async fn serve(router: Router) -> SocketAddr {
    #[cfg(feature = "serve")]
    return serve_on(router, driver()).await;
    #[cfg(not(feature = "serve"))]
    {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
        address
    }
}

/// Serves `router` on 127.0.0.1 and an ephemeral port with the production entry point, default limits and
/// `driver`: for the tests that run on both drivers whatever `JANITOR_SERVE_DRIVER` says.
#[cfg(feature = "serve")]
#[allow(dead_code)]
pub async fn serve_on(router: Router, driver: janitor_axum::serve::Driver) -> SocketAddr {
    use janitor_axum::serve::ServeConfig;
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let config = ServeConfig::builder().driver(driver).build().unwrap();
    let stop = std::future::pending();
    tokio::spawn(async move {
        janitor_axum::serve::serve(listener, router, config, stop)
            .await
            .unwrap()
    });
    address
}

/// Serves `router` like [`serve`], with each request's peer address (`ConnectInfo<SocketAddr>`), as an
/// application behind trusted proxies must (the production entry point always gives it).
pub async fn serve_with_peers(router: Router) -> SocketAddr {
    #[cfg(feature = "serve")]
    return serve(router).await;
    #[cfg(not(feature = "serve"))]
    {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let service = router.into_make_service_with_connect_info::<SocketAddr>();
        tokio::spawn(async move { axum::serve(listener, service).await.unwrap() });
        address
    }
}

/// Polls `condition` until it holds, failing the test after `within`.
pub async fn wait_until(what: &str, within: Duration, condition: impl Fn() -> bool) {
    let deadline = Instant::now() + within;
    while !condition() {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Waits until every slot of `admission` is free again.
pub async fn wait_until_free(admission: &Admission) {
    wait_until("every slot is free", SETTLE, || admission.in_flight() == 0).await;
}

/// Awaits `future`, failing the test instead of hanging when it takes too long.
pub async fn within<T>(what: &str, future: impl Future<Output = T>) -> T {
    match timeout(WIRE_TIMEOUT, future).await {
        Ok(value) => value,
        Err(_) => panic!("timed out: {what}"),
    }
}
