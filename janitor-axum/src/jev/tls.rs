//! TLS to the provider through rustls (the application's crypto provider, else ring): the trusted CAs, the client configuration, and
//! plain words for a handshake that failed.

use std::error::Error;
use std::fmt;
use std::io;
use std::path::PathBuf;
use std::sync::Arc;

use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::CertificateDer;
use rustls::{CertificateError, ClientConfig, RootCertStore};

use super::config::JevConfigError;

/// Which CAs authenticate an `https://` provider.
#[derive(Clone, Default)]
pub(crate) enum Roots {
    /// The operating system's store, read when the configuration is built.
    #[default]
    System,
    /// Only the CA certificates of this PEM text.
    Pem(Vec<u8>),
    /// Only the CA certificates of this PEM file, read when the configuration is built.
    File(PathBuf),
}

impl Roots {
    /// How `Debug` shows the choice: the certificates themselves are of no help in a log.
    pub(crate) fn describe(&self) -> String {
        match self {
            Roots::System => "system store".to_owned(),
            Roots::Pem(_) => "PEM given".to_owned(),
            Roots::File(path) => format!("PEM file {}", path.display()),
        }
    }
}

impl fmt::Debug for Roots {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.describe())
    }
}

/// The client configuration for `roots`. The system's store is read only when `https` asks for TLS, so that a
/// loopback `http://` provider works on a machine without one; given certificates are checked either way.
pub(crate) fn client_config(
    roots: &Roots,
    https: bool,
) -> Result<Arc<ClientConfig>, JevConfigError> {
    let store = match roots {
        Roots::System if https => system_roots()?,
        Roots::System => RootCertStore::empty(),
        Roots::Pem(pem) => given_roots(pem, "the PEM given")?,
        Roots::File(path) => {
            let pem = std::fs::read(path).map_err(|e| {
                JevConfigError::RootCertificates(format!("cannot read {}: {e}", path.display()))
            })?;
            given_roots(&pem, &path.display().to_string())?
        }
    };
    let config = ClientConfig::builder_with_provider(crypto_provider()?)
        .with_safe_default_protocol_versions()
        .map_err(|e| JevConfigError::Tls(e.to_string()))?
        .with_root_certificates(store)
        .with_no_client_auth();
    Ok(Arc::new(config))
}

/// What a build that enables two rustls providers must do.
const TWO_PROVIDERS: &str = "the build enables more than one rustls crypto provider: install one with \
                             rustls::crypto::CryptoProvider::install_default() at the start of main";

/// The rustls provider, as rustls asks a library to choose it: the one the application installed for the
/// process, else the one rustls's features name (ring in this crate's own build). A build with two providers
/// names none, for which rustls panics: that becomes a configuration error saying what to do.
fn crypto_provider() -> Result<Arc<CryptoProvider>, JevConfigError> {
    // `ClientConfig::builder()` takes the installed provider, or installs the one the features name.
    std::panic::catch_unwind(|| Arc::clone(ClientConfig::builder().crypto_provider()))
        .map_err(|_| JevConfigError::Tls(TWO_PROVIDERS.into()))
}

fn system_roots() -> Result<RootCertStore, JevConfigError> {
    let mut store = RootCertStore::empty();
    // Certificates of the store that cannot be read are skipped, as every TLS client does; an empty store is not.
    let found = rustls_native_certs::load_native_certs();
    let (added, _) = store.add_parsable_certificates(found.certs);
    if added == 0 {
        return Err(JevConfigError::RootCertificates(
            "the system's store holds no CA certificate: install them (Debian: ca-certificates) or give the \
             provider's CA with root_certificates_pem or root_certificates_file"
                .into(),
        ));
    }
    Ok(store)
}

/// Every certificate of `pem` as a trust anchor. Unlike the system's store, one that cannot be used is an error:
/// it was named on purpose.
fn given_roots(pem: &[u8], source: &str) -> Result<RootCertStore, JevConfigError> {
    let refused = |why: String| JevConfigError::RootCertificates(format!("{source}: {why}"));
    let certificates = CertificateDer::pem_slice_iter(pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| refused(format!("not valid PEM: {e}")))?;
    if certificates.is_empty() {
        return Err(refused("holds no CERTIFICATE block".into()));
    }
    let mut store = RootCertStore::empty();
    for (index, certificate) in certificates.into_iter().enumerate() {
        store
            .add(certificate)
            .map_err(|e| refused(format!("certificate {} is not a usable CA: {e}", index + 1)))?;
    }
    Ok(store)
}

/// The reason of a failed call, in words an operator can act on: a refused certificate or another TLS failure
/// is named as such; anything else is the provider being unreachable, with the cause the chain ends in.
pub(crate) fn describe_failure(error: &(dyn Error + 'static)) -> String {
    match rustls_error(error) {
        Some(rustls::Error::InvalidCertificate(reason)) => {
            let why = match reason {
                CertificateError::UnknownIssuer => {
                    "it is not signed by a trusted CA (the system's store, or the certificates given with \
                     root_certificates_pem or root_certificates_file)"
                        .to_owned()
                }
                CertificateError::NotValidForName
                | CertificateError::NotValidForNameContext { .. } => {
                    format!("it was not issued for the endpoint's host ({reason})")
                }
                other => other.to_string(),
            };
            format!("the provider's TLS certificate was not trusted: {why}")
        }
        Some(other) => format!("TLS with the provider failed: {other}"),
        None => format!("provider unreachable: {}", innermost(error)),
    }
}

/// The rustls error somewhere in `error`'s chain.
fn rustls_error<'e>(error: &'e (dyn Error + 'static)) -> Option<&'e rustls::Error> {
    let mut next = Some(error);
    while let Some(current) = next {
        if let Some(found) = current.downcast_ref::<rustls::Error>() {
            return Some(found);
        }
        next = inner(current);
    }
    None
}

/// The last error of the chain: the legacy client's own ("client error (Connect)") says nothing of the cause.
fn innermost(error: &(dyn Error + 'static)) -> String {
    let mut last = error;
    while let Some(next) = inner(last) {
        last = next;
    }
    last.to_string()
}

fn inner<'e>(error: &'e (dyn Error + 'static)) -> Option<&'e (dyn Error + 'static)> {
    match error.downcast_ref::<io::Error>() {
        // An I/O error's `source` skips the error it wraps, and the connectors wrap theirs in I/O errors.
        Some(wrapper) => wrapper
            .get_ref()
            .map(|wrapped| wrapped as &(dyn Error + 'static)),
        None => error.source(),
    }
}
