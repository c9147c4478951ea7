//! The checks of a server certificate that is one of the roots, against certificates made here and clocks set
//! by hand.

use std::time::Duration;

use rcgen::{date_time_ymd, BasicConstraints, CertificateParams, DnType, IsCa, KeyPair};

use super::*;

/// A self-signed CA:TRUE certificate with `common_name`, `alt_names`, valid from 2020 to 2030.
fn self_signed(common_name: &str, alt_names: &[&str]) -> CertificateDer<'static> {
    let names = alt_names.iter().map(|n| n.to_string()).collect::<Vec<_>>();
    let mut params = CertificateParams::new(names).unwrap();
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params
        .distinguished_name
        .push(DnType::CommonName, common_name);
    params.not_before = date_time_ymd(2020, 1, 1);
    params.not_after = date_time_ymd(2030, 1, 1);
    let key = KeyPair::generate().unwrap();
    params.self_signed(&key).unwrap().der().clone()
}

fn verifier(root: &CertificateDer<'static>, check_host: bool) -> Verified {
    let mut store = RootCertStore::empty();
    assert_eq!(store.add_parsable_certificates([root.clone()]).0, 1);
    Verified::new(
        store,
        vec![root.clone()],
        check_host,
        super::super::provider().unwrap(),
    )
    .unwrap()
}

/// 2025-01-01, or `days` from it.
fn day(days: i64) -> UnixTime {
    UnixTime::since_unix_epoch(Duration::from_secs((1_735_689_600 + days * 86_400) as u64))
}

fn check(
    verifier: &Verified,
    certificate: &CertificateDer<'_>,
    host: &str,
    now: UnixTime,
) -> Result<ServerCertVerified, rustls::Error> {
    let name = ServerName::try_from(host.to_owned()).unwrap();
    verifier.verify_server_cert(certificate, &[], &name, &[], now)
}

fn refusal(outcome: Result<ServerCertVerified, rustls::Error>) -> CertificateError {
    match outcome {
        Err(rustls::Error::InvalidCertificate(reason)) => reason,
        other => panic!("expected a refused certificate, got {other:?}"),
    }
}

#[test]
fn a_root_as_the_server_certificate_is_checked_for_its_name() {
    for certificate in [
        self_signed("localhost", &["localhost"]),
        self_signed("localhost", &[]),
    ] {
        let full = verifier(&certificate, true);
        check(&full, &certificate, "localhost", day(0)).expect("the right name");
        check(&full, &certificate, "LocalHost", day(0)).expect("names ignore case");
        assert!(matches!(
            refusal(check(&full, &certificate, "db.example.com", day(0))),
            CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. }
        ));
        let chain_only = verifier(&certificate, false);
        check(&chain_only, &certificate, "db.example.com", day(0)).expect("verify-ca");
    }
    let by_address = self_signed("127.0.0.1", &[]);
    check(
        &verifier(&by_address, true),
        &by_address,
        "127.0.0.1",
        day(0),
    )
    .expect("a CN holding the address");
}

#[test]
fn a_common_name_counts_only_without_alt_names() {
    let certificate = self_signed("localhost", &["db.example.com"]);
    let full = verifier(&certificate, true);
    check(&full, &certificate, "db.example.com", day(0)).expect("the alt name");
    refusal(check(&full, &certificate, "localhost", day(0)));
}

#[test]
fn a_root_as_the_server_certificate_is_checked_for_its_dates() {
    let certificate = self_signed("localhost", &["localhost"]);
    for check_host in [true, false] {
        let verifier = verifier(&certificate, check_host);
        assert_eq!(
            refusal(check(&verifier, &certificate, "localhost", day(6 * 366))),
            CertificateError::Expired
        );
        assert_eq!(
            refusal(check(&verifier, &certificate, "localhost", day(-6 * 366))),
            CertificateError::NotValidYet
        );
    }
}

#[test]
fn another_self_signed_certificate_goes_through_webpki_and_is_refused() {
    let trusted = self_signed("localhost", &["localhost"]);
    let other = self_signed("localhost", &["localhost"]);
    for check_host in [true, false] {
        refusal(check(
            &verifier(&trusted, check_host),
            &other,
            "localhost",
            day(0),
        ));
    }
}
