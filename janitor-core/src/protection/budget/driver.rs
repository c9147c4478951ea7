//! The driver: the state machine applied to the shared row by compare-and-swap.

use rand::RngCore;

use super::config::{BudgetConfig, CAS_ATTEMPTS, EVALUATION_TIMEOUT_MS};
use super::record::{BudgetRecord, CallOutcome, LeaseRecord};
use super::store::{BudgetRow, BudgetStore};
use super::BudgetDenial;
use crate::error::StoreError;
use crate::label::{LabelKey, ProtectionKey};

/// An admitted call: hold it while the evaluator works and hand it to
/// [`InferenceBudget::finish`] afterwards. A lease never finished expires on its own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BudgetLease {
    record: LeaseRecord,
    timeout_ms: u32,
}

impl BudgetLease {
    /// The lease as written in the row.
    pub fn record(&self) -> &LeaseRecord {
        &self.record
    }

    /// The lease's random id.
    pub fn id(&self) -> &str {
        &self.record.id
    }

    /// Whether this call is the half-open circuit's probe.
    pub fn is_probe(&self) -> bool {
        self.record.probe
    }

    /// Provider calls reserved.
    pub fn cost(&self) -> u32 {
        self.record.cost
    }

    /// When the lease stops counting (epoch ms).
    pub fn expires_at(&self) -> i64 {
        self.record.expires_at
    }

    /// The evaluator deadline the lease was reserved with (after clamping to 1–5000 ms).
    pub fn timeout_ms(&self) -> u32 {
        self.timeout_ms
    }
}

/// The shared inference budget of one namespace: calls per window, concurrent leases and a circuit breaker,
/// kept in one row that every instance of the namespace updates by compare-and-swap.
#[derive(Debug, Clone)]
pub struct InferenceBudget<S> {
    store: S,
    config: BudgetConfig,
    id: String,
}

/// What one attempt of a change decided.
enum Step<T> {
    /// Nothing to write; the answer.
    Done(T),
    /// Write this record, then answer.
    Write(BudgetRecord, T),
}

/// Why a change could not be made.
enum ChangeError {
    Store(StoreError),
    Contention,
}

impl<S: BudgetStore> InferenceBudget<S> {
    /// The budget of `key`'s namespace over `store`: its row id is the label of the protection key
    /// `"evaluator"`, the same as every other instance with the same secret and namespace derives.
    pub fn new(store: S, config: BudgetConfig, key: &LabelKey) -> Self {
        InferenceBudget {
            store,
            config,
            id: key.protection(&ProtectionKey::Evaluator),
        }
    }

    /// The row id (a `sub_` label).
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The limits this instance applies.
    pub fn config(&self) -> &BudgetConfig {
        &self.config
    }

    /// The store the row lives in.
    pub fn store(&self) -> &S {
        &self.store
    }

    /// Asks to make a call costing `cost` provider calls (0 counts as 1) with a deadline of `timeout_ms`
    /// (clamped to 1–5000). A store error, or a row that changed under every one of
    /// [`CAS_ATTEMPTS`] attempts, is [`BudgetDenial::Storage`]: the call is never admitted blind.
    pub async fn reserve(
        &self,
        now_ms: i64,
        cost: u32,
        timeout_ms: u32,
    ) -> Result<BudgetLease, BudgetDenial> {
        let timeout_ms = clamp_timeout(timeout_ms);
        let lease_id = new_lease_id();
        let config = self.config;
        let outcome = self
            .change(now_ms, timeout_ms, |record| {
                match record.reserve(&config, now_ms, cost, timeout_ms, lease_id.clone()) {
                    Ok((next, lease)) => Step::Write(next, Ok(lease)),
                    Err(denial) => Step::Done(Err(denial)),
                }
            })
            .await;
        match outcome {
            Ok(Ok(record)) => Ok(BudgetLease { record, timeout_ms }),
            Ok(Err(denial)) => Err(denial),
            Err(ChangeError::Store(_) | ChangeError::Contention) => Err(BudgetDenial::Storage),
        }
    }

    /// Records how the call of `lease` ended. Returns whether the row changed: `false` when the lease was no
    /// longer in it (expired, or the row was cleaned up). An error leaves the lease to expire on its own; the
    /// call must not be retried because of it.
    pub async fn finish(
        &self,
        lease: &BudgetLease,
        outcome: CallOutcome,
        now_ms: i64,
    ) -> Result<bool, StoreError> {
        let config = self.config;
        let changed = self
            .change(now_ms, lease.timeout_ms, |record| {
                match record.finish(&config, &lease.record, outcome, now_ms) {
                    Some(next) => Step::Write(next, true),
                    None => Step::Done(false),
                }
            })
            .await;
        changed.map_err(|error| match error {
            ChangeError::Store(error) => error,
            ChangeError::Contention => StoreError::Unavailable(format!(
                "the inference budget row changed under each of {CAS_ATTEMPTS} attempts"
            )),
        })
    }

    /// Deletes at most `batch` expired budget rows (of any namespace in the store). See
    /// [`BudgetStore::cleanup`].
    pub async fn cleanup(&self, batch: usize, now_ms: i64) -> Result<usize, StoreError> {
        self.store.cleanup(batch, now_ms).await
    }

    /// Reads the row, lets `step` decide, and writes its record if the row has not changed since; else again,
    /// at most [`CAS_ATTEMPTS`] times.
    async fn change<T>(
        &self,
        now_ms: i64,
        timeout_ms: u32,
        mut step: impl FnMut(&BudgetRecord) -> Step<T> + Send,
    ) -> Result<T, ChangeError> {
        for _ in 0..CAS_ATTEMPTS {
            let (version, record) = match self.store.read(&self.id).await {
                Ok(Some(row)) => (row.version, row.record),
                Ok(None) => (0, BudgetRecord::fresh(now_ms)),
                Err(error) => return Err(ChangeError::Store(error)),
            };
            let (mut next, answer) = match step(&record) {
                Step::Done(answer) => return Ok(answer),
                Step::Write(next, answer) => (next, answer),
            };
            next.version = version.saturating_add(1);
            let row = BudgetRow {
                version: next.version,
                expires_at: self.config.row_expires_at(now_ms, timeout_ms),
                record: next,
            };
            match self.store.compare_and_swap(&self.id, version, &row).await {
                Ok(true) => return Ok(answer),
                Ok(false) => continue,
                Err(error) => return Err(ChangeError::Store(error)),
            }
        }
        Err(ChangeError::Contention)
    }
}

fn clamp_timeout(timeout_ms: u32) -> u32 {
    timeout_ms.clamp(EVALUATION_TIMEOUT_MS.min, EVALUATION_TIMEOUT_MS.max)
}

/// A random (version 4) UUID from the thread's generator, a CSPRNG seeded by the operating system: lease ids
/// of concurrent instances must not collide, or one instance could finish another's lease.
fn new_lease_id() -> String {
    let mut bytes = [0u8; 16];
    rand::rng().fill_bytes(&mut bytes);
    bytes[6] = (bytes[6] & 0x0f) | 0x40;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    let mut id = String::with_capacity(36);
    for (i, byte) in bytes.iter().enumerate() {
        if matches!(i, 4 | 6 | 8 | 10) {
            id.push('-');
        }
        id.push(char::from(HEX[usize::from(byte >> 4)]));
        id.push(char::from(HEX[usize::from(byte & 15)]));
    }
    id
}

const HEX: &[u8; 16] = b"0123456789abcdef";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lease_ids_are_random_v4_uuids() {
        let a = new_lease_id();
        let b = new_lease_id();
        assert_ne!(a, b);
        assert_eq!(a.len(), 36);
        let parts: Vec<&str> = a.split('-').collect();
        assert_eq!(
            parts.iter().map(|p| p.len()).collect::<Vec<_>>(),
            [8, 4, 4, 4, 12]
        );
        assert!(parts[2].starts_with('4'), "{a}");
        assert!(
            matches!(parts[3].as_bytes()[0], b'8' | b'9' | b'a' | b'b'),
            "{a}"
        );
        assert!(a
            .bytes()
            .all(|c| c == b'-' || c.is_ascii_digit() || (b'a'..=b'f').contains(&c)));
    }

    #[test]
    fn timeouts_are_clamped_to_their_range() {
        assert_eq!(clamp_timeout(0), 1);
        assert_eq!(clamp_timeout(1), 1);
        assert_eq!(clamp_timeout(5_000), 5_000);
        assert_eq!(clamp_timeout(5_001), 5_000);
    }
}
