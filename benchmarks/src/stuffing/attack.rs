//! The attackers: each scenario is a set of bots with a queue of (account, password) guesses, a network, a
//! pace, what they send besides the form, and what they do with a refusal.

use std::collections::VecDeque;
use std::net::{IpAddr, Ipv4Addr};

use janitor_core::VisitorPayload;
use serde::Serialize;

use super::population::{Draw, Population, COMMON_PASSWORDS};

/// One attack of the benchmark.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Scenario {
    /// A list of (account, password) pairs, 1% valid, from one network as fast as allowed.
    OneNetwork,
    /// The same list through 1,000 residential networks, each slow; no payload, no cookie (a botnet or a
    /// proxy pool of scripts: the cookie-less bots).
    Botnet,
    /// The 20 most common passwords against every account, through the 1,000 networks, over days.
    Spraying,
    /// Wrong passwords against 100 chosen accounts, enough to keep them locked for the whole period.
    LockoutAbuse,
    /// The list through the 1,000 networks from bots that send a payload copied from a real device and replay
    /// the cookie they are given.
    ReplayingBots,
}

impl Scenario {
    /// Every scenario, in the report's order.
    pub const ALL: [Scenario; 5] = [
        Scenario::OneNetwork,
        Scenario::Botnet,
        Scenario::Spraying,
        Scenario::LockoutAbuse,
        Scenario::ReplayingBots,
    ];

    /// The scenario's name in reports.
    pub fn name(&self) -> &'static str {
        match self {
            Scenario::OneNetwork => "one_network",
            Scenario::Botnet => "botnet",
            Scenario::Spraying => "spraying",
            Scenario::LockoutAbuse => "lockout_abuse",
            Scenario::ReplayingBots => "replaying_bots",
        }
    }

    /// Reads [`name`](Self::name).
    pub fn parse(name: &str) -> Option<Scenario> {
        Scenario::ALL.into_iter().find(|s| s.name() == name)
    }
}

/// Bots in the distributed scenarios: one per residential network.
pub const BOTS: usize = 1_000;
/// Share of the stuffing list's pairs that are valid.
pub const VALID_SHARE: f64 = 0.01;
/// Accounts the lockout abuser keeps locked (at most the site's accounts).
pub const ABUSED_ACCOUNTS: usize = 100;
/// The attacks start a day in, when owners have signed in from their browsers at least once.
pub const ATTACK_START_MS: i64 = 86_400_000;

/// One guess.
#[derive(Debug, Clone)]
pub struct Guess {
    /// The account.
    pub account: usize,
    /// The password tried.
    pub password: String,
}

/// What a bot sends besides the form.
#[derive(Debug, Clone)]
pub enum Disguise {
    /// Nothing: no payload, no cookie.
    Bare,
    /// A payload copied from a real device, and the cookie the site last gave this bot.
    Copied(Box<VisitorPayload>),
}

/// One bot.
#[derive(Debug, Clone)]
pub struct Bot {
    /// Its address.
    pub address: IpAddr,
    /// The least time between two of its requests.
    pub pace_ms: i64,
    /// What it sends besides the form.
    pub disguise: Disguise,
    /// The cookie it replays (with [`Disguise::Copied`]).
    pub cookie: Option<String>,
    /// After its first request, how long it waits before the rest: the one-network bot opens a minute's
    /// window, then comes back just before it ends and keeps going, the timing that lets twice a fixed
    /// window's limit through in a few seconds.
    pub opening_pause_ms: i64,
}

/// One attack: bots sharing one queue of guesses.
#[derive(Debug, Clone)]
pub struct Attack {
    /// The bots.
    pub bots: Vec<Bot>,
    /// The guesses, taken from the front; a guess at a locked account goes to the back.
    pub queue: VecDeque<Guess>,
    /// Whether the guesses repeat until the period ends (lockout abuse) rather than end.
    pub forever: bool,
    /// Whether a refusal's Retry-After is honoured (the abuser does not care).
    pub honours_retry_after: bool,
}

/// The attack of `scenario` on `population`.
pub fn plan(scenario: Scenario, population: &Population, seed: u64) -> Attack {
    let mut draw = Draw::new(seed ^ 0x00A7_7AC4);
    let accounts = population.accounts.len();
    let residential = |draw: &mut Draw| -> Vec<IpAddr> {
        // Distinct /24s of 100.64.0.0/10, a range no owner of the population uses.
        let mut nets: Vec<u32> = (0..(1u32 << 14)).collect();
        for i in 0..BOTS.min(nets.len()) {
            let j = i + draw.below((nets.len() - i) as u64) as usize;
            nets.swap(i, j);
        }
        nets[..BOTS]
            .iter()
            .map(|n| IpAddr::V4(Ipv4Addr::from(0x6440_0000 | (n << 8) | 7)))
            .collect()
    };
    let bare_bots = |addresses: Vec<IpAddr>, pace_ms| -> Vec<Bot> {
        addresses
            .into_iter()
            .map(|address| Bot {
                address,
                pace_ms,
                disguise: Disguise::Bare,
                cookie: None,
                opening_pause_ms: 0,
            })
            .collect()
    };
    let one_network = IpAddr::V4(Ipv4Addr::new(198, 18, 0, 10));
    match scenario {
        Scenario::OneNetwork => Attack {
            bots: bare_bots(vec![one_network], 100)
                .into_iter()
                .map(|bot| Bot {
                    opening_pause_ms: 57_000,
                    ..bot
                })
                .collect(),
            queue: stuffing_list(population, &mut draw),
            forever: false,
            honours_retry_after: true,
        },
        Scenario::Botnet => Attack {
            bots: bare_bots(residential(&mut draw), 600_000),
            queue: stuffing_list(population, &mut draw),
            forever: false,
            honours_retry_after: true,
        },
        Scenario::Spraying => {
            let queue = COMMON_PASSWORDS
                .iter()
                .flat_map(|p| {
                    (0..accounts).map(move |account| Guess {
                        account,
                        password: (*p).to_owned(),
                    })
                })
                .collect();
            Attack {
                bots: bare_bots(residential(&mut draw), 3_600_000),
                queue,
                forever: false,
                honours_retry_after: true,
            }
        }
        Scenario::LockoutAbuse => {
            let chosen = ABUSED_ACCOUNTS.min(accounts);
            // Five failures per account every 15 minutes keep every lock shut: one request every
            // 15 min / (5 × accounts), and a millisecond more, so that each account's next failure lands just
            // after its oldest one leaves the 15 minutes rather than on the edge, where it would be refused
            // uncounted and leave the lock open until the next round.
            let pace_ms = 900_000 / (5 * chosen as i64).max(1) + 1;
            let queue = (0..chosen)
                .map(|i| Guess {
                    account: i * accounts / chosen,
                    password: "not-the-password".to_owned(),
                })
                .collect();
            Attack {
                bots: bare_bots(vec![one_network], pace_ms),
                queue,
                forever: true,
                honours_retry_after: false,
            }
        }
        Scenario::ReplayingBots => {
            let copied = population
                .sign_ins
                .first()
                .map(|s| s.payload.clone())
                .expect("a population has sign-ins");
            let bots = residential(&mut draw)
                .into_iter()
                .map(|address| Bot {
                    address,
                    pace_ms: 600_000,
                    disguise: Disguise::Copied(Box::new(copied.clone())),
                    cookie: None,
                    opening_pause_ms: 0,
                })
                .collect();
            Attack {
                bots,
                queue: stuffing_list(population, &mut draw),
                forever: false,
                honours_retry_after: true,
            }
        }
    }
}

/// One guess per account, in a random order, exactly 1% of them (rounded) the account's password.
fn stuffing_list(population: &Population, draw: &mut Draw) -> VecDeque<Guess> {
    let mut list: Vec<Guess> = (0..population.accounts.len())
        .map(|account| Guess {
            account,
            password: format!("leaked-elsewhere-{:012x}", draw.next_u64() >> 16),
        })
        .collect();
    shuffle(&mut list, draw);
    let valid = (list.len() as f64 * VALID_SHARE).round() as usize;
    for guess in &mut list[..valid] {
        guess.password = population.accounts[guess.account].password.clone();
    }
    shuffle(&mut list, draw);
    list.into()
}

fn shuffle<T>(list: &mut [T], draw: &mut Draw) {
    for i in (1..list.len()).rev() {
        let j = draw.below(i as u64 + 1) as usize;
        list.swap(i, j);
    }
}
