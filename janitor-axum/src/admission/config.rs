//! The admission options and their ranges.

use std::time::Duration;

use janitor_core::config::{ConfigError, Limit};

/// Requests one adapter instance works on at the same time (default 64).
pub const MAX_IN_FLIGHT_REQUESTS: Limit<usize> = Limit::new("max_in_flight_requests", 64, 1, 1024);
/// Largest declared body of a refused request that is read and discarded so its keep-alive connection stays
/// usable, in bytes (default 16 KiB). A larger body, or one of unknown length, closes the connection instead.
/// The top of the range is the largest body the identify endpoint accepts at all (`max_body_bytes`); 0 never
/// drains and closes whenever a refused request carries a body.
pub const MAX_DRAIN_BYTES: Limit<u64> = Limit::new("max_drain_bytes", 16_384, 0, 65_536);
/// Longest wait for a refused request's small body to arrive before giving up on it and closing the
/// connection, in milliseconds (default one second).
pub const DRAIN_TIMEOUT_MS: Limit<u64> = Limit::new("drain_timeout_ms", 1_000, 1, 10_000);
/// Longest an admitted request keeps its slot while its body is still arriving, in milliseconds (default 0).
/// Past it the slot is lent back until the body is in (see [`AdmissionSlot`](super::AdmissionSlot)), so a
/// client trickling its body holds no slot. With 0 a request holds its slot only once its body is in hand (what
/// the connection has read already counts): a browser's payload, sent with its head, never notices, and a
/// client that sends a head and a few bytes then reconnects holds nothing, however fast it reconnects. A grace
/// above 0 lets every such client hold a slot for that long per connection.
pub const BODY_GRACE_MS: Limit<u64> = Limit::new("body_grace_ms", 0, 0, 30_000);

/// Validated admission options.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AdmissionConfig {
    max_in_flight_requests: usize,
    max_drain_bytes: u64,
    drain_timeout_ms: u64,
    body_grace_ms: u64,
}

impl Default for AdmissionConfig {
    fn default() -> Self {
        AdmissionConfig {
            max_in_flight_requests: MAX_IN_FLIGHT_REQUESTS.default,
            max_drain_bytes: MAX_DRAIN_BYTES.default,
            drain_timeout_ms: DRAIN_TIMEOUT_MS.default,
            body_grace_ms: BODY_GRACE_MS.default,
        }
    }
}

impl AdmissionConfig {
    /// A builder starting from the defaults.
    pub fn builder() -> AdmissionConfigBuilder {
        AdmissionConfigBuilder::default()
    }

    /// Requests allowed in flight at once.
    pub fn max_in_flight_requests(&self) -> usize {
        self.max_in_flight_requests
    }

    /// Largest declared body of a refused request that is drained rather than closing the connection.
    pub fn max_drain_bytes(&self) -> u64 {
        self.max_drain_bytes
    }

    /// Longest wait for a refused request's small body.
    pub fn drain_timeout(&self) -> Duration {
        Duration::from_millis(self.drain_timeout_ms)
    }

    /// Longest an admitted request holds its slot while waiting for its body.
    pub fn body_grace(&self) -> Duration {
        Duration::from_millis(self.body_grace_ms)
    }
}

/// Builds an [`AdmissionConfig`]; [`build`](Self::build) checks every value.
#[derive(Debug, Clone, Copy, Default)]
#[must_use = "a builder does nothing until `build` is called"]
pub struct AdmissionConfigBuilder {
    max_in_flight_requests: Option<usize>,
    max_drain_bytes: Option<u64>,
    drain_timeout_ms: Option<u64>,
    body_grace_ms: Option<u64>,
}

impl AdmissionConfigBuilder {
    /// Requests in flight at once: 1–1024, default 64.
    pub fn max_in_flight_requests(mut self, limit: usize) -> Self {
        self.max_in_flight_requests = Some(limit);
        self
    }

    /// Largest refused body drained to keep its connection: 0–65,536 bytes, default 16,384.
    pub fn max_drain_bytes(mut self, bytes: u64) -> Self {
        self.max_drain_bytes = Some(bytes);
        self
    }

    /// Longest wait for a refused request's small body: 1–10,000 ms, default 1,000.
    pub fn drain_timeout_ms(mut self, ms: u64) -> Self {
        self.drain_timeout_ms = Some(ms);
        self
    }

    /// Longest an admitted request holds its slot while its body arrives: 1–30,000 ms, default 250.
    pub fn body_grace_ms(mut self, ms: u64) -> Self {
        self.body_grace_ms = Some(ms);
        self
    }

    /// Checks the values.
    pub fn build(self) -> Result<AdmissionConfig, ConfigError> {
        Ok(AdmissionConfig {
            max_in_flight_requests: MAX_IN_FLIGHT_REQUESTS
                .or_default(self.max_in_flight_requests)?,
            max_drain_bytes: MAX_DRAIN_BYTES.or_default(self.max_drain_bytes)?,
            drain_timeout_ms: DRAIN_TIMEOUT_MS.or_default(self.drain_timeout_ms)?,
            body_grace_ms: BODY_GRACE_MS.or_default(self.body_grace_ms)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults() {
        let config = AdmissionConfig::builder().build().unwrap();
        assert_eq!(config, AdmissionConfig::default());
        assert_eq!(config.max_in_flight_requests(), 64);
        assert_eq!(config.max_drain_bytes(), 16_384);
        assert_eq!(config.drain_timeout(), Duration::from_secs(1));
        assert_eq!(config.body_grace(), Duration::ZERO);
    }

    #[test]
    fn body_grace_bounds() {
        for good in [0, 1, 30_000] {
            let config = AdmissionConfig::builder()
                .body_grace_ms(good)
                .build()
                .unwrap();
            assert_eq!(config.body_grace(), Duration::from_millis(good));
        }
        let err = AdmissionConfig::builder()
            .body_grace_ms(30_001)
            .build()
            .unwrap_err();
        assert_eq!(err.field, "body_grace_ms");
        assert!(err.to_string().contains("from 0 to 30000"), "{err}");
    }

    #[test]
    fn max_in_flight_requests_bounds() {
        for good in [1, 1024] {
            let config = AdmissionConfig::builder()
                .max_in_flight_requests(good)
                .build()
                .unwrap();
            assert_eq!(config.max_in_flight_requests(), good);
        }
        for bad in [0, 1025] {
            let err = AdmissionConfig::builder()
                .max_in_flight_requests(bad)
                .build()
                .unwrap_err();
            assert_eq!(err.field, "max_in_flight_requests");
            assert!(err.to_string().contains("from 1 to 1024"), "{err}");
            assert_eq!(err.value, bad.to_string());
        }
    }

    #[test]
    fn max_drain_bytes_bounds() {
        for good in [0, 65_536] {
            let config = AdmissionConfig::builder()
                .max_drain_bytes(good)
                .build()
                .unwrap();
            assert_eq!(config.max_drain_bytes(), good);
        }
        let err = AdmissionConfig::builder()
            .max_drain_bytes(65_537)
            .build()
            .unwrap_err();
        assert_eq!(err.field, "max_drain_bytes");
        assert!(err.to_string().contains("from 0 to 65536"), "{err}");
    }

    #[test]
    fn drain_timeout_bounds() {
        for good in [1, 10_000] {
            let config = AdmissionConfig::builder()
                .drain_timeout_ms(good)
                .build()
                .unwrap();
            assert_eq!(config.drain_timeout(), Duration::from_millis(good));
        }
        for bad in [0, 10_001] {
            let err = AdmissionConfig::builder()
                .drain_timeout_ms(bad)
                .build()
                .unwrap_err();
            assert_eq!(err.field, "drain_timeout_ms");
            assert!(err.to_string().contains("from 1 to 10000"), "{err}");
        }
    }
}
