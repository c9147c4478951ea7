//! The short real-time run: the same attempts over HTTP against a server whose sign-in route is the guide's
//! (one `Janitor::sign_in` call, its refusal answers), on the system clock, and through the simulation on a
//! manual clock. Both see the same answers when the simulation models the server faithfully.

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use axum::extract::{Request, State};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use janitor_axum::handle::Clock;
use janitor_axum::{Janitor, MemoryStores, VisitorPayload};
use janitor_test_support::http1::Connection;
use serde::Serialize;
use serde_json::{json, Value};

use super::attack::{self, Scenario};
use super::population::Population;
use super::sim::{Flow, Site};
use super::Defence;

/// Guesses the run makes, from the one-network attack's list.
const GUESSES: usize = 300;

/// The answers both ways, by status, and whether they agree.
#[derive(Debug, Clone, Serialize)]
pub struct Agreement {
    /// Requests made each way.
    pub requests: usize,
    /// Answers over HTTP, by status.
    pub http: BTreeMap<u16, u64>,
    /// Answers in the simulation, by status.
    pub simulated: BTreeMap<u16, u64>,
    /// Whether every request got the same status both ways.
    pub agree: bool,
}

#[derive(Clone)]
struct Route {
    janitor: Janitor,
    population: std::sync::Arc<Population>,
}

/// The guide's sign-in route, on the population's accounts.
async fn login(State(route): State<Route>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, 64 * 1024).await else {
        return (http::StatusCode::PAYLOAD_TOO_LARGE, "").into_response();
    };
    let form: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    let (Some(name), Some(password)) = (form["username"].as_str(), form["password"].as_str())
    else {
        return (http::StatusCode::BAD_REQUEST, "").into_response();
    };
    let payload = VisitorPayload::from_value(&form["visitor"]).ok();
    let right = route
        .population
        .accounts
        .iter()
        .any(|a| a.name == name && a.password == password);
    match route
        .janitor
        .sign_in(&parts, name, payload.as_ref(), async || right)
        .await
    {
        Ok(mut signin) => {
            let refusal = signin.refusal();
            let identified = signin.take_identified();
            let response =
                refusal.unwrap_or_else(|| Json(json!({"signedIn": true})).into_response());
            match identified {
                Some(identified) => (identified, response).into_response(),
                None => response,
            }
        }
        Err(refusal) => refusal.for_route().into_response(),
    }
}

/// Runs the first [`GUESSES`] guesses of the one-network attack, from one client at full speed, against a
/// server and through the simulation, each on fresh memory stores, with the defences on.
pub async fn agreement(population: &Population, seed: u64) -> Agreement {
    let guesses: Vec<_> = attack::plan(Scenario::OneNetwork, population, seed)
        .queue
        .into_iter()
        .take(GUESSES)
        .collect();
    let janitor = Janitor::new(super::config(Defence::On), MemoryStores::new());
    let route = Route {
        janitor,
        population: std::sync::Arc::new(population.clone()),
    };
    let app = Router::new().route("/login", post(login)).with_state(route);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a port");
    let address = listener.local_addr().expect("an address");
    let server = tokio::spawn(async move {
        let service = app.into_make_service_with_connect_info::<SocketAddr>();
        axum::serve(listener, service).await
    });
    let mut over_http = Vec::new();
    let mut connection = Connection::open(address).await.expect("a connection");
    for guess in &guesses {
        let name = &population.accounts[guess.account].name;
        let body = json!({"username": name, "password": guess.password}).to_string();
        let request = format!(
            "POST /login HTTP/1.1\r\nHost: {address}\r\nContent-Type: application/json\r\n\
             Content-Length: {}\r\n\r\n{body}",
            body.len()
        );
        let reply = connection
            .exchange(request.as_bytes())
            .await
            .expect("an answer");
        over_http.push(reply.status());
    }
    server.abort();
    let clock = Clock::manual(population.start_ms);
    let site = Site {
        janitor: Janitor::builder(super::config(Defence::On), MemoryStores::new())
            .clock(clock.clone())
            .build(),
        clock,
        flow: Flow::Defended,
        statements: None,
        events: Default::default(),
    };
    let loopback = IpAddr::V4(Ipv4Addr::LOCALHOST);
    let mut simulated = Vec::new();
    for (i, guess) in guesses.iter().enumerate() {
        site.clock.set(population.start_ms + i as i64);
        let answer = site
            .attempt_status(population, guess.account, &guess.password, loopback)
            .await;
        simulated.push(answer);
    }
    let tally = |statuses: &[u16]| {
        let mut out = BTreeMap::new();
        for s in statuses {
            *out.entry(*s).or_insert(0) += 1;
        }
        out
    };
    Agreement {
        requests: guesses.len(),
        http: tally(&over_http),
        simulated: tally(&simulated),
        agree: over_http == simulated,
    }
}
