//! The browser client through the real router: its headers, conditional requests, a configured path, and that
//! it loads while every measurement slot is taken.

use axum::body::Body;
use axum::extract::Request;
use axum::response::Response;
use http::StatusCode;
use http_body_util::BodyExt;
use janitor_axum::config::{AdmissionConfig, EndpointConfig, JanitorConfigBuilder};
use janitor_axum::script::{client_script_etag, CLIENT_SCRIPT};
use janitor_axum::{Janitor, MemoryStores};
use tower::ServiceExt;

use crate::common;

fn janitor(config: JanitorConfigBuilder) -> Janitor {
    Janitor::new(config.build().unwrap(), MemoryStores::new())
}

fn get(path: &str) -> http::request::Builder {
    Request::builder()
        .method("GET")
        .uri(path)
        .header("host", "example.com")
}

async fn body(response: Response) -> Vec<u8> {
    response
        .into_body()
        .collect()
        .await
        .unwrap()
        .to_bytes()
        .to_vec()
}

fn assert_script_headers(response: &Response) {
    let h = response.headers();
    assert_eq!(h["content-type"], "text/javascript; charset=utf-8");
    assert_eq!(h["cache-control"], "public, max-age=3600");
    assert_eq!(h["x-content-type-options"], "nosniff");
    assert_eq!(h["etag"], client_script_etag());
    assert!(!h["etag"].to_str().unwrap().starts_with("W/"), "strong");
}

#[tokio::test]
async fn served_with_its_headers() {
    let janitor = janitor(common::config("script-tests"));
    let response = janitor
        .router()
        .oneshot(get("/janitor.js").body(Body::empty()).unwrap())
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_script_headers(&response);
    assert_eq!(body(response).await, CLIENT_SCRIPT.as_bytes());

    let head = get("/janitor.js")
        .method("HEAD")
        .body(Body::empty())
        .unwrap();
    let response = janitor.router().oneshot(head).await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_script_headers(&response);
    assert!(body(response).await.is_empty());

    let post = get("/janitor.js")
        .method("POST")
        .body(Body::empty())
        .unwrap();
    let response = janitor.router().oneshot(post).await.unwrap();
    assert_eq!(response.status(), StatusCode::METHOD_NOT_ALLOWED);
}

#[tokio::test]
async fn not_modified_for_the_current_etag_only() {
    let janitor = janitor(common::config("script-tests"));
    for (tag, status) in [
        (client_script_etag().to_owned(), StatusCode::NOT_MODIFIED),
        (
            format!("\"stale\", {}", client_script_etag()),
            StatusCode::NOT_MODIFIED,
        ),
        ("*".to_owned(), StatusCode::NOT_MODIFIED),
        ("\"stale\"".to_owned(), StatusCode::OK),
    ] {
        let request = get("/janitor.js")
            .header("if-none-match", &tag)
            .body(Body::empty())
            .unwrap();
        let response = janitor.router().oneshot(request).await.unwrap();
        assert_eq!(response.status(), status, "{tag}");
        assert_script_headers(&response);
        let bytes = body(response).await;
        if status == StatusCode::NOT_MODIFIED {
            assert!(bytes.is_empty(), "{tag}");
        } else {
            assert_eq!(bytes, CLIENT_SCRIPT.as_bytes());
        }
    }
}

#[tokio::test]
async fn configured_path() {
    let janitor = janitor(
        common::config("script-tests").endpoint(
            EndpointConfig::builder()
                .script_path("/assets/visitor.js")
                .build()
                .unwrap(),
        ),
    );
    let response = janitor
        .router()
        .oneshot(get("/assets/visitor.js").body(Body::empty()).unwrap())
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_script_headers(&response);
    let response = janitor
        .router()
        .oneshot(get("/janitor.js").body(Body::empty()).unwrap())
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn loads_while_measurements_are_busy() {
    let janitor = janitor(
        common::config("script-tests").admission(
            AdmissionConfig::builder()
                .max_in_flight_requests(1)
                .build()
                .unwrap(),
        ),
    );
    let _slot = janitor.admission().try_admit().unwrap();
    let measure = Request::builder()
        .method("POST")
        .uri("/api/visitor")
        .header("host", "example.com")
        .header("content-type", "application/json")
        .body(Body::from(r#"{"signals":{}}"#))
        .unwrap();
    let busy = janitor.router().oneshot(measure).await.unwrap();
    assert_eq!(busy.status(), StatusCode::SERVICE_UNAVAILABLE);
    let script = janitor
        .router()
        .oneshot(get("/janitor.js").body(Body::empty()).unwrap())
        .await
        .unwrap();
    assert_eq!(script.status(), StatusCode::OK);
}

/// The client's size as the README states it: `gzip -9` of the file, within 2 % of the figure there (another
/// gzip may differ by a few bytes), and at most 4 KiB, which the extended signals' part no longer weighs on.
#[test]
fn the_readme_states_the_clients_gzipped_size() {
    let mut gzip = std::process::Command::new("gzip")
        .args(["-9", "-n", "-c"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("gzip");
    std::io::Write::write_all(&mut gzip.stdin.take().unwrap(), CLIENT_SCRIPT.as_bytes()).unwrap();
    let measured = gzip.wait_with_output().unwrap().stdout.len();
    assert!(
        measured <= 4_096,
        "the default client is {measured} bytes gzipped"
    );
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../README.md")).unwrap();
    let stated = readme
        .split(" bytes gzipped")
        .next()
        .and_then(|before| before.split_whitespace().last())
        .map(|n| {
            n.replace(',', "")
                .parse::<usize>()
                .expect("a number before \"bytes gzipped\"")
        })
        .expect("the README states the client's size");
    let off = stated.abs_diff(measured) as f64 / measured as f64;
    assert!(
        off <= 0.02,
        "the README says {stated} bytes gzipped, gzip -9 gives {measured}"
    );
}

#[tokio::test]
async fn the_extended_part_is_served_beside_the_client() {
    let handle = janitor(common::config("script-tests"));
    let response = handle
        .router()
        .oneshot(get("/janitor-extended.js").body(Body::empty()).unwrap())
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(
        response.headers()["content-type"],
        "text/javascript; charset=utf-8"
    );
    let served = body(response).await;
    assert!(String::from_utf8(served)
        .unwrap()
        .contains("janitor-extended-signals"));
    let moved = common::config("script-tests").endpoint(
        EndpointConfig::builder()
            .script_path("/static/client.js")
            .build()
            .unwrap(),
    );
    let response = janitor(moved)
        .router()
        .oneshot(
            get("/static/janitor-extended.js")
                .body(Body::empty())
                .unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
}
