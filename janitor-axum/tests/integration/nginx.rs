//! The reverse-proxy block of docs/deploying.md, run in Debian's nginx (installed by `cargo xtask test`) in
//! front of the sign-in example with network evidence on: the block is read out of the page, so the page
//! cannot drift from what is tested. Through it, a client's spoofed `X-Forwarded-For` and `Forwarded` never
//! reach the network digest, a same-site sign-in passes the origin policy (a cross-site one does not), and
//! `/metrics` is not served to the public.

use crate::common;
use crate::login_example as app;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::routing::get;
use common::wire::{serve_with_peers, Connection};
use janitor_axum::config::{MatchingPolicy, OriginConfig};
use janitor_axum::{Janitor, MemoryStores};
use janitor_core::identification::network::NetworkDigest;
use janitor_core::label::LabelKey;
use janitor_core::testing::mac_document;
use janitor_core::{Observation, VisitorId, VisitorStore};
use janitor_test_support::ports::free_span;
use janitor_test_support::tied::{self, Stop, Tied};
use serde_json::{json, Value};

const NGINX: &str = "/usr/sbin/nginx";
const PASSWORD: &str = "correct horse battery staple";
/// What the documented block proxies to, replaced by the test application's address.
const DOCUMENTED_UPSTREAM: &str = "127.0.0.1:3000";
/// The documented listener, replaced by a loopback port without TLS.
const DOCUMENTED_LISTEN: &str = "listen 443 ssl;";
/// The address nginx connects to the application from (`proxy_bind`): a loopback address in another /24 than
/// the client's (127.0.0.1), so that the proxy's network and the client's differ as on any real network.
const PROXY: &str = "127.0.1.2";

/// The ```nginx block of docs/deploying.md that proxies the whole application.
fn documented_block() -> String {
    let page = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/deploying.md");
    let text = std::fs::read_to_string(&page).unwrap_or_else(|e| panic!("{}: {e}", page.display()));
    let mut blocks = text.split("```nginx\n").skip(1);
    let block = blocks
        .find_map(|rest| {
            let block = rest.split("```").next()?;
            block.contains("location / {").then(|| block.to_owned())
        })
        .expect("docs/deploying.md has an nginx block with `location / {`");
    assert!(block.contains(DOCUMENTED_LISTEN) && block.contains(DOCUMENTED_UPSTREAM));
    block
}

/// nginx in the foreground, one process, everything under `dir`; stopped with the test process however it ends.
struct Nginx {
    address: SocketAddr,
    _server: Tied,
    _dir: Scratch,
}

struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

impl Nginx {
    fn start(upstream: SocketAddr) -> Nginx {
        assert!(
            Path::new(NGINX).is_file(),
            "{NGINX} is missing: install Debian's nginx (`cargo xtask test` does)"
        );
        let dir = std::env::temp_dir().join(format!("janitor-nginx-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let dir = Scratch(dir);
        // Another process may take a free port first: nginx then exits, and the next span is tried.
        for _ in 0..5 {
            let port = free_span(1).unwrap();
            let address = SocketAddr::from(([127, 0, 0, 1], port));
            let server = block_in(&dir.0, address, upstream);
            if let Some(server) = server {
                return Nginx {
                    address,
                    _server: server,
                    _dir: dir,
                };
            }
        }
        let log = std::fs::read_to_string(dir.0.join("nginx.log")).unwrap_or_default();
        panic!("nginx did not start:\n{log}");
    }
}

/// nginx serving the documented block on `address` in front of `upstream`, once it accepts connections.
fn block_in(dir: &Path, address: SocketAddr, upstream: SocketAddr) -> Option<Tied> {
    let block = documented_block()
        .replace(DOCUMENTED_LISTEN, &format!("listen {address};"))
        .replace(DOCUMENTED_UPSTREAM, &upstream.to_string());
    let d = dir.display();
    let config = format!(
        "daemon off;\nmaster_process off;\npid {d}/nginx.pid;\nerror_log {d}/error.log;\n\
         events {{ worker_connections 64; }}\n\
         http {{\n  access_log off;\n  proxy_bind {PROXY};\n  client_body_temp_path {d}/body;\n  proxy_temp_path {d}/proxy;\n  \
         fastcgi_temp_path {d}/fastcgi;\n  uwsgi_temp_path {d}/uwsgi;\n  scgi_temp_path {d}/scgi;\n{block}}}\n"
    );
    let file = dir.join("nginx.conf");
    std::fs::write(&file, config).unwrap();
    let mut command = tied::command(
        &[],
        &dir.join("nginx.log"),
        Stop::Terminate,
        Path::new(NGINX),
    );
    command
        .arg("-p")
        .arg(dir)
        .arg("-c")
        .arg(&file)
        .args(["-e", "stderr"]);
    let mut server = tied::spawn(command).unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::net::TcpStream::connect(address).is_err() {
        if server.exited().is_some() || Instant::now() > deadline {
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Some(server)
}

/// The sign-in example with network evidence, trusting the proxy on loopback, and a `/metrics` route.
async fn application() -> (Janitor, SocketAddr) {
    let config = common::config("nginx-snippet")
        .matching_policy(MatchingPolicy::Precise)
        .network_evidence(true)
        .origin(OriginConfig::builder().trust_proxy(PROXY).build().unwrap())
        .build()
        .unwrap();
    let janitor = Janitor::new(config, MemoryStores::new());
    let accounts = app::Accounts::with(&[("ada", PASSWORD)]);
    let routes = app::routes(janitor.clone(), accounts)
        .merge(janitor.router())
        .route(
            "/metrics",
            get(|| async { "janitor_identifications_total 1" }),
        );
    let address = serve_with_peers(routes).await;
    (janitor, address)
}

/// One request to `proxy` as a browser on its page sends it: `Host` with the port, then `headers`.
async fn request(
    proxy: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (u16, Value) {
    let mut text =
        format!("{method} {path} HTTP/1.1\r\nHost: {proxy}\r\nContent-Type: application/json\r\n");
    for (name, value) in headers {
        text.push_str(&format!("{name}: {value}\r\n"));
    }
    text.push_str(&format!(
        "Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    ));
    let mut connection = Connection::open(proxy).await.unwrap();
    let reply = connection.exchange(text.as_bytes()).await.unwrap();
    (
        reply.status(),
        serde_json::from_str(&reply.text()).unwrap_or(Value::Null),
    )
}

/// The network digest stored with `visitor`'s newest observation.
async fn stored_network(janitor: &Janitor, visitor: &Value) -> Option<String> {
    let visitor = VisitorId::parse(visitor.as_str().unwrap()).unwrap();
    let store = janitor.engine().store();
    let history: Vec<Arc<Observation>> = store
        .recent_observations(&visitor, 5, janitor_core::now_ms())
        .await
        .unwrap();
    history[0].network.as_ref().map(|n| n.as_str().to_owned())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_documented_block_keeps_spoofed_addresses_out_and_sign_ins_in() {
    let (janitor, upstream) = application().await;
    let nginx = Nginx::start(upstream);
    let proxy = nginx.address;
    let payload = mac_document().to_string();

    // The proxy's view of this client (127.0.0.1), without and with the client's own claims.
    let digest = |address: &str| {
        let key = LabelKey::new(common::SECRET, "nginx-snippet").unwrap();
        Some(
            NetworkDigest::of(&key, address.parse().unwrap())
                .as_str()
                .to_owned(),
        )
    };
    let (status, plain) = request(proxy, "POST", "/api/visitor", &[], &payload).await;
    assert_eq!(status, 200, "{plain}");
    assert_eq!(
        stored_network(&janitor, &plain["visitorId"]).await,
        digest("127.0.0.1")
    );
    let spoofed_headers = [
        ("X-Forwarded-For", "198.51.100.7"),
        ("Forwarded", "for=198.51.100.7"),
    ];
    let (status, spoofed) =
        request(proxy, "POST", "/api/visitor", &spoofed_headers, &payload).await;
    assert_eq!(status, 200, "{spoofed}");
    let network = stored_network(&janitor, &spoofed["visitorId"]).await;
    assert_eq!(
        network,
        digest("127.0.0.1"),
        "the client's claims never reach the digest"
    );
    assert_ne!(network, digest("198.51.100.7"));

    // A sign-in from the site's own page passes the origin policy through the proxy; another site's does not.
    let form =
        json!({"username": "ada", "password": PASSWORD, "visitor": mac_document()}).to_string();
    let own = format!("http://{proxy}");
    let same_site = [("Origin", own.as_str()), ("Sec-Fetch-Site", "same-origin")];
    let (status, answer) = request(proxy, "POST", "/login", &same_site, &form).await;
    assert_eq!(
        (status, &answer["signedIn"]),
        (200, &json!(true)),
        "{answer}"
    );
    let cross_site = [
        ("Origin", "https://attacker.example"),
        ("Sec-Fetch-Site", "cross-site"),
    ];
    assert_eq!(
        request(proxy, "POST", "/login", &cross_site, &form).await.0,
        403
    );

    // The metrics stay internal.
    assert_eq!(request(proxy, "GET", "/metrics", &[], "").await.0, 404);
    assert_eq!(request(upstream, "GET", "/metrics", &[], "").await.0, 200);
}
