//! Extended client signals over a real socket: with the option on, two identical browsers whose users set
//! them up differently get two ids and each its own back, a bad header is refused as an invalid payload (on a
//! route of the application it means no extended signals instead) and
//! the signals are stored with the observation; with it off, the same header (even a bad one) is ignored and
//! the payload alone decides. A route of the application reads the header through `identify_parts` too.

use crate::common;

use std::sync::Arc;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use common::wire::{post_json_with, serve_with_peers, Connection};
use janitor_axum::config::MatchingPolicy;
use janitor_axum::{Janitor, MemoryStores, VisitorContext};
use janitor_core::testing::mac_document;
use janitor_core::{Observation, VisitorId, VisitorPayload, VisitorStore};

/// One cookieless identification of the fixture browser with `header` as its extended signals: the status
/// and, on 200, the visitor id.
async fn identify_with(address: std::net::SocketAddr, header: &str) -> (u16, Option<String>) {
    let body = mac_document().to_string();
    let request = post_json_with(
        "/api/visitor",
        &[("Janitor-Extended-Signals", header)],
        &body,
    );
    let mut connection = Connection::open(address).await.unwrap();
    let reply = connection.exchange(&request).await.unwrap();
    let id = (reply.status() == 200).then(|| {
        let answer: serde_json::Value = serde_json::from_str(&reply.text()).unwrap();
        answer["visitorId"].as_str().unwrap().to_owned()
    });
    (reply.status(), id)
}

fn set_up(hour_cycle: &str) -> String {
    let json = format!(
        r#"{{"intl":{{"calendar":"gregory","hourCycle":"{hour_cycle}"}},"preferences":{{"reducedMotion":false}}}}"#
    );
    URL_SAFE_NO_PAD.encode(json)
}

fn janitor(extended_signals: bool) -> Janitor {
    let config = common::config("extended-signals")
        .matching_policy(MatchingPolicy::Precise)
        .extended_signals(extended_signals)
        .build()
        .unwrap();
    Janitor::new(config, MemoryStores::new())
}

async fn served(extended_signals: bool) -> (std::net::SocketAddr, Janitor) {
    let janitor = janitor(extended_signals);
    (serve_with_peers(janitor.router()).await, janitor)
}

/// The observations `janitor` holds for `visitor`, newest first.
async fn stored(janitor: &Janitor, visitor: &str) -> Vec<Arc<Observation>> {
    let visitor = VisitorId::parse(visitor).unwrap();
    let store = janitor.engine().store();
    store
        .recent_observations(&visitor, 5, janitor_core::now_ms())
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn settings_tell_identical_browsers_apart() {
    let (address, janitor) = served(true).await;
    let (status, first) = identify_with(address, &set_up("h12")).await;
    assert_eq!(status, 200);
    let first = first.unwrap();
    let newest = &stored(&janitor, &first).await[0];
    let extended = newest
        .extended
        .as_ref()
        .expect("stored with the observation");
    assert_eq!(extended.hour_cycle.as_deref(), Some("h12"));

    // The same browser set to a 24-hour clock: the only candidate is ruled out.
    let twin = identify_with(address, &set_up("h23")).await.1.unwrap();
    assert_ne!(
        twin, first,
        "a lookalike set up differently is not restored"
    );
    assert_eq!(
        identify_with(address, &set_up("h12")).await.1.unwrap(),
        first
    );
    assert_eq!(
        identify_with(address, &set_up("h23")).await.1.unwrap(),
        twin
    );

    let unlisted = URL_SAFE_NO_PAD.encode(r#"{"intl":{"hourCycle":"h13"}}"#);
    for bad in ["not base64!", &unlisted] {
        assert_eq!(identify_with(address, bad).await, (400, None), "{bad}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_does_not_read_them_ignores_them() {
    let (address, janitor) = served(false).await;
    let (status, first) = identify_with(address, "not base64!").await;
    assert_eq!(status, 200, "ignored, never refused");
    let first = first.unwrap();
    assert_eq!(
        identify_with(address, &set_up("h23")).await.1.unwrap(),
        first,
        "without the option the payload alone decides"
    );
    assert!(stored(&janitor, &first)
        .await
        .iter()
        .all(|o| o.extended.is_none()));
}

#[tokio::test]
async fn a_route_of_the_application_reads_the_header_with_its_form() {
    let janitor = janitor(true);
    let payload = VisitorPayload::from_value(&mac_document()).unwrap();
    let request = |header: &str| {
        let request = http::Request::post("/login").header("janitor-extended-signals", header);
        request.body(()).unwrap().into_parts().0
    };
    let context = VisitorContext::anonymous();
    let identified = janitor
        .identify_parts(&request(&set_up("h23")), &context, Some(&payload))
        .await
        .unwrap()
        .expect("a payload to identify");
    let newest = &stored(&janitor, identified.identity().visitor_id.as_str()).await[0];
    let extended = newest.extended.as_ref().expect("stored from the route");
    assert_eq!(extended.hour_cycle.as_deref(), Some("h23"));
    // A bad header on a route of the application means no extended signals, never a failed form (the
    // endpoint refuses it, above); a fresh browser shows it, with nothing of the header stored.
    let mut other = mac_document();
    other["signals"]["timezone"] = "Asia/Tokyo".into();
    let other = VisitorPayload::from_value(&other).unwrap();
    for bad in [
        "not base64!",
        &URL_SAFE_NO_PAD.encode(r#"{"ip":"1.2.3.4"}"#),
    ] {
        let identified = janitor
            .identify_parts(&request(bad), &context, Some(&other))
            .await
            .expect("a bad header never fails the route")
            .expect("a payload to identify");
        let kept = stored(&janitor, identified.identity().visitor_id.as_str()).await;
        assert!(kept.iter().all(|o| o.extended.is_none()), "{bad}");
    }
}
