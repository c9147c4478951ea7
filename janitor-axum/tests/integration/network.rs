//! Network evidence over a real socket: behind a trusted proxy, the forwarded client address's network keeps
//! two identical browsers apart with the precise policy, and brings the first back when it returns from its
//! own network. Without the option, the same requests hand the second browser the first one's id.

use crate::common;

use common::wire::{post_json_with, serve_with_peers, Connection};
use janitor_axum::config::{MatchingPolicy, OriginConfig};
use janitor_axum::{Janitor, MemoryStores};
use janitor_core::testing::mac_document;

/// One cookieless identification of the fixture browser, forwarded for `client`: its visitor id.
async fn identify_from(address: std::net::SocketAddr, client: &str) -> String {
    identify_with(address, &[("X-Forwarded-For", client)]).await
}

/// One cookieless identification of the fixture browser with `headers`: its visitor id.
async fn identify_with(address: std::net::SocketAddr, headers: &[(&str, &str)]) -> String {
    let body = mac_document().to_string();
    let request = post_json_with("/api/visitor", headers, &body);
    let mut connection = Connection::open(address).await.unwrap();
    let reply = connection.exchange(&request).await.unwrap();
    assert_eq!(reply.status(), 200, "{}", reply.text());
    let answer: serde_json::Value = serde_json::from_str(&reply.text()).unwrap();
    answer["visitorId"].as_str().unwrap().to_owned()
}

async fn served(network_evidence: bool) -> std::net::SocketAddr {
    let config = common::config("network-evidence")
        .matching_policy(MatchingPolicy::Precise)
        .network_evidence(network_evidence)
        .origin(
            OriginConfig::builder()
                .trust_proxy("127.0.0.1")
                .build()
                .unwrap(),
        )
        .build()
        .unwrap();
    serve_with_peers(Janitor::new(config, MemoryStores::new()).router()).await
}

/// An attacker on another network replays the victim's payload through the trusted proxy, which appends the
/// attacker's address to X-Forwarded-For; the headers the attacker adds itself (a Forwarded naming the
/// victim's network, one naming nobody, one without `for`, a byte that is not ASCII) never restore the victim.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn headers_the_client_adds_do_not_choose_its_network() {
    let address = served(true).await;
    let victim = identify_from(address, "198.51.100.7").await;
    let appended = ("X-Forwarded-For", "203.0.113.66");
    assert_ne!(
        identify_with(address, &[appended]).await,
        victim,
        "the plain replay is vetoed"
    );
    let variants: [&[(&str, &str)]; 4] = [
        &[("Forwarded", "for=198.51.100.9"), appended],
        &[("Forwarded", "for=unknown"), appended],
        &[("Forwarded", "proto=https"), appended],
        &[("X-Forwarded-For", "198.51.100.9\u{e9}, 203.0.113.66")],
    ];
    for headers in variants {
        assert_ne!(identify_with(address, headers).await, victim, "{headers:?}");
    }
    assert_eq!(
        identify_from(address, "198.51.100.200").await,
        victim,
        "the victim still comes back"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_network_tells_identical_browsers_apart() {
    let address = served(true).await;
    let first = identify_from(address, "198.51.100.7").await;
    // The same browser from another household: the only candidate was seen only on another network.
    let twin = identify_from(address, "203.0.113.9").await;
    assert_ne!(twin, first, "a lookalike elsewhere is not restored");
    // Back on the first network (another address of its /24): of two lookalikes, only the first was seen there.
    assert_eq!(identify_from(address, "198.51.100.200").await, first);
    assert_eq!(identify_from(address, "203.0.113.50").await, twin);

    let without = served(false).await;
    let first = identify_from(without, "198.51.100.7").await;
    assert_eq!(
        identify_from(without, "203.0.113.9").await,
        first,
        "without the option the payload alone decides"
    );
}
