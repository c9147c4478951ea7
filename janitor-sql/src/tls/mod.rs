//! TLS to PostgreSQL through rustls, with libpq's `sslmode` meanings: the connector each mode needs, and plain
//! words for a refused certificate.

mod verify;

use std::sync::Arc;

use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::CertificateDer;
use rustls::{CertificateError, ClientConfig, RootCertStore};
use tokio_postgres_rustls::MakeRustlsConnect;

use crate::config::{RootCerts, SslSettings};
use crate::error::SetupError;

/// The rustls connector for `settings`: it checks what the mode asks and nothing less.
pub(crate) fn connector(settings: &SslSettings) -> Result<MakeRustlsConnect, SetupError> {
    let provider = provider()?;
    let builder = ClientConfig::builder_with_provider(Arc::clone(&provider))
        .with_safe_default_protocol_versions()
        .map_err(|e| SetupError::Tls(format!("TLS versions: {e}")))?;
    let config = if settings.verifies_chain() {
        let (store, certificates) = roots(&settings.roots())?;
        let verifier =
            verify::Verified::new(store, certificates, settings.verifies_host(), provider)?;
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(verifier))
    } else {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(verify::EncryptionOnly::new(provider)))
    }
    .with_no_client_auth();
    Ok(MakeRustlsConnect::new(config))
}

/// What a build that enables two rustls providers must do.
const TWO_PROVIDERS: &str = "the build enables more than one rustls crypto provider: install one with \
                             rustls::crypto::CryptoProvider::install_default() at the start of main";

/// The rustls provider, chosen as rustls asks a library to: the one the application installed for the process
/// (`CryptoProvider::install_default`, say aws-lc-rs for post-quantum key exchange), else the one rustls's
/// features name, which is ring in this crate's own build. A build that enables two providers names none, and
/// rustls panics for it: that becomes a setup error saying what to do.
pub(crate) fn provider() -> Result<Arc<CryptoProvider>, SetupError> {
    // `ClientConfig::builder()` takes the installed provider, or installs the one the features name.
    std::panic::catch_unwind(|| Arc::clone(ClientConfig::builder().crypto_provider()))
        .map_err(|_| SetupError::Tls(TWO_PROVIDERS.into()))
}

/// The trusted certificates, as webpki's anchors and as they were read: a PEM file's, or the system's store.
fn roots(source: &RootCerts) -> Result<(RootCertStore, Vec<CertificateDer<'static>>), SetupError> {
    let certificates = match source {
        RootCerts::File(path) => CertificateDer::pem_file_iter(path)
            .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
            .map_err(|e| SetupError::Tls(format!("sslrootcert {}: {e}", path.display())))?,
        RootCerts::System => rustls_native_certs::load_native_certs().certs,
    };
    let mut store = RootCertStore::empty();
    let (added, _) = store.add_parsable_certificates(certificates.iter().cloned());
    if added == 0 {
        return Err(SetupError::Tls(match source {
            RootCerts::File(path) => format!(
                "sslrootcert {} holds no usable CA certificate",
                path.display()
            ),
            RootCerts::System => "no CA certificates in the system store: install them (Debian: \
                                  ca-certificates) or name a file with sslrootcert"
                .into(),
        }));
    }
    Ok((store, certificates))
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
                CertificateError::NotValidYet | CertificateError::NotValidYetContext { .. } => {
                    "it is not valid yet".to_owned()
                }
                CertificateError::Other(other)
                    if matches!(
                        other.0.downcast_ref::<webpki::Error>(),
                        Some(webpki::Error::CaUsedAsEndEntity)
                    ) =>
                {
                    "it is a CA certificate, which is trusted as the server's own only when sslrootcert holds \
                     that very certificate"
                        .to_owned()
                }
                other => format!("{other:?}"),
            };
            return Some(format!("TLS: the server's certificate was refused: {why}"));
        }
        source = current.source();
    }
    None
}
