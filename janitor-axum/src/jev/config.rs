//! The provider's endpoint, key, model and deadline, checked once when built.

use std::fmt;
use std::net::IpAddr;
use std::ops::RangeInclusive;
use std::path::PathBuf;
use std::sync::Arc;

use http::uri::Scheme;
use http::{HeaderValue, Uri};
use janitor_core::config::{check, ConfigError, EnvError, Limit};
use janitor_core::identification::jev::DEFAULT_MODEL;
use janitor_core::protection::budget::EVALUATION_TIMEOUT_MS;
use rustls::ClientConfig;

use super::tls::{self, Roots};

/// Deadline of one provider call, milliseconds: default 1200, 1–5000 (the inference budget's lease uses the
/// same numbers).
pub const TIMEOUT_MS: Limit<u32> = EVALUATION_TIMEOUT_MS.named("timeout_ms");
/// Length of the API key in bytes.
pub const API_KEY_BYTES: RangeInclusive<usize> = 1..=4096;
/// Length of the model alias in bytes.
pub const MODEL_BYTES: RangeInclusive<usize> = 1..=128;

/// A provider configuration that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum JevConfigError {
    /// A value outside its allowed range.
    #[error(transparent)]
    Range(#[from] ConfigError),
    /// No endpoint was given.
    #[error("endpoint is required")]
    MissingEndpoint,
    /// The endpoint is not an absolute `https://host[:port]/path` (or loopback `http://`) URL.
    #[error("endpoint must be an absolute https:// URL: {0}")]
    InvalidEndpoint(String),
    /// A plain `http://` endpoint on a host other than this machine: the key and the visitors' signals would
    /// cross the network unencrypted. Holds the host.
    #[error(
        "endpoint must use https:// for {0}: plain http:// is allowed only for a loopback host \
         (127.0.0.0/8, ::1, localhost)"
    )]
    PlainHttpNotLoopback(String),
    /// The CA certificates to trust could not be read or used.
    #[error("root certificates: {0}")]
    RootCertificates(String),
    /// The TLS client could not be set up.
    #[error("TLS: {0}")]
    Tls(String),
    /// No API key was given.
    #[error("api_key is required")]
    MissingApiKey,
    /// The key is blank or holds characters a header cannot carry.
    #[error("api_key must be visible ASCII with no spaces")]
    InvalidApiKey,
    /// The model alias is blank.
    #[error("model must not be blank")]
    BlankModel,
    /// An environment variable that does not read as its type.
    #[error(transparent)]
    Environment(#[from] EnvError),
}

/// An API key: kept out of every `Debug` output.
#[derive(Clone, Default)]
struct ApiKey(String);

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

/// Where and how to reach a Jev provider. `Debug` never shows the key.
#[derive(Clone)]
pub struct JevConfig {
    endpoint: Uri,
    host: HeaderValue,
    authorization: HeaderValue,
    model: String,
    timeout_ms: u32,
    tls: Arc<ClientConfig>,
    roots: String,
}

impl fmt::Debug for JevConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JevConfig")
            .field("endpoint", &self.endpoint)
            .field("root_certificates", &self.roots)
            .field("api_key", &ApiKey::default())
            .field("model", &self.model)
            .field("timeout_ms", &self.timeout_ms)
            .finish()
    }
}

impl JevConfig {
    /// A builder with no endpoint or key yet.
    pub fn builder() -> JevConfigBuilder {
        JevConfigBuilder::default()
    }

    /// The provider's URL.
    pub fn endpoint(&self) -> &Uri {
        &self.endpoint
    }

    /// The `Authorization: Bearer …` header value, marked sensitive.
    pub fn authorization(&self) -> &HeaderValue {
        &self.authorization
    }

    /// The model alias sent in every body.
    pub fn model(&self) -> &str {
        &self.model
    }

    /// The deadline of one call, connection and answer included.
    pub fn timeout_ms(&self) -> u32 {
        self.timeout_ms
    }

    /// The `Host` header: the endpoint's authority as written, port included when the URL has one.
    pub(crate) fn host(&self) -> &HeaderValue {
        &self.host
    }

    /// The TLS client configuration (unused for a loopback `http://` endpoint).
    pub(crate) fn tls(&self) -> &Arc<ClientConfig> {
        &self.tls
    }
}

/// Builds a [`JevConfig`]; [`build`](Self::build) checks every value.
#[derive(Debug, Clone, Default)]
#[must_use = "a builder does nothing until `build` is called"]
pub struct JevConfigBuilder {
    endpoint: Option<String>,
    api_key: Option<ApiKey>,
    model: Option<String>,
    timeout_ms: Option<u32>,
    roots: Roots,
}

impl JevConfigBuilder {
    /// The provider's URL, `https://host[:port]/path` (required). Plain `http://` is allowed only for a loopback
    /// host (`127.0.0.0/8`, `::1`, `localhost`): see [`JevConfigError::PlainHttpNotLoopback`].
    pub fn endpoint(mut self, url: impl Into<String>) -> Self {
        self.endpoint = Some(url.into());
        self
    }

    /// Trusts only the CA certificates in this PEM text, instead of the system's store, to authenticate the
    /// provider: for a private CA, or a test's own. Every certificate must be a usable CA.
    pub fn root_certificates_pem(mut self, pem: impl Into<Vec<u8>>) -> Self {
        self.roots = Roots::Pem(pem.into());
        self
    }

    /// Like [`root_certificates_pem`](Self::root_certificates_pem), from a PEM file read by
    /// [`build`](Self::build).
    pub fn root_certificates_file(mut self, path: impl Into<PathBuf>) -> Self {
        self.roots = Roots::File(path.into());
        self
    }

    /// The bearer key (required): 1–4096 visible ASCII characters.
    pub fn api_key(mut self, key: impl Into<String>) -> Self {
        self.api_key = Some(ApiKey(key.into()));
        self
    }

    /// The model alias: 1–128 bytes, not blank; default `jev-latest`.
    pub fn model(mut self, model: impl Into<String>) -> Self {
        self.model = Some(model.into());
        self
    }

    /// The deadline of one call: 1–5000 ms, default 1200. Give the budget wrapper the same value.
    pub fn timeout_ms(mut self, value: u32) -> Self {
        self.timeout_ms = Some(value);
        self
    }

    /// Checks the values, and reads the CA certificates: the given ones, or for an `https://` endpoint the
    /// system's store.
    pub fn build(self) -> Result<JevConfig, JevConfigError> {
        let endpoint = Endpoint::parse(self.endpoint.as_deref())?;
        let key = self.api_key.ok_or(JevConfigError::MissingApiKey)?.0;
        check("api_key length", key.len(), &API_KEY_BYTES)?;
        // Visible ASCII only: a header can carry nothing else, and a space would split the credentials.
        if !key.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(JevConfigError::InvalidApiKey);
        }
        let mut authorization = HeaderValue::from_str(&format!("Bearer {key}"))
            .map_err(|_| JevConfigError::InvalidApiKey)?;
        authorization.set_sensitive(true);
        let model = self.model.unwrap_or_else(|| DEFAULT_MODEL.to_owned());
        check("model length", model.len(), &MODEL_BYTES)?;
        if model.trim().is_empty() {
            return Err(JevConfigError::BlankModel);
        }
        let timeout_ms = TIMEOUT_MS.or_default(self.timeout_ms)?;
        Ok(JevConfig {
            tls: tls::client_config(&self.roots, endpoint.https)?,
            roots: self.roots.describe(),
            endpoint: endpoint.uri,
            host: endpoint.host,
            authorization,
            model,
            timeout_ms,
        })
    }
}

/// A checked endpoint.
struct Endpoint {
    /// The URL, its scheme in lower case: the connectors compare schemes exactly, and `HTTPS` is not `https` to
    /// them.
    uri: Uri,
    /// The `Host` header.
    host: HeaderValue,
    https: bool,
}

impl Endpoint {
    fn parse(url: Option<&str>) -> Result<Endpoint, JevConfigError> {
        let invalid = |why: &str| JevConfigError::InvalidEndpoint(why.to_owned());
        let url = url.ok_or(JevConfigError::MissingEndpoint)?;
        let uri: Uri = url
            .parse()
            .map_err(|e: http::uri::InvalidUri| JevConfigError::InvalidEndpoint(e.to_string()))?;
        let https = match uri.scheme_str().map(str::to_ascii_lowercase).as_deref() {
            Some("https") => true,
            Some("http") => false,
            Some(other) => return Err(invalid(&format!("unsupported scheme {other}"))),
            None => return Err(invalid("no scheme")),
        };
        let authority = uri.authority().ok_or_else(|| invalid("no host"))?;
        // Credentials belong in the key, never in a URL that may end up in a log.
        if authority.as_str().contains('@') {
            return Err(invalid("user information is not allowed"));
        }
        let host = authority.host();
        if host.is_empty() {
            return Err(invalid("no host"));
        }
        if !https && !is_loopback(host) {
            return Err(JevConfigError::PlainHttpNotLoopback(host.to_owned()));
        }
        let host = HeaderValue::from_str(authority.as_str()).map_err(|_| invalid("bad host"))?;
        let mut parts = uri.into_parts();
        parts.scheme = Some(if https { Scheme::HTTPS } else { Scheme::HTTP });
        let uri =
            Uri::from_parts(parts).map_err(|e| JevConfigError::InvalidEndpoint(e.to_string()))?;
        Ok(Endpoint { uri, host, https })
    }
}

/// Whether `host` (as a URL writes it, an IPv6 address in brackets) is this machine.
fn is_loopback(host: &str) -> bool {
    let bare = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    bare.eq_ignore_ascii_case("localhost")
        || bare.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn base() -> JevConfigBuilder {
        JevConfig::builder()
            .endpoint("http://127.0.0.1:9/v1/systemone")
            .api_key("sk-test-123")
    }

    #[test]
    fn defaults() {
        let config = base().build().unwrap();
        assert_eq!(config.timeout_ms(), 1200);
        assert_eq!(config.model(), "jev-latest");
        assert_eq!(config.endpoint().path(), "/v1/systemone");
        assert_eq!(config.authorization(), "Bearer sk-test-123");
        assert!(config.authorization().is_sensitive());
    }

    #[test]
    fn timeout_bounds() {
        for (value, ok) in [
            (0, false),
            (1, true),
            (2, true),
            (4999, true),
            (5000, true),
            (5001, false),
        ] {
            let built = base().timeout_ms(value).build();
            assert_eq!(built.is_ok(), ok, "{value}");
            if !ok {
                let error = built.unwrap_err().to_string();
                assert_eq!(
                    error,
                    format!("timeout_ms must be from 1 to 5000, got {value}")
                );
            }
        }
    }

    #[test]
    fn key_bounds_and_characters() {
        assert_eq!(
            JevConfig::builder()
                .endpoint("http://localhost/")
                .build()
                .unwrap_err(),
            JevConfigError::MissingApiKey
        );
        let error = base().api_key("").build().unwrap_err();
        assert_eq!(
            error.to_string(),
            "api_key length must be from 1 to 4096, got 0"
        );
        assert!(base().api_key("k").build().is_ok());
        assert!(base().api_key("k".repeat(4096)).build().is_ok());
        assert!(matches!(
            base().api_key("k".repeat(4097)).build(),
            Err(JevConfigError::Range(ConfigError {
                field: "api_key length",
                ..
            }))
        ));
        for bad in ["a b", " key", "key\n", "kéy", "\u{7f}"] {
            assert_eq!(
                base().api_key(bad).build().unwrap_err(),
                JevConfigError::InvalidApiKey,
                "{bad:?}"
            );
        }
    }

    #[test]
    fn model_bounds() {
        assert!(base().model("m").build().is_ok());
        assert!(base().model("m".repeat(128)).build().is_ok());
        assert!(matches!(
            base().model("m".repeat(129)).build(),
            Err(JevConfigError::Range(ConfigError {
                field: "model length",
                ..
            }))
        ));
        assert!(matches!(
            base().model("").build(),
            Err(JevConfigError::Range(ConfigError {
                field: "model length",
                ..
            }))
        ));
        assert_eq!(
            base().model("  ").build().unwrap_err(),
            JevConfigError::BlankModel
        );
    }

    #[test]
    fn endpoints() {
        assert_eq!(
            JevConfig::builder().api_key("k").build().unwrap_err(),
            JevConfigError::MissingEndpoint
        );
        for bad in [
            "/v1/systemone",
            "api.example/v1",
            "ftp://api.example/",
            "http://user:secret@127.0.0.1/",
            "https://user:secret@api.example/",
            "not a url",
        ] {
            assert!(
                matches!(
                    base().endpoint(bad).build(),
                    Err(JevConfigError::InvalidEndpoint(_))
                ),
                "{bad}"
            );
        }
    }

    #[test]
    fn plain_http_only_to_this_machine() {
        for loopback in [
            "http://127.0.0.1:8080/v1",
            "http://127.0.0.2/",
            "http://[::1]:8080/v1",
            "http://localhost/",
            "HTTP://LocalHost:9/",
        ] {
            assert!(base().endpoint(loopback).build().is_ok(), "{loopback}");
        }
        for remote in [
            "http://provider.internal:8080",
            "http://api.example/v1",
            "http://10.0.0.7/",
            "http://[2001:db8::1]/",
            "http://localhost.example/",
            "http://0.0.0.0/",
        ] {
            let error = base().endpoint(remote).build().unwrap_err();
            assert!(
                matches!(error, JevConfigError::PlainHttpNotLoopback(_)),
                "{remote}: {error:?}"
            );
        }
        let error = base()
            .endpoint("http://api.example/v1")
            .build()
            .unwrap_err();
        assert_eq!(
            error.to_string(),
            "endpoint must use https:// for api.example: plain http:// is allowed only for a loopback host \
             (127.0.0.0/8, ::1, localhost)"
        );
    }

    #[test]
    fn the_host_header_is_the_authority_as_written() {
        for (url, host) in [
            ("http://127.0.0.1:9/v1", "127.0.0.1:9"),
            ("http://[::1]:8443/v1", "[::1]:8443"),
            ("http://localhost/v1", "localhost"),
            ("http://localhost:80/v1", "localhost:80"),
            ("HTTP://LocalHost:9/v1?a=b", "LocalHost:9"),
        ] {
            let config = base().endpoint(url).build().unwrap();
            assert_eq!(config.host(), host, "{url}");
            assert_eq!(config.endpoint().scheme_str(), Some("http"), "{url}");
        }
        let config = base()
            .endpoint("HTTP://LocalHost:9/v1?a=b")
            .build()
            .unwrap();
        assert_eq!(config.endpoint().to_string(), "http://LocalHost:9/v1?a=b");
    }

    #[test]
    fn https_uses_the_system_store_unless_told_otherwise() {
        // On a machine without CA certificates the refusal must say what to do; elsewhere the store is read.
        match base().endpoint("https://api.example:8443/v1").build() {
            Ok(config) => {
                assert_eq!(config.host(), "api.example:8443");
                assert!(format!("{config:?}").contains("system store"));
            }
            Err(JevConfigError::RootCertificates(why)) => {
                assert!(why.contains("root_certificates_pem"), "{why}")
            }
            Err(other) => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn given_root_certificates_are_checked() {
        let refused = |builder: JevConfigBuilder| match builder.build() {
            Err(JevConfigError::RootCertificates(why)) => why,
            other => panic!("expected a refusal, got {other:?}"),
        };
        let https = || base().endpoint("https://localhost:8443/v1");
        let why = refused(https().root_certificates_pem("not a certificate"));
        assert_eq!(why, "the PEM given: holds no CERTIFICATE block");
        let broken = "-----BEGIN CERTIFICATE-----\n@@@@\n-----END CERTIFICATE-----\n";
        let why = refused(https().root_certificates_pem(broken));
        assert!(why.starts_with("the PEM given: "), "{why}");
        let missing = std::env::temp_dir().join("janitor-jev-no-such-ca.pem");
        let why = refused(https().root_certificates_file(&missing));
        assert!(why.starts_with("cannot read "), "{why}");
        assert!(why.contains("janitor-jev-no-such-ca.pem"), "{why}");
        // Checked even where no TLS is used: a wrong path should not wait for the switch to https.
        let why = refused(base().root_certificates_pem(Vec::new()));
        assert!(why.contains("no CERTIFICATE block"), "{why}");
    }

    #[test]
    fn debug_never_shows_the_key() {
        let builder = base().api_key("sk-very-secret");
        let config = builder.clone().build().unwrap();
        for text in [
            format!("{builder:?}"),
            format!("{config:?}"),
            format!("{config:#?}"),
        ] {
            assert!(!text.contains("sk-very-secret"), "{text}");
            assert!(text.contains("<redacted>"), "{text}");
        }
    }
}
