//! The admission layer: a bounded number of requests in flight per adapter instance, refusing the rest at once.
