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
/// Requests that may wait for a slot at once when every slot is taken (default 128; 0 with [`SLOT_WAIT_MS`] 0
/// refuses at once). A wait absorbs a burst shorter than [`SLOT_WAIT_MS`] (a scheduling hiccup that puts one
/// request too many in flight) without a 503; under real overload the waiters time out and are refused, so the
/// bound on work in flight is unchanged and a refusal comes at most [`SLOT_WAIT_MS`] later. After any refusal
/// no new request waits for [`OVERLOAD_WINDOW`](super::OVERLOAD_WINDOW): overload is answered at once. The default was
/// chosen by the capacity harness's search for the highest sustained rate without a 503 (docs/CAPACITY.md,
/// "Waiting for a slot").
pub const MAX_WAITING_REQUESTS: Limit<usize> = Limit::new("max_waiting_requests", 128, 0, 4096);
/// Longest a request waits for a slot before it is refused, in milliseconds (default 20). Set with
/// [`MAX_WAITING_REQUESTS`]: both 0, or both above 0.
pub const SLOT_WAIT_MS: Limit<u64> = Limit::new("slot_wait_ms", 20, 0, 1_000);

/// Validated admission options.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AdmissionConfig {
    max_in_flight_requests: usize,
    max_drain_bytes: u64,
    drain_timeout_ms: u64,
    body_grace_ms: u64,
    max_waiting_requests: usize,
    slot_wait_ms: u64,
}

impl Default for AdmissionConfig {
    fn default() -> Self {
        AdmissionConfig {
            max_in_flight_requests: MAX_IN_FLIGHT_REQUESTS.default,
            max_drain_bytes: MAX_DRAIN_BYTES.default,
            drain_timeout_ms: DRAIN_TIMEOUT_MS.default,
            body_grace_ms: BODY_GRACE_MS.default,
            max_waiting_requests: MAX_WAITING_REQUESTS.default,
            slot_wait_ms: SLOT_WAIT_MS.default,
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

    /// Requests that may wait for a slot at once (0: none).
    pub fn max_waiting_requests(&self) -> usize {
        self.max_waiting_requests
    }

    /// Longest wait for a slot (zero: none).
    pub fn slot_wait(&self) -> Duration {
        Duration::from_millis(self.slot_wait_ms)
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
    max_waiting_requests: Option<usize>,
    slot_wait_ms: Option<u64>,
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

    /// Requests that may wait for a slot at once: 0–4,096, default 128 (0 with [`slot_wait_ms`](Self::slot_wait_ms)
    /// 0 refuses at once).
    pub fn max_waiting_requests(mut self, waiting: usize) -> Self {
        self.max_waiting_requests = Some(waiting);
        self
    }

    /// Longest wait for a slot: 0–1,000 ms, default 20 (0 with
    /// [`max_waiting_requests`](Self::max_waiting_requests) 0 refuses at once).
    pub fn slot_wait_ms(mut self, ms: u64) -> Self {
        self.slot_wait_ms = Some(ms);
        self
    }

    /// Checks the values.
    pub fn build(self) -> Result<AdmissionConfig, ConfigError> {
        let max_waiting_requests = MAX_WAITING_REQUESTS.or_default(self.max_waiting_requests)?;
        let slot_wait_ms = SLOT_WAIT_MS.or_default(self.slot_wait_ms)?;
        // One without the other would be a wait that never happens.
        if (max_waiting_requests == 0) != (slot_wait_ms == 0) {
            let (field, other) = match max_waiting_requests {
                0 => ("max_waiting_requests", "slot_wait_ms"),
                _ => ("slot_wait_ms", "max_waiting_requests"),
            };
            return Err(ConfigError {
                field,
                range: format!("above 0 when {other} is (both 0: no wait)"),
                value: "0".to_owned(),
            });
        }
        Ok(AdmissionConfig {
            max_in_flight_requests: MAX_IN_FLIGHT_REQUESTS
                .or_default(self.max_in_flight_requests)?,
            max_drain_bytes: MAX_DRAIN_BYTES.or_default(self.max_drain_bytes)?,
            drain_timeout_ms: DRAIN_TIMEOUT_MS.or_default(self.drain_timeout_ms)?,
            body_grace_ms: BODY_GRACE_MS.or_default(self.body_grace_ms)?,
            max_waiting_requests,
            slot_wait_ms,
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
        assert_eq!(config.max_waiting_requests(), 128);
        assert_eq!(config.slot_wait(), Duration::from_millis(20));
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
    fn the_slot_wait_is_on_by_default_and_its_two_bounds_go_together() {
        let config = AdmissionConfig::default();
        assert_eq!(
            (config.max_waiting_requests(), config.slot_wait()),
            (128, Duration::from_millis(20))
        );
        for (waiting, ms) in [(1, 1), (4096, 1_000), (0, 0)] {
            let config = AdmissionConfig::builder()
                .max_waiting_requests(waiting)
                .slot_wait_ms(ms)
                .build()
                .unwrap();
            assert_eq!(config.max_waiting_requests(), waiting);
            assert_eq!(config.slot_wait(), Duration::from_millis(ms));
        }
        let over = |waiting, ms| {
            AdmissionConfig::builder()
                .max_waiting_requests(waiting)
                .slot_wait_ms(ms)
                .build()
                .unwrap_err()
        };
        assert_eq!(over(4097, 10).field, "max_waiting_requests");
        assert_eq!(over(8, 1_001).field, "slot_wait_ms");
        let alone = over(8, 0);
        assert_eq!(alone.field, "slot_wait_ms");
        assert!(
            alone
                .to_string()
                .contains("above 0 when max_waiting_requests is"),
            "{alone}"
        );
        assert_eq!(over(0, 5).field, "max_waiting_requests");
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
