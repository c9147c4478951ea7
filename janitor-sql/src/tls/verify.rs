//! The server certificate checks of each `sslmode`, as libpq makes them.
//!
//! A verified mode goes through webpki, with one exception libpq has through OpenSSL: a server certificate that
//! is byte for byte one of the configured roots is trusted as it stands. That is the self-signed certificate the
//! PostgreSQL manual makes (`openssl req -new -x509 ... -subj "/CN=localhost"`), which carries CA:TRUE and which
//! webpki alone refuses as a CA used as an end entity. It still has to be within its validity period, sign the
//! handshake, and (verify-full) name the host. And as libpq, verify-full reads the host name from the CN of a
//! certificate that has no subjectAltName, which webpki never does.

use std::fmt;
use std::net::IpAddr;
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::{verify_server_name, WebPkiServerVerifier};
use rustls::crypto::{verify_tls12_signature, verify_tls13_signature, CryptoProvider};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::server::ParsedCertificate;
use rustls::{CertificateError, DigitallySignedStruct, RootCertStore, SignatureScheme};
use x509_cert::der::oid::ObjectIdentifier;
use x509_cert::der::{Decode, Tag, Tagged};

use crate::error::SetupError;

/// The subjectAltName extension: when a certificate has one, libpq ignores its CN.
const SUBJECT_ALT_NAME: ObjectIdentifier = ObjectIdentifier::new_unwrap("2.5.29.17");
/// The CN attribute of a subject.
const COMMON_NAME: ObjectIdentifier = ObjectIdentifier::new_unwrap("2.5.4.3");

/// `verify-ca`, `verify-full`, and `require` with `sslrootcert`: a chain to a trusted root, or the server's
/// certificate being one of the roots.
#[derive(Debug)]
pub(super) struct Verified {
    webpki: Arc<WebPkiServerVerifier>,
    /// The roots as they were read, to recognise a server certificate that is one of them.
    roots: Vec<CertificateDer<'static>>,
    /// verify-full: the certificate must name the host connected to.
    check_host: bool,
}

impl Verified {
    pub(super) fn new(
        store: RootCertStore,
        roots: Vec<CertificateDer<'static>>,
        check_host: bool,
        provider: Arc<CryptoProvider>,
    ) -> Result<Verified, SetupError> {
        let webpki = WebPkiServerVerifier::builder_with_provider(Arc::new(store), provider)
            .build()
            .map_err(|e| SetupError::Tls(format!("certificate verifier: {e}")))?;
        Ok(Verified {
            webpki,
            roots,
            check_host,
        })
    }

    /// The checks left for a certificate that is itself trusted: its validity period and, in verify-full,
    /// the host name.
    fn trusted_as_it_stands(
        &self,
        certificate: &CertificateDer<'_>,
        server_name: &ServerName<'_>,
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let parsed = x509_cert::Certificate::from_der(certificate.as_ref())
            .map_err(|_| rustls::Error::InvalidCertificate(CertificateError::BadEncoding))?;
        let validity = &parsed.tbs_certificate.validity;
        if now.as_secs() < validity.not_before.to_unix_duration().as_secs() {
            return Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidYet,
            ));
        }
        if now.as_secs() > validity.not_after.to_unix_duration().as_secs() {
            return Err(rustls::Error::InvalidCertificate(CertificateError::Expired));
        }
        if self.check_host {
            let named = verify_server_name(&ParsedCertificate::try_from(certificate)?, server_name);
            // webpki reads only subjectAltName; libpq falls back to the CN when there is none.
            if named.is_err() && !common_name_matches(&parsed, server_name) {
                return named.map(|()| ServerCertVerified::assertion());
            }
        }
        Ok(ServerCertVerified::assertion())
    }
}

impl ServerCertVerifier for Verified {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        if self
            .roots
            .iter()
            .any(|root| root.as_ref() == end_entity.as_ref())
        {
            return self.trusted_as_it_stands(end_entity, server_name, now);
        }
        match self.webpki.verify_server_cert(
            end_entity,
            intermediates,
            server_name,
            ocsp_response,
            now,
        ) {
            // webpki checks the name only once the chain is valid, so a name error means a trusted chain:
            // verify-ca takes it, and verify-full takes the CN of a certificate without subjectAltName, as
            // libpq does, whatever made it trusted.
            Err(
                error @ rustls::Error::InvalidCertificate(
                    CertificateError::NotValidForName
                    | CertificateError::NotValidForNameContext { .. },
                ),
            ) => {
                let by_common_name = || {
                    x509_cert::Certificate::from_der(end_entity.as_ref())
                        .is_ok_and(|parsed| common_name_matches(&parsed, server_name))
                };
                if !self.check_host || by_common_name() {
                    Ok(ServerCertVerified::assertion())
                } else {
                    Err(error)
                }
            }
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.webpki.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.webpki.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.webpki.supported_verify_schemes()
    }
}

/// libpq's fallback for a certificate without subjectAltName: a CN equal to the host name (letters in any
/// case) or to the IP address connected to.
fn common_name_matches(certificate: &x509_cert::Certificate, server_name: &ServerName<'_>) -> bool {
    let tbs = &certificate.tbs_certificate;
    let has_alt_names = tbs
        .extensions
        .iter()
        .flatten()
        .any(|extension| extension.extn_id == SUBJECT_ALT_NAME);
    if has_alt_names {
        return false;
    }
    let mut common_names = tbs
        .subject
        .0
        .iter()
        .flat_map(|rdn| rdn.0.iter())
        .filter(|attribute| attribute.oid == COMMON_NAME)
        .filter(|attribute| {
            matches!(
                attribute.value.tag(),
                Tag::Utf8String | Tag::PrintableString | Tag::Ia5String
            )
        })
        .filter_map(|attribute| std::str::from_utf8(attribute.value.value()).ok());
    match server_name {
        ServerName::DnsName(host) => common_names.any(|cn| cn.eq_ignore_ascii_case(host.as_ref())),
        ServerName::IpAddress(address) => {
            let address = IpAddr::from(*address);
            common_names.any(|cn| cn.parse::<IpAddr>() == Ok(address))
        }
        _ => false,
    }
}

/// `sslmode=prefer` and `require` without a root certificate: the connection is encrypted, and the server is
/// not authenticated (libpq's meaning). The handshake's signatures are still checked.
pub(super) struct EncryptionOnly(Arc<CryptoProvider>);

impl EncryptionOnly {
    pub(super) fn new(provider: Arc<CryptoProvider>) -> EncryptionOnly {
        EncryptionOnly(provider)
    }
}

impl fmt::Debug for EncryptionOnly {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("EncryptionOnly")
    }
}

impl ServerCertVerifier for EncryptionOnly {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

#[cfg(test)]
mod tests;
