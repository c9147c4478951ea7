//! The soak's requests: four in five are cookie-path identifications of known visitors (their cookie and the
//! signals of their seeded observation with a new behaviour summary each time, as janitor.js sends them, going
//! round the fixture), one in five a browser without a cookie (one of [`COOKIELESS_BROWSERS`] browsers of the
//! test population far beyond the fixture's, going round).
//!
//! The cookieless browsers go round so that the workload reaches a steady state: the first round creates them,
//! later rounds are returns without a cookie that the matcher restores, and once every visitor holds its
//! retention's observations the tables stop growing. A soak must tell a leak from a workload that keeps
//! growing; with a new browser every time, every lookup meets more candidates than the one before.

use std::sync::Arc;

use janitor_sql::testing::population;

use super::settings::COOKIELESS_EVERY;
use crate::capacity::server::{client_requests, ENDPOINT};
use crate::capacity::throughput::generator::Requests;

/// The first browser of the test population sent as a new browser: beyond any fixture of the harness (the
/// lookup test seeds at most 3,000,000).
pub const NEW_BROWSERS_FROM: u64 = 1_000_000_000;

/// How many distinct cookieless browsers the soak goes round.
pub const COOKIELESS_BROWSERS: u64 = 10_000;

/// The most requests built for one interval (about 50 MB); an interval with more repeats them.
pub const MAX_PER_INTERVAL: u64 = 50_000;

/// An identify request without a cookie: what a browser sends the first time.
pub fn cookieless_request(payload: &str) -> Vec<u8> {
    format!(
        "POST {ENDPOINT} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\n\r\n{payload}",
        payload.len()
    )
    .into_bytes()
}

/// The stream of requests, continued from one interval to the next.
#[derive(Debug, Clone)]
pub struct Mix {
    /// The known visitors' cookie-path requests.
    known: Arc<Vec<Vec<u8>>>,
    /// Requests made so far.
    made: u64,
    /// Cookie-path requests made so far.
    cookie: u64,
    /// New browsers made so far.
    new: u64,
}

impl Mix {
    /// A mix over `known`: one `(visitor id, payload JSON)` per known visitor.
    pub fn new<'a>(known: impl IntoIterator<Item = (&'a str, &'a str)>) -> Result<Mix, String> {
        // As janitor.js sends them: the seeded signals, a new behaviour summary on every visit.
        let known: Vec<(&str, &str)> = known.into_iter().collect();
        let known = client_requests(known.iter().copied())?;
        if known.is_empty() {
            return Err("the soak needs at least one known visitor".to_owned());
        }
        Ok(Mix {
            known: Arc::new(known),
            made: 0,
            cookie: 0,
            new: 0,
        })
    }

    /// The requests of an interval of `count` requests, at most [`MAX_PER_INTERVAL`] of them (the generator
    /// sends request `n` of the interval as `requests[n % len]`).
    pub fn interval(&mut self, count: u64) -> Requests {
        let built = count.clamp(1, MAX_PER_INTERVAL);
        let requests = (0..built).map(|_| self.next_request()).collect();
        Arc::new(requests)
    }

    fn next_request(&mut self) -> Vec<u8> {
        let n = self.made;
        self.made += 1;
        if n % COOKIELESS_EVERY == COOKIELESS_EVERY - 1 {
            let browser = NEW_BROWSERS_FROM + self.new % COOKIELESS_BROWSERS;
            self.new += 1;
            cookieless_request(&population::payload_json(browser).to_string())
        } else {
            let request = self.known[(self.cookie % self.known.len() as u64) as usize].clone();
            self.cookie += 1;
            request
        }
    }

    /// Cookieless requests made so far (the first [`COOKIELESS_BROWSERS`] of them new browsers).
    pub fn new_browsers(&self) -> u64 {
        self.new
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(request: &[u8]) -> &str {
        std::str::from_utf8(request).unwrap()
    }

    #[test]
    fn four_known_cookies_in_five_and_a_new_browser_each_fifth() {
        let known = [
            ("vis_a", r#"{"a":1}"#),
            ("vis_b", r#"{"b":2}"#),
            ("vis_c", r#"{"c":3}"#),
        ];
        let mut mix = Mix::new(known).unwrap();
        let first = mix.interval(10);
        let second = mix.interval(10);
        let all: Vec<&str> = first.iter().chain(second.iter()).map(|r| text(r)).collect();
        let cookies: Vec<&str> = all
            .iter()
            .filter_map(|r| r.split("Cookie: __visitor=").nth(1))
            .map(|rest| rest.split("\r\n").next().unwrap())
            .collect();
        // The known visitors go round, continued across intervals.
        assert_eq!(cookies.len(), 16);
        assert_eq!(&cookies[..5], ["vis_a", "vis_b", "vis_c", "vis_a", "vis_b"]);
        let cookieless: Vec<&&str> = all.iter().filter(|r| !r.contains("Cookie:")).collect();
        assert_eq!(cookieless.len(), 4);
        // The fifth of every five is the new browser.
        assert!(all[3].contains("Cookie:") && !all[4].contains("Cookie:"));
        for r in &cookieless {
            assert!(r.starts_with("POST /api/visitor HTTP/1.1\r\n"), "{r}");
            let (head, body) = r.split_once("\r\n\r\n").unwrap();
            assert!(head.contains(&format!("Content-Length: {}", body.len())));
            let payload: serde_json::Value = serde_json::from_str(body).unwrap();
            assert!(payload["signals"]["userAgent"].is_string());
        }
        // Every new browser is a different one, and the population's own.
        let bodies: std::collections::BTreeSet<&str> = cookieless
            .iter()
            .map(|r| r.split_once("\r\n\r\n").unwrap().1)
            .collect();
        assert_eq!(bodies.len(), 4);
        let first_new: serde_json::Value =
            serde_json::from_str(cookieless[0].split_once("\r\n\r\n").unwrap().1).unwrap();
        assert_eq!(first_new, population::payload_json(NEW_BROWSERS_FROM));
        assert_eq!(mix.new_browsers(), 4);
    }

    #[test]
    fn the_cookieless_browsers_go_round() {
        let mut mix = Mix::new([("vis_a", "{}")]).unwrap();
        let every = COOKIELESS_EVERY as usize;
        let round = (COOKIELESS_BROWSERS as usize + 1) * every;
        let requests: Vec<Vec<u8>> = (0..round).map(|_| mix.next_request()).collect();
        let first = &requests[every - 1];
        let again = &requests[(COOKIELESS_BROWSERS as usize + 1) * every - 1];
        assert!(!text(first).contains("Cookie:"));
        assert_eq!(first, again, "browser 0 comes round again");
        assert_ne!(first, &requests[2 * every - 1]);
    }

    #[test]
    fn an_interval_is_bounded() {
        let mut mix = Mix::new([("vis_a", "{}")]).unwrap();
        assert_eq!(mix.interval(0).len(), 1);
        assert_eq!(
            mix.interval(MAX_PER_INTERVAL + 1).len() as u64,
            MAX_PER_INTERVAL
        );
        assert!(Mix::new([]).unwrap_err().contains("at least one"));
    }
}
