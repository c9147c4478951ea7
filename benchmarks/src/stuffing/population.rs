//! The simulated site's people: one account per device of the accuracy population's visit log, whose owner
//! signs in at each of the device's visits over the simulated days, from the network and with the payload the
//! log gives, keeping the device's cookie unless the visit lost it, and mistyping the password first about
//! one time in twenty.

use std::net::IpAddr;

use janitor_core::VisitorPayload;

use crate::accuracy::log::Visit;

/// Share of owners' sign-ins whose first try is a typo (the "about 5%"; an estimate).
pub const TYPO_SHARE: f64 = 0.05;
/// Share of accounts whose password is one of the 20 most common ones. Estimate: in leaked password sets the
/// 20 most common cover roughly 1 to 3 % of accounts (Bonneau, "The science of guessing", IEEE S&P 2012, for
/// Yahoo!'s 70 million; lower on sites that refuse the commonest); 1.5 % is taken.
pub const COMMON_PASSWORD_SHARE: f64 = 0.015;
/// The 20 most common passwords, as a spraying list has them (the first 20 of public top lists).
pub const COMMON_PASSWORDS: [&str; 20] = [
    "123456",
    "123456789",
    "12345678",
    "password",
    "qwerty123",
    "qwerty1",
    "111111",
    "12345",
    "secret",
    "123123",
    "1234567890",
    "1234567",
    "000000",
    "qwerty",
    "abc123",
    "password1",
    "iloveyou",
    "11111111",
    "dragon",
    "monkey",
];

/// One account and its owner's device.
#[derive(Debug, Clone)]
pub struct Account {
    /// The account name.
    pub name: String,
    /// Its password.
    pub password: String,
}

/// One sign-in an owner makes: at a visit of the log.
#[derive(Debug, Clone)]
pub struct OwnerSignIn {
    /// When.
    pub at_ms: i64,
    /// Which account (the device's index).
    pub account: usize,
    /// The browser's payload.
    pub payload: VisitorPayload,
    /// The client address.
    pub address: IpAddr,
    /// Whether this visit comes without the device's cookie (the log's `lost`).
    pub lost_cookie: bool,
    /// Whether the first try is a typo.
    pub typo: bool,
}

/// The accounts and their owners' sign-ins.
#[derive(Debug, Clone)]
pub struct Population {
    /// Accounts, by device index.
    pub accounts: Vec<Account>,
    /// Owners' sign-ins in time order.
    pub sign_ins: Vec<OwnerSignIn>,
    /// When the simulated period starts.
    pub start_ms: i64,
    /// When it ends.
    pub end_ms: i64,
}

/// A small deterministic generator (SplitMix64): the simulation must give the same figures for the same seed.
#[derive(Debug, Clone)]
pub struct Draw(u64);

impl Draw {
    /// A generator from `seed`.
    pub fn new(seed: u64) -> Self {
        Draw(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0.0..1.0`.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// A number in `0..n`.
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }
}

/// The population of `visits` over `days` from the log's first visit, with at most `accounts` accounts (the
/// devices with the lowest indices).
pub fn build(
    visits: &[Visit],
    accounts: usize,
    days: i64,
    seed: u64,
) -> Result<Population, String> {
    let start_ms = visits.first().ok_or("the log holds no visit")?.at_ms;
    let end_ms = start_ms + days * 86_400_000;
    let mut draw = Draw::new(seed);
    let devices = visits
        .iter()
        .map(|v| v.device as usize + 1)
        .max()
        .unwrap_or(0);
    let count = devices.min(accounts);
    let accounts: Vec<Account> = (0..count)
        .map(|i| Account {
            name: format!("user{i:05}@example.com"),
            password: if draw.unit() < COMMON_PASSWORD_SHARE {
                COMMON_PASSWORDS[draw.below(20) as usize].to_owned()
            } else {
                format!("own-passphrase-{:016x}", draw.next_u64())
            },
        })
        .collect();
    let mut sign_ins = Vec::new();
    for visit in visits
        .iter()
        .filter(|v| v.at_ms < end_ms && (v.device as usize) < count)
    {
        let address = visit
            .address
            .ok_or("the log has no addresses: make it with the generator's --networks")?;
        sign_ins.push(OwnerSignIn {
            at_ms: visit.at_ms,
            account: visit.device as usize,
            payload: visit.payload.clone(),
            address,
            lost_cookie: visit.lost,
            typo: draw.unit() < TYPO_SHARE,
        });
    }
    Ok(Population {
        accounts,
        sign_ins,
        start_ms,
        end_ms,
    })
}
