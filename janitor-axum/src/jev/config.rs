//! The provider's endpoint, key, model and deadline, checked once when built.

use std::fmt;
use std::ops::RangeInclusive;

use http::{HeaderValue, Uri};
use janitor_core::config::{check, ConfigError, Limit};
use janitor_core::identification::jev::DEFAULT_MODEL;
use janitor_core::protection::budget::EVALUATION_TIMEOUT_MS;

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
    /// The endpoint is not an absolute `http://host[:port]/path` URL.
    #[error("endpoint must be an absolute http:// URL: {0}")]
    InvalidEndpoint(String),
    /// The endpoint asks for TLS, which this build cannot speak.
    #[error(
        "endpoint must use http://: https:// needs a TLS client, which this build does not include \
         (put a local TLS-terminating proxy in front of the provider)"
    )]
    HttpsUnsupported,
    /// No API key was given.
    #[error("api_key is required")]
    MissingApiKey,
    /// The key is blank or holds characters a header cannot carry.
    #[error("api_key must be visible ASCII with no spaces")]
    InvalidApiKey,
    /// The model alias is blank.
    #[error("model must not be blank")]
    BlankModel,
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
    authorization: HeaderValue,
    model: String,
    timeout_ms: u32,
}

impl fmt::Debug for JevConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JevConfig")
            .field("endpoint", &self.endpoint)
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
}

/// Builds a [`JevConfig`]; [`build`](Self::build) checks every value.
#[derive(Debug, Clone, Default)]
#[must_use = "a builder does nothing until `build` is called"]
pub struct JevConfigBuilder {
    endpoint: Option<String>,
    api_key: Option<ApiKey>,
    model: Option<String>,
    timeout_ms: Option<u32>,
}

impl JevConfigBuilder {
    /// The provider's URL, `http://host[:port]/path` (required). `https://` is refused: see
    /// [`JevConfigError::HttpsUnsupported`].
    pub fn endpoint(mut self, url: impl Into<String>) -> Self {
        self.endpoint = Some(url.into());
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

    /// Checks the values.
    pub fn build(self) -> Result<JevConfig, JevConfigError> {
        let endpoint = endpoint(self.endpoint.as_deref())?;
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
        Ok(JevConfig {
            endpoint,
            authorization,
            model,
            timeout_ms: TIMEOUT_MS.or_default(self.timeout_ms)?,
        })
    }
}

fn endpoint(url: Option<&str>) -> Result<Uri, JevConfigError> {
    let url = url.ok_or(JevConfigError::MissingEndpoint)?;
    let uri: Uri = url
        .parse()
        .map_err(|e: http::uri::InvalidUri| JevConfigError::InvalidEndpoint(e.to_string()))?;
    match uri.scheme_str().map(str::to_ascii_lowercase).as_deref() {
        Some("http") => {}
        Some("https") => return Err(JevConfigError::HttpsUnsupported),
        Some(other) => {
            return Err(JevConfigError::InvalidEndpoint(format!(
                "unsupported scheme {other}"
            )))
        }
        None => return Err(JevConfigError::InvalidEndpoint("no scheme".into())),
    }
    let authority = uri
        .authority()
        .ok_or_else(|| JevConfigError::InvalidEndpoint("no host".into()))?;
    // Credentials belong in the key, never in a URL that may end up in a log.
    if authority.as_str().contains('@') {
        return Err(JevConfigError::InvalidEndpoint(
            "user information is not allowed".into(),
        ));
    }
    if authority.host().is_empty() {
        return Err(JevConfigError::InvalidEndpoint("no host".into()));
    }
    Ok(uri)
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
        assert_eq!(
            base()
                .endpoint("https://api.example/v1")
                .build()
                .unwrap_err(),
            JevConfigError::HttpsUnsupported
        );
        assert_eq!(
            base()
                .endpoint("HTTPS://api.example/v1")
                .build()
                .unwrap_err(),
            JevConfigError::HttpsUnsupported
        );
        assert!(base()
            .endpoint("https://api.example/v1")
            .build()
            .unwrap_err()
            .to_string()
            .contains("TLS"));
        for bad in [
            "/v1/systemone",
            "api.example/v1",
            "ftp://api.example/",
            "http://user:secret@api.example/",
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
        assert!(base()
            .endpoint("http://provider.internal:8080")
            .build()
            .is_ok());
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
