//! The sign-in defence benchmark (`cargo xtask benchmark-stuffing`, docs/signin-defence.md): a simulated site
//! whose owners sign in over 30 simulated days from the accuracy population's devices and networks, attacked
//! in five ways, with the defences off (the 0.7 account quota and lock) and on, on the memory stores and on
//! PostgreSQL. Time is the handle's manual clock: nothing waits, and every attempt runs the library calls a
//! sign-in route makes.

use std::time::Instant;

use janitor_axum::config::{QuotaConfig, SignInConfig};
use janitor_axum::handle::{Clock, Stores};
use janitor_axum::protection::quota::QuotaAlgorithm;
use janitor_axum::{Janitor, JanitorConfig, MemoryStores};
use serde::Serialize;

pub mod attack;
pub mod http;
pub mod population;
pub mod report;
pub mod sim;

use attack::Scenario;
use population::Population;
use report::{Row, Target};
use sim::{Counter, Flow, Site};

/// The account quota of the 0.7 sign-in, per minute (the contract's default).
pub const ACCOUNT_QUOTA: u32 = 60;
/// The network quota with the defences on, per minute: generous for a household or a carrier's NAT, and still
/// a limit for one machine.
pub const NETWORK_QUOTA: u32 = 30;

/// A defence setting of the benchmark.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Defence {
    /// The 0.7 sign-in.
    Off,
    /// `Janitor::sign_in` with the defaults (the network counter on GCRA).
    On,
    /// `Janitor::sign_in` with the failure budgets off, so that the network counter alone stands between a
    /// fast client and the password check: the fixed window against GCRA.
    NetworkQuotaOnly(QuotaAlgorithm),
}

impl Defence {
    fn name(&self) -> &'static str {
        match self {
            Defence::Off => "off",
            Defence::On => "on",
            Defence::NetworkQuotaOnly(QuotaAlgorithm::Gcra) => "network_quota_only_gcra",
            Defence::NetworkQuotaOnly(QuotaAlgorithm::FixedWindow) => {
                "network_quota_only_fixed_window"
            }
        }
    }
}

/// What to run.
#[derive(Debug, Clone)]
pub struct Options {
    /// Accounts (at most the log's devices).
    pub accounts: usize,
    /// Simulated days.
    pub days: i64,
    /// The seed of every draw.
    pub seed: u64,
    /// Run on the memory stores.
    pub memory: bool,
    /// Run on PostgreSQL too.
    pub postgres: bool,
    /// The scenarios.
    pub scenarios: Vec<Scenario>,
    /// Also run the network counter on fixed windows, to compare it with GCRA.
    pub compare_algorithms: bool,
}

/// The whole report.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// How it was made.
    pub command: String,
    /// The machine.
    pub machine: crate::capacity::report::Machine,
    /// Accounts.
    pub accounts: usize,
    /// Simulated days.
    pub days: i64,
    /// Owners' sign-ins in the period.
    pub owner_sign_ins: usize,
    /// The seed.
    pub seed: u64,
    /// The settings with the defences on.
    pub settings: serde_json::Value,
    /// One row per store, scenario and defence.
    pub rows: Vec<Row>,
    /// The short real-time run over HTTP against the simulation of the same attempts.
    pub real_time: http::Agreement,
    /// The targets, checked.
    pub targets: Vec<Target>,
}

pub(crate) fn config(defence: Defence) -> JanitorConfig {
    let quotas = QuotaConfig::builder()
        .without_global()
        .without_session()
        .account(ACCOUNT_QUOTA);
    let (quotas, signin) = match defence {
        Defence::Off => (quotas, SignInConfig::default()),
        Defence::On => (quotas.network(NETWORK_QUOTA), SignInConfig::default()),
        Defence::NetworkQuotaOnly(algorithm) => {
            let budgets_off = SignInConfig::builder()
                .without_network_failures()
                .without_browser_failures()
                .build()
                .expect("valid sign-in options");
            (
                quotas.network(NETWORK_QUOTA).network_algorithm(algorithm),
                budgets_off,
            )
        }
    };
    JanitorConfig::builder()
        .secret("a benchmark secret of at least thirty-two bytes")
        .namespace("stuffing-benchmark")
        .quotas(quotas.build().expect("valid quotas"))
        .signin(signin)
        .build()
        .expect("valid configuration")
}

fn site(stores: impl Stores, defence: Defence, start_ms: i64, statements: Option<Counter>) -> Site {
    let clock = Clock::manual(start_ms);
    let janitor = Janitor::builder(config(defence), stores)
        .clock(clock.clone())
        .build();
    Site {
        janitor,
        clock,
        flow: if defence == Defence::Off {
            Flow::Legacy
        } else {
            Flow::Defended
        },
        statements,
        events: Default::default(),
    }
}

fn defences(options: &Options, scenario: Scenario) -> Vec<Defence> {
    let mut out = vec![Defence::Off, Defence::On];
    if options.compare_algorithms && scenario == Scenario::OneNetwork {
        out.push(Defence::NetworkQuotaOnly(QuotaAlgorithm::Gcra));
        out.push(Defence::NetworkQuotaOnly(QuotaAlgorithm::FixedWindow));
    }
    out
}

/// One run on fresh stores, printed as it ends.
async fn one(
    store: &'static str,
    site: Site,
    population: &Population,
    scenario: Scenario,
    defence: Defence,
    seed: u64,
) -> Row {
    let started = Instant::now();
    let attack = attack::plan(scenario, population, seed);
    let tally = sim::run(&site, population, Some(attack)).await;
    let row = Row::new(
        store,
        scenario.name(),
        defence.name(),
        tally,
        started.elapsed().as_secs_f64(),
    );
    println!(
        "{store:8} {:15} {:15} compromised {:4}  checked {:7} of {:7}  owners: refused {:.3}% challenged {:.3}% \
         delayed {:.3}% locked out {}  statements/request {}  ({:.1} s)",
        row.scenario,
        row.defence,
        row.attacker.compromised,
        row.attacker.checked,
        row.attacker.attempts,
        row.owners_refused_share * 100.0,
        row.owners_challenged_share * 100.0,
        row.owners_delayed_share * 100.0,
        row.owners.locked_out,
        row.statements_per_request.map_or("-".to_owned(), |s| format!("{s:.3}")),
        row.seconds,
    );
    row
}

/// Runs every chosen scenario with each defence on each chosen store.
pub async fn run(population: &Population, options: &Options, command: String) -> Report {
    let mut rows = Vec::new();
    if options.memory {
        for &scenario in &options.scenarios {
            for defence in defences(options, scenario) {
                let site = site(MemoryStores::new(), defence, population.start_ms, None);
                rows.push(one("memory", site, population, scenario, defence, options.seed).await);
            }
        }
    }
    if options.postgres {
        let pg_rows = postgres(population, options).await;
        rows.extend(pg_rows);
    }
    let mut targets = Vec::new();
    for store in ["memory", "postgres"] {
        targets.extend(report::targets(&rows, store));
    }
    for target in &targets {
        println!(
            "{} {}: {}",
            if target.met { "met    " } else { "NOT MET" },
            target.target,
            target.measured
        );
    }
    let real_time = http::agreement(population, options.seed).await;
    println!(
        "real time over HTTP against the simulation: {} requests, HTTP {:?}, simulated {:?}: {}",
        real_time.requests,
        real_time.http,
        real_time.simulated,
        if real_time.agree {
            "the same answers"
        } else {
            "DIFFERENT answers"
        }
    );
    let defaults = SignInConfig::default();
    Report {
        command,
        machine: crate::capacity::report::machine(),
        accounts: population.accounts.len(),
        days: options.days,
        owner_sign_ins: population.sign_ins.len(),
        seed: options.seed,
        settings: serde_json::json!({
            "account_quota_per_minute": ACCOUNT_QUOTA,
            "network_quota_per_minute": NETWORK_QUOTA,
            "lock_failures": defaults.lock_failures(),
            "lock_window_ms": defaults.lock_window_ms(),
            "browser_failures_per_window": defaults.browser_failures(),
            "network_failures_per_window": defaults.network_failures(),
            "site_failures_per_window": defaults.site_failures(),
            "failure_window_ms": defaults.failure_window_ms(),
        }),
        rows,
        real_time,
        targets,
    }
}

async fn postgres(population: &Population, options: &Options) -> Vec<Row> {
    let population = population.clone();
    let options = options.clone();
    let rows = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let out = rows.clone();
    janitor_sql::testing::with_schemas(|schemas| async move {
        for &scenario in &options.scenarios {
            for defence in defences(&options, scenario) {
                let database = schemas.fresh().await;
                let counter = database.clone();
                let statements: Counter = Box::new(move || counter.statements_executed());
                let stores = janitor_sql::PgStores::new(database);
                let site = site(stores, defence, population.start_ms, Some(statements));
                let row = one(
                    "postgres",
                    site,
                    &population,
                    scenario,
                    defence,
                    options.seed,
                )
                .await;
                out.lock().unwrap().push(row);
            }
        }
    })
    .await;
    let rows = rows.lock().unwrap().clone();
    rows
}
