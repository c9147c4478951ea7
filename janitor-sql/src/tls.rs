//! TLS to PostgreSQL through rustls, with libpq's `sslmode` meanings: the connector each mode needs, and plain
//! words for a refused certificate.

use std::fmt;
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::{verify_tls12_signature, verify_tls13_signature, CryptoProvider};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{
    CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme,
};
use tokio_postgres_rustls::MakeRustlsConnect;

use crate::config::{RootCerts, SslSettings};
use crate::error::SetupError;

/// The rustls connector for `settings`: it checks what the mode asks and nothing less.
pub(crate) fn connector(settings: &SslSettings) -> Result<MakeRustlsConnect, SetupError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ClientConfig::builder_with_provider(Arc::clone(&provider))
        .with_safe_default_protocol_versions()
        .map_err(|e| SetupError::Tls(format!("TLS versions: {e}")))?;
    let config = if settings.verifies_chain() {
        let roots = Arc::new(roots(&settings.roots())?);
        let webpki = WebPkiServerVerifier::builder_with_provider(roots, provider)
            .build()
            .map_err(|e| SetupError::Tls(format!("certificate verifier: {e}")))?;
        if settings.verifies_host() {
            builder.with_webpki_verifier(webpki)
        } else {
            builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(ChainOnly(webpki)))
        }
    } else {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(EncryptionOnly(provider)))
    }
    .with_no_client_auth();
    Ok(MakeRustlsConnect::new(config))
}

/// The trusted CAs: a PEM file's certificates, or the system's store.
fn roots(source: &RootCerts) -> Result<RootCertStore, SetupError> {
    let mut store = RootCertStore::empty();
    match source {
        RootCerts::File(path) => {
            let certificates = CertificateDer::pem_file_iter(path)
                .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
                .map_err(|e| SetupError::Tls(format!("sslrootcert {}: {e}", path.display())))?;
            let (added, _) = store.add_parsable_certificates(certificates);
            if added == 0 {
                return Err(SetupError::Tls(format!(
                    "sslrootcert {} holds no usable CA certificate",
                    path.display()
                )));
            }
        }
        RootCerts::System => {
            let found = rustls_native_certs::load_native_certs();
            let (added, _) = store.add_parsable_certificates(found.certs);
            if added == 0 {
                return Err(SetupError::Tls(
                    "no CA certificates in the system store: install them (Debian: ca-certificates) or name a \
                     file with sslrootcert"
                        .into(),
                ));
            }
        }
    }
    Ok(store)
}

/// `sslmode=verify-ca`: the chain must lead to a trusted CA; the name on the certificate is not checked.
#[derive(Debug)]
struct ChainOnly(Arc<WebPkiServerVerifier>);

impl ServerCertVerifier for ChainOnly {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        // webpki checks the name only once the chain is valid, so a name error means a trusted chain.
        match self
            .0
            .verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
        {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

/// `sslmode=prefer` and `require` without a root certificate: the connection is encrypted, and the server is
/// not authenticated (libpq's meaning). The handshake's signatures are still checked.
struct EncryptionOnly(Arc<CryptoProvider>);

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

/// A plain account of a refused certificate, when `error` comes from one.
pub(crate) fn refused_certificate(error: &(dyn std::error::Error + 'static)) -> Option<String> {
    let mut source = Some(error);
    while let Some(mut current) = source {
        // An I/O error hides the error it wraps from `source`: look inside it.
        if let Some(inner) = current
            .downcast_ref::<std::io::Error>()
            .and_then(|io| io.get_ref())
        {
            current = inner;
        }
        if let Some(rustls::Error::InvalidCertificate(reason)) =
            current.downcast_ref::<rustls::Error>()
        {
            let why = match reason {
                CertificateError::UnknownIssuer => {
                    "it is not signed by a CA this client trusts (check sslrootcert)".to_owned()
                }
                CertificateError::NotValidForName
                | CertificateError::NotValidForNameContext { .. } => {
                    "it was not issued for the host connected to (sslmode=verify-full)".to_owned()
                }
                CertificateError::Expired | CertificateError::ExpiredContext { .. } => {
                    "it has expired".to_owned()
                }
                other => format!("{other:?}"),
            };
            return Some(format!("TLS: the server's certificate was refused: {why}"));
        }
        source = current.source();
    }
    None
}
