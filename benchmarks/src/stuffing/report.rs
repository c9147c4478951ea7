//! The benchmark's figures and its report (`docs/benchmarks/stuffing-current.json`).

use serde::Serialize;

/// What the owners met.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct OwnerFigures {
    /// Sign-ins (each ends signed in, challenged, refused or in error; a typo and retries are within one).
    pub sign_ins: u64,
    /// Requests, typos and retries included.
    pub attempts: u64,
    /// Sign-ins whose first try was a typo.
    pub typos: u64,
    /// Sign-ins that ended signed in.
    pub signed_in: u64,
    /// Of those, sign-ins that were refused first and waited for Retry-After.
    pub delayed: u64,
    /// Sign-ins refused for good (429 without a Retry-After worth waiting, or refused three times).
    pub refused: u64,
    /// Sign-ins challenged (the owner passes a second factor).
    pub challenged: u64,
    /// Owners refused or challenged for a lock while presenting the cookie of an earlier successful sign-in.
    pub locked_out: u64,
    /// Owners of the attacked accounts who signed in from such a browser while the attack ran: those who
    /// could have been locked out.
    pub targeted_returning: u64,
    /// Sign-ins that met a 5xx (none expected).
    pub errors: u64,
}

/// What the attacker got.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct AttackerFigures {
    /// Requests sent.
    pub attempts: u64,
    /// Requests whose password was checked.
    pub checked: u64,
    /// Accounts signed into.
    pub compromised: u64,
    /// The most requests past the request quotas in any 60 seconds.
    pub peak_per_minute: u64,
    /// The most requests past the request quotas in any 5 seconds: how bursty what gets through is.
    pub peak_per_5s: u64,
}

/// One run's raw figures.
#[derive(Debug, Clone, Copy, Default)]
pub struct Tally {
    /// The owners'.
    pub owners: OwnerFigures,
    /// The attacker's.
    pub attacker: AttackerFigures,
    /// Statements the owners' requests executed (PostgreSQL).
    pub owner_statements: u64,
    /// Statements the attacker's requests executed (PostgreSQL).
    pub attacker_statements: u64,
}

/// One line of the report: a store, a scenario, a defence.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    /// `memory` or `postgres`.
    pub store: &'static str,
    /// The scenario.
    pub scenario: &'static str,
    /// `off` (the 0.7 account quota and lock), `on` (the defaults, GCRA network counter) or
    /// `on_fixed_window` (the same with the network counter on fixed windows).
    pub defence: &'static str,
    /// The owners' figures.
    pub owners: OwnerFigures,
    /// Refused sign-ins over sign-ins.
    pub owners_refused_share: f64,
    /// Challenged sign-ins over sign-ins.
    pub owners_challenged_share: f64,
    /// Delayed sign-ins over sign-ins.
    pub owners_delayed_share: f64,
    /// The attacker's figures.
    pub attacker: AttackerFigures,
    /// Statements per request (owners' and attacker's together), on PostgreSQL; `null` on memory.
    pub statements_per_request: Option<f64>,
    /// Statements per owner request, on PostgreSQL.
    pub owner_statements_per_request: Option<f64>,
    /// Statements per attacker request, on PostgreSQL.
    pub attacker_statements_per_request: Option<f64>,
    /// Seconds the run took (simulated time costs nothing; this is the library's and the store's work).
    pub seconds: f64,
}

fn share(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        (part as f64 / whole as f64 * 1e6).round() / 1e6
    }
}

fn per(statements: u64, requests: u64, counted: bool) -> Option<f64> {
    (counted && requests > 0)
        .then(|| (statements as f64 / requests as f64 * 1000.0).round() / 1000.0)
}

impl Row {
    /// The row of one run.
    pub fn new(
        store: &'static str,
        scenario: &'static str,
        defence: &'static str,
        tally: Tally,
        seconds: f64,
    ) -> Row {
        let o = tally.owners;
        let a = tally.attacker;
        let counted = store == "postgres";
        Row {
            store,
            scenario,
            defence,
            owners: o,
            owners_refused_share: share(o.refused, o.sign_ins),
            owners_challenged_share: share(o.challenged, o.sign_ins),
            owners_delayed_share: share(o.delayed, o.sign_ins),
            attacker: a,
            statements_per_request: per(
                tally.owner_statements + tally.attacker_statements,
                o.attempts + a.attempts,
                counted,
            ),
            owner_statements_per_request: per(tally.owner_statements, o.attempts, counted),
            attacker_statements_per_request: per(tally.attacker_statements, a.attempts, counted),
            seconds: (seconds * 10.0).round() / 10.0,
        }
    }
}

/// One of the targets, checked against the report's figures.
#[derive(Debug, Clone, Serialize)]
pub struct Target {
    /// What is asked.
    pub target: String,
    /// What was measured.
    pub measured: String,
    /// Whether it holds.
    pub met: bool,
}

/// The targets, from the rows of `store`.
pub fn targets(rows: &[Row], store: &str) -> Vec<Target> {
    if !rows.iter().any(|r| r.store == store) {
        return Vec::new();
    }
    let find = |scenario: &str, defence: &str| {
        rows.iter()
            .find(|r| r.store == store && r.scenario == scenario && r.defence == defence)
    };
    let mut out = Vec::new();
    let mut compare = |scenario: &str, what: &str, check: &dyn Fn(u64, u64) -> bool| {
        if let (Some(off), Some(on)) = (find(scenario, "off"), find(scenario, "on")) {
            let (off, on) = (off.attacker.compromised, on.attacker.compromised);
            out.push(Target {
                target: format!("{store}, {scenario}: {what}"),
                measured: format!("{on} compromised with the defences on, {off} with them off"),
                met: check(on, off),
            });
        }
    };
    compare(
        "one_network",
        "at most 1 of the valid pairs compromised",
        &|on, _| on <= 1,
    );
    compare(
        "botnet",
        "at most 10% of what it compromises undefended",
        &|on, off| on * 10 <= off,
    );
    compare(
        "spraying",
        "at most 10% of what it compromises undefended",
        &|on, off| on * 10 <= off,
    );
    if let (Some(off), Some(on)) = (find("lockout_abuse", "off"), find("lockout_abuse", "on")) {
        out.push(Target {
            target: format!("{store}, lockout_abuse: zero owners locked out of their known browser"),
            measured: format!(
                "{} with the defences on, {} with them off (of {} owners of the abused accounts who signed in \
                 from their own browser during the attack)",
                on.owners.locked_out, off.owners.locked_out, off.owners.targeted_returning
            ),
            met: on.owners.locked_out == 0,
        });
    }
    let on: Vec<&Row> = rows
        .iter()
        .filter(|r| r.store == store && r.defence == "on")
        .collect();
    let worst = |f: &dyn Fn(&Row) -> f64| on.iter().map(|r| f(r)).fold(0.0, f64::max);
    let refused = worst(&|r| r.owners_refused_share);
    let challenged = worst(&|r| r.owners_challenged_share);
    out.push(Target {
        target: format!("{store}: owners' sign-ins refused at most 0.5% in every scenario"),
        measured: format!("at most {:.3}%", refused * 100.0),
        met: refused <= 0.005,
    });
    out.push(Target {
        target: format!("{store}: owners' sign-ins challenged at most 2% in every scenario"),
        measured: format!("at most {:.3}%", challenged * 100.0),
        met: challenged <= 0.02,
    });
    if store == "postgres" {
        let extra = rows
            .iter()
            .filter(|r| r.store == store && r.defence == "on")
            .filter_map(|on| {
                let off = find(on.scenario, "off")?;
                Some(on.owner_statements_per_request? - off.owner_statements_per_request?)
            })
            .fold(f64::MIN, f64::max);
        out.push(Target {
            target: "postgres: at most one extra statement per owner sign-in request".to_owned(),
            measured: format!("at most {extra:+.3} statements per request against the 0.7 sign-in"),
            met: extra <= 1.0,
        });
    }
    out
}
