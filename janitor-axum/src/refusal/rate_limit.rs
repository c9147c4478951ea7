//! The IETF `RateLimit-Policy` and `RateLimit` fields of a refusal, as draft-ietf-httpapi-ratelimit-headers-11
//! (23 May 2026) writes them: structured-field lists of one item each, named after the spent counter.

use http::header::{HeaderName, HeaderValue};
use http::HeaderMap;

/// The counter a 429 was for: its name, quota and window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateLimitPolicy {
    /// The policy's name: `global`, `network`, `account`, `session`, or a sign-in reason.
    pub name: &'static str,
    /// Requests (or failures) per window.
    pub quota: u32,
    /// The window, in whole seconds (at least 1).
    pub window_secs: u64,
}

const POLICY: HeaderName = HeaderName::from_static("ratelimit-policy");
const LIMIT: HeaderName = HeaderName::from_static("ratelimit");

impl RateLimitPolicy {
    /// Writes `RateLimit-Policy: "name";q=quota;w=window` and `RateLimit: "name";r=0;t=retry_after`: nothing is
    /// left, and room comes back when `Retry-After` says.
    pub fn write_headers(&self, retry_after_secs: u64, headers: &mut HeaderMap) {
        let name = self.name;
        let window = self.window_secs.max(1);
        let policy = format!("\"{name}\";q={};w={window}", self.quota);
        let limit = format!("\"{name}\";r=0;t={retry_after_secs}");
        // Names are fixed lower-case words and the rest are digits: always a valid header value.
        if let (Ok(policy), Ok(limit)) = (
            HeaderValue::from_str(&policy),
            HeaderValue::from_str(&limit),
        ) {
            headers.insert(POLICY, policy);
            headers.insert(LIMIT, limit);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_follow_the_draft() {
        let mut headers = HeaderMap::new();
        let policy = RateLimitPolicy {
            name: "network",
            quota: 3,
            window_secs: 60,
        };
        policy.write_headers(20, &mut headers);
        assert_eq!(headers["ratelimit-policy"], "\"network\";q=3;w=60");
        assert_eq!(headers["ratelimit"], "\"network\";r=0;t=20");
    }
}
