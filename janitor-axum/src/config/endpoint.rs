//! Where the endpoint and the browser client are served, and how much of a request the endpoint reads.

use std::time::Duration;

use janitor_core::config::Limit;

use super::JanitorConfigError;

/// Largest accepted request body in bytes.
pub const MAX_BODY_BYTES: Limit<usize> = Limit::new("max_body_bytes", 16_384, 1, 65_536);
/// Longest wait for the whole request body, in milliseconds.
pub const REQUEST_TIMEOUT_MS: Limit<u64> = Limit::new("request_timeout_ms", 5_000, 100, 30_000);
/// The endpoint's default path.
pub const ENDPOINT_PATH: &str = "/api/visitor";
/// The browser client's default path.
pub const SCRIPT_PATH: &str = "/janitor.js";
/// The longest path accepted for either.
const MAX_PATH_CHARS: usize = 256;

/// Validated endpoint options.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EndpointConfig {
    path: String,
    script_path: String,
    max_body_bytes: usize,
    request_timeout_ms: u64,
    expose_client_scores: bool,
}

impl Default for EndpointConfig {
    fn default() -> Self {
        EndpointConfig {
            path: ENDPOINT_PATH.to_owned(),
            script_path: SCRIPT_PATH.to_owned(),
            max_body_bytes: MAX_BODY_BYTES.default,
            request_timeout_ms: REQUEST_TIMEOUT_MS.default,
            expose_client_scores: false,
        }
    }
}

impl EndpointConfig {
    /// A builder starting from the defaults.
    pub fn builder() -> EndpointConfigBuilder {
        EndpointConfigBuilder::default()
    }

    /// The endpoint's path.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// Where the browser client is served.
    pub fn script_path(&self) -> &str {
        &self.script_path
    }

    /// The largest body read.
    pub fn max_body_bytes(&self) -> usize {
        self.max_body_bytes
    }

    /// The longest wait for the body.
    pub fn request_timeout(&self) -> Duration {
        Duration::from_millis(self.request_timeout_ms)
    }

    /// Whether the browser receives the full identity.
    pub fn expose_client_scores(&self) -> bool {
        self.expose_client_scores
    }
}

/// Builds an [`EndpointConfig`]; [`build`](Self::build) checks every value and names the rule it broke.
#[derive(Debug, Clone, Default)]
#[must_use = "a builder does nothing until `build` is called"]
pub struct EndpointConfigBuilder {
    path: Option<String>,
    script_path: Option<String>,
    max_body_bytes: Option<usize>,
    request_timeout_ms: Option<u64>,
    expose_client_scores: bool,
}

impl EndpointConfigBuilder {
    /// The endpoint's path (default `/api/visitor`): starts with `/`, at most 256 characters.
    pub fn path(mut self, path: &str) -> Self {
        self.path = Some(path.to_owned());
        self
    }

    /// Where [`Janitor::router`](crate::Janitor::router) serves the browser client `janitor.js` (default
    /// `/janitor.js`): starts with `/`, at most 256 characters, not the endpoint's path.
    pub fn script_path(mut self, path: &str) -> Self {
        self.script_path = Some(path.to_owned());
        self
    }

    /// Largest request body: 1–65,536 bytes, default 16,384.
    pub fn max_body_bytes(mut self, bytes: usize) -> Self {
        self.max_body_bytes = Some(bytes);
        self
    }

    /// Longest wait for the request body: 100–30,000 ms, default 5,000.
    pub fn request_timeout_ms(mut self, ms: u64) -> Self {
        self.request_timeout_ms = Some(ms);
        self
    }

    /// Send the full identity (confidence, risk, browser match) to the browser. Off by default: server code
    /// gets it privately through [`Janitor::assess`](crate::Janitor::assess).
    pub fn expose_client_scores(mut self, expose: bool) -> Self {
        self.expose_client_scores = expose;
        self
    }

    /// Checks everything.
    pub fn build(self) -> Result<EndpointConfig, JanitorConfigError> {
        let path = plain_path("endpoint_path", self.path, ENDPOINT_PATH)?;
        let script_path = plain_path("script_path", self.script_path, SCRIPT_PATH)?;
        if script_path == path {
            return Err(JanitorConfigError::Invalid {
                field: "script_path",
                reason: "must differ from endpoint_path",
            });
        }
        // The client's parts are served beside it, under their own names.
        for name in crate::script::PART_NAMES {
            let part = crate::script::part_path(&script_path, name);
            if part == script_path || part == path {
                return Err(JanitorConfigError::Invalid {
                    field: "script_path",
                    reason: "must leave the names janitor-extended.js and janitor-automation.js beside it to the client's parts",
                });
            }
        }
        Ok(EndpointConfig {
            path,
            script_path,
            max_body_bytes: MAX_BODY_BYTES.or_default(self.max_body_bytes)?,
            request_timeout_ms: REQUEST_TIMEOUT_MS.or_default(self.request_timeout_ms)?,
            expose_client_scores: self.expose_client_scores,
        })
    }
}

/// `path` (or `default`) when the router can take it literally: it starts with `/`, is at most 256
/// characters, and holds no query, fragment or route pattern characters.
fn plain_path(
    field: &'static str,
    path: Option<String>,
    default: &str,
) -> Result<String, JanitorConfigError> {
    let path = path.unwrap_or_else(|| default.to_owned());
    if path.starts_with('/')
        && path.chars().count() <= MAX_PATH_CHARS
        && !path.contains(['?', '#', '{', '}', '*', ':'])
    {
        Ok(path)
    } else {
        Err(JanitorConfigError::Invalid {
            field,
            reason: "must start with / and be a plain path of at most 256 characters",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(builder: EndpointConfigBuilder, field: &str) {
        match builder.build() {
            Err(JanitorConfigError::Invalid { field: f, .. }) => assert_eq!(f, field),
            Err(JanitorConfigError::OutOfRange(e)) => assert_eq!(e.field, field),
            other => panic!("{field}: {other:?}"),
        }
    }

    #[test]
    fn defaults() {
        let c = EndpointConfig::builder().build().unwrap();
        assert_eq!(c, EndpointConfig::default());
        assert_eq!((c.path(), c.script_path()), ("/api/visitor", "/janitor.js"));
        assert_eq!(c.max_body_bytes(), 16_384);
        assert_eq!(c.request_timeout(), Duration::from_secs(5));
        assert!(!c.expose_client_scores());
    }

    #[test]
    fn the_parts_keep_their_names_beside_the_script() {
        let script = |path: &str| EndpointConfig::builder().script_path(path);
        for part in ["janitor-extended.js", "janitor-automation.js"] {
            refused(script(&format!("/{part}")), "script_path");
            let beside_endpoint = script("/api/client.js").path(&format!("/api/{part}"));
            refused(beside_endpoint, "script_path");
        }
        assert!(script("/static/client.js").build().is_ok());
    }

    #[test]
    fn size_and_time_bounds() {
        for (ok, bad) in [(1, 0), (65_536, 65_537)] {
            assert!(EndpointConfig::builder().max_body_bytes(ok).build().is_ok());
            refused(
                EndpointConfig::builder().max_body_bytes(bad),
                "max_body_bytes",
            );
        }
        for (ok, bad) in [(100, 99), (30_000, 30_001)] {
            assert!(EndpointConfig::builder()
                .request_timeout_ms(ok)
                .build()
                .is_ok());
            refused(
                EndpointConfig::builder().request_timeout_ms(bad),
                "request_timeout_ms",
            );
        }
    }

    #[test]
    fn paths() {
        for path in ["api", "/a?b", "/a/{id}", &format!("/{}", "a".repeat(256))] {
            refused(EndpointConfig::builder().path(path), "endpoint_path");
        }
        for path in [
            "janitor.js",
            "/a?b",
            "/static/*file",
            "/api/visitor",
            &format!("/{}", "a".repeat(256)),
        ] {
            refused(EndpointConfig::builder().script_path(path), "script_path");
        }
        let longest = format!("/{}", "a".repeat(255));
        let c = EndpointConfig::builder()
            .script_path(&longest)
            .build()
            .unwrap();
        assert_eq!(c.script_path(), longest);
        assert!(EndpointConfig::builder()
            .path("/v")
            .script_path("/api/visitor")
            .build()
            .is_ok());
    }
}
