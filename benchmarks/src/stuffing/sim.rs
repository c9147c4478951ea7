//! The simulation: owners and bots in simulated time (the handle's manual clock; nothing waits), each attempt
//! made with the library calls a sign-in route makes: `Janitor::sign_in` with the defences on, and with them
//! off the 0.7 sign-in (the account quota, a lock counted from the account's recent failures from anywhere).

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashSet, VecDeque};
use std::net::{IpAddr, SocketAddr};

use axum::extract::ConnectInfo;
use http::request::Parts;
use janitor_axum::evidence::{Action, ActivityKey, EventInput, EventType, VelocityQuery};
use janitor_axum::handle::Clock;
use janitor_axum::signin::SignInOutcome;
use janitor_axum::{Janitor, Refusal, VisitorContext, VisitorPayload};

use super::attack::{Attack, Disguise, ATTACK_START_MS};
use super::population::Population;
use super::report::{AttackerFigures, OwnerFigures, Tally};

/// The 0.7 sign-in's lock: five failures of the account in fifteen minutes, from anywhere.
const LEGACY_LOCK_FAILURES: u32 = 5;
const LEGACY_LOCK_WINDOW_MS: i64 = 15 * 60_000;
/// Owners retry a refused sign-in after its Retry-After when that is at most this long, up to three times.
const OWNER_PATIENCE_MS: i64 = 15 * 60_000;
const OWNER_RETRIES: u8 = 3;
/// An owner who mistyped tries again this long after.
const RETYPE_MS: i64 = 8_000;

/// Which sign-in the site runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    /// The 0.7 sign-in: account quota and the lock from anywhere.
    Legacy,
    /// `Janitor::sign_in`.
    Defended,
}

/// The site under attack: a handle on a manual clock, and how to count its statements.
pub struct Site {
    /// The handle.
    pub janitor: Janitor,
    /// Its clock.
    pub clock: Clock,
    /// Which sign-in it runs.
    pub flow: Flow,
    /// Statements executed so far, on PostgreSQL.
    pub statements: Option<Counter>,
    /// Events the 0.7 sign-in recorded, for their ids.
    pub events: std::sync::atomic::AtomicU64,
}

/// Reads how many statements the store has executed.
pub type Counter = Box<dyn Fn() -> u64 + Send + Sync>;

/// What one attempt got, as a client sees it (and the simulation's bookkeeping).
#[derive(Debug, Clone, Default)]
struct Answer {
    status: u16,
    reasons: Vec<String>,
    retry_after_ms: Option<i64>,
    cookie: Option<String>,
    checked: bool,
}

impl Answer {
    fn lock(&self) -> bool {
        self.reasons.iter().any(|r| r.starts_with("locked"))
    }
}

fn parts(address: IpAddr, cookie: Option<&str>) -> Parts {
    let mut request = http::Request::new(());
    request
        .extensions_mut()
        .insert(ConnectInfo(SocketAddr::new(address, 40_000)));
    if let Some(cookie) = cookie {
        let value = format!("__visitor={cookie}");
        request.headers_mut().insert(
            http::header::COOKIE,
            value.parse().expect("a cookie header"),
        );
    }
    request.into_parts().0
}

impl Site {
    async fn attempt(
        &self,
        population: &Population,
        account: usize,
        password: &str,
        payload: Option<&VisitorPayload>,
        address: IpAddr,
        cookie: Option<&str>,
    ) -> Answer {
        let account = &population.accounts[account];
        let right = account.password == password;
        let parts = parts(address, cookie);
        match self.flow {
            Flow::Defended => {
                let signed = self
                    .janitor
                    .sign_in(&parts, &account.name, payload, async || right)
                    .await;
                let mut signin = match signed {
                    Ok(signin) => signin,
                    Err(refusal) => return refused(refusal),
                };
                let decision = signin.decision();
                let status = match signin.outcome() {
                    SignInOutcome::SignedIn => 200,
                    SignInOutcome::WrongPassword => 401,
                    SignInOutcome::Challenged => 403,
                    SignInOutcome::Denied => 429,
                };
                Answer {
                    status,
                    reasons: decision
                        .reasons()
                        .iter()
                        .map(|r| r.as_str().to_owned())
                        .collect(),
                    retry_after_ms: decision.retry_after_secs().map(|s| s as i64 * 1000),
                    checked: matches!(status, 200 | 401),
                    cookie: signin
                        .take_identified()
                        .map(|v| v.identity().visitor_id.to_string()),
                }
            }
            Flow::Legacy => self.legacy(&parts, &account.name, payload, right).await,
        }
    }

    /// The 0.7 sign-in, as its example made it: the account quota (with or without a payload), the browser,
    /// the account's recent failures from anywhere, the check, the record.
    async fn legacy(
        &self,
        parts: &Parts,
        account: &str,
        payload: Option<&VisitorPayload>,
        right: bool,
    ) -> Answer {
        let context = VisitorContext::for_account(account).expect("a valid account name");
        let identified = match self.janitor.identify_parts(parts, &context, payload).await {
            Ok(identified) => identified,
            Err(refusal) => return refused(refusal),
        };
        let cookie = identified
            .as_ref()
            .map(|v| v.identity().visitor_id.to_string());
        let evidence = self.janitor.evidence();
        let subject = evidence.subject_id(account);
        let recent = VelocityQuery::new(ActivityKey::Subject(subject.clone()))
            .action(Action::SignIn)
            .window_ms(LEGACY_LOCK_WINDOW_MS);
        let failures = evidence
            .velocity(&recent)
            .await
            .expect("velocity")
            .counts
            .get(&EventType::LoginFailure)
            .copied()
            .unwrap_or(0);
        let (event_type, status) = if failures >= LEGACY_LOCK_FAILURES {
            (EventType::ActionDenied, 429)
        } else if right {
            (EventType::LoginSuccess, 200)
        } else {
            (EventType::LoginFailure, 401)
        };
        let n = self
            .events
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let id = format!("sim-{n}");
        let mut event = EventInput::builder(&id, event_type)
            .action(Action::SignIn)
            .subject(subject);
        if let Some(visitor) = identified.as_ref() {
            event = event.visitor(visitor.identity().visitor_id.clone());
        }
        evidence
            .record(&event.build().expect("an event"))
            .await
            .expect("record");
        Answer {
            status,
            reasons: if status == 429 {
                vec!["locked".to_owned()]
            } else {
                Vec::new()
            },
            retry_after_ms: None,
            checked: status != 429,
            cookie,
        }
    }

    /// The status one bare attempt (no payload, no cookie) gets, for the real-time comparison.
    pub async fn attempt_status(
        &self,
        population: &Population,
        account: usize,
        password: &str,
        address: IpAddr,
    ) -> u16 {
        self.attempt(population, account, password, None, address, None)
            .await
            .status
    }

    fn statements(&self) -> u64 {
        self.statements.as_ref().map_or(0, |count| count())
    }
}

fn refused(refusal: Refusal) -> Answer {
    let (status, retry_after_ms, reasons) = match refusal {
        Refusal::RateLimited {
            retry_after_secs, ..
        } => (
            429,
            Some(retry_after_secs as i64 * 1000),
            vec!["quota".to_owned()],
        ),
        other => (
            other.status().as_u16(),
            None,
            vec![other.reason().to_owned()],
        ),
    };
    Answer {
        status,
        reasons,
        retry_after_ms,
        ..Answer::default()
    }
}

/// Who acts next.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Actor {
    /// An owner's sign-in: the typo first, or the right password (after `tries` refusals).
    Owner {
        sign_in: usize,
        typo: bool,
        tries: u8,
    },
    /// A bot.
    Bot(usize),
}

/// Runs `attack` against `site` while the population's owners sign in; the figures of both sides.
pub async fn run(site: &Site, population: &Population, mut attack: Option<Attack>) -> Tally {
    let mut heap = BinaryHeap::new();
    let mut seq = 0u64;
    let mut push = |heap: &mut BinaryHeap<_>, at: i64, actor: Actor| {
        seq += 1;
        heap.push(Reverse((at, seq, actor)));
    };
    for (i, sign_in) in population.sign_ins.iter().enumerate() {
        let actor = Actor::Owner {
            sign_in: i,
            typo: sign_in.typo,
            tries: 0,
        };
        push(&mut heap, sign_in.at_ms, actor);
    }
    if let Some(attack) = &attack {
        for (i, bot) in attack.bots.iter().enumerate() {
            // Bots start spread over their first pace, as a campaign ramps up.
            let offset = (i as i64 * bot.pace_ms) / attack.bots.len().max(1) as i64;
            push(
                &mut heap,
                population.start_ms + ATTACK_START_MS + offset,
                Actor::Bot(i),
            );
        }
    }
    let mut cookies: Vec<Option<String>> = vec![None; population.accounts.len()];
    let mut signed_in_before = vec![false; population.accounts.len()];
    let mut owners = OwnerFigures::default();
    let mut attacker = AttackerFigures::default();
    let mut compromised = HashSet::new();
    let mut locked_out = HashSet::new();
    let mut targeted_returning = HashSet::new();
    let targeted: HashSet<usize> = attack
        .as_ref()
        .map(|a| a.queue.iter().map(|g| g.account).collect())
        .unwrap_or_default();
    let attack_start = population.start_ms + ATTACK_START_MS;
    let mut window: VecDeque<i64> = VecDeque::new();
    let mut burst: VecDeque<i64> = VecDeque::new();
    let mut opened = vec![false; attack.as_ref().map_or(0, |a| a.bots.len())];
    let (mut owner_statements, mut attacker_statements) = (0u64, 0u64);
    while let Some(Reverse((at, _, actor))) = heap.pop() {
        if at >= population.end_ms {
            continue;
        }
        site.clock.set(at);
        let before = site.statements();
        match actor {
            Actor::Owner {
                sign_in,
                typo,
                tries,
            } => {
                let s = &population.sign_ins[sign_in];
                let account = &population.accounts[s.account];
                let presented = if s.lost_cookie {
                    None
                } else {
                    cookies[s.account].clone()
                };
                let password = if typo {
                    "a typo of the password"
                } else {
                    account.password.as_str()
                };
                let answer = site
                    .attempt(
                        population,
                        s.account,
                        password,
                        Some(&s.payload),
                        s.address,
                        presented.as_deref(),
                    )
                    .await;
                owner_statements += site.statements() - before;
                owners.attempts += 1;
                if let Some(cookie) = &answer.cookie {
                    cookies[s.account] = Some(cookie.clone());
                }
                let from_own_browser = presented.is_some() && signed_in_before[s.account];
                if from_own_browser && at >= attack_start && targeted.contains(&s.account) {
                    targeted_returning.insert(s.account);
                }
                if matches!(answer.status, 403 | 429) && answer.lock() && from_own_browser {
                    locked_out.insert(s.account);
                }
                if typo {
                    owners.typos += 1;
                    push(
                        &mut heap,
                        at + RETYPE_MS,
                        Actor::Owner {
                            sign_in,
                            typo: false,
                            tries,
                        },
                    );
                    continue;
                }
                match answer.status {
                    200 => {
                        owners.signed_in += 1;
                        owners.delayed += u64::from(tries > 0);
                        signed_in_before[s.account] = true;
                    }
                    403 => owners.challenged += 1,
                    429 => match answer.retry_after_ms.filter(|ms| *ms <= OWNER_PATIENCE_MS) {
                        Some(wait) if tries < OWNER_RETRIES => {
                            let next = Actor::Owner {
                                sign_in,
                                typo: false,
                                tries: tries + 1,
                            };
                            push(&mut heap, at + wait, next);
                            // Counted once, when it ends.
                            continue;
                        }
                        _ => owners.refused += 1,
                    },
                    _ => owners.errors += 1,
                }
                owners.sign_ins += 1;
            }
            Actor::Bot(i) => {
                let Some(attack) = attack.as_mut() else {
                    continue;
                };
                let Some(guess) = attack.queue.front().cloned() else {
                    continue;
                };
                let bot = &attack.bots[i];
                let payload = match &bot.disguise {
                    Disguise::Bare => None,
                    Disguise::Copied(payload) => Some((**payload).clone()),
                };
                let cookie = bot.cookie.clone();
                let answer = site
                    .attempt(
                        population,
                        guess.account,
                        &guess.password,
                        payload.as_ref(),
                        bot.address,
                        cookie.as_deref(),
                    )
                    .await;
                attacker_statements += site.statements() - before;
                attacker.attempts += 1;
                if answer.status != 429 {
                    window.push_back(at);
                    while window.front().is_some_and(|t| *t <= at - 60_000) {
                        window.pop_front();
                    }
                    attacker.peak_per_minute = attacker.peak_per_minute.max(window.len() as u64);
                    burst.push_back(at);
                    while burst.front().is_some_and(|t| *t <= at - 5_000) {
                        burst.pop_front();
                    }
                    attacker.peak_per_5s = attacker.peak_per_5s.max(burst.len() as u64);
                }
                attacker.checked += u64::from(answer.checked);
                if answer.status == 200 {
                    compromised.insert(guess.account);
                }
                if matches!(bot.disguise, Disguise::Copied(_)) && answer.cookie.is_some() {
                    attack.bots[i].cookie = answer.cookie.clone();
                }
                let mut pace = attack.bots[i].pace_ms;
                if !opened[i] {
                    opened[i] = true;
                    pace = pace.max(attack.bots[i].opening_pause_ms);
                }
                let refused = matches!(answer.status, 403 | 429);
                let next = if refused && attack.honours_retry_after && !answer.lock() {
                    // Wait for the budget and try the same guess again.
                    at + pace.max(answer.retry_after_ms.unwrap_or(pace))
                } else {
                    let guess = attack.queue.pop_front().expect("the guess taken");
                    if attack.forever || (refused && answer.lock()) {
                        attack.queue.push_back(guess);
                    }
                    at + pace
                };
                push(&mut heap, next, Actor::Bot(i));
            }
        }
    }
    owners.locked_out = locked_out.len() as u64;
    owners.targeted_returning = targeted_returning.len() as u64;
    attacker.compromised = compromised.len() as u64;
    Tally {
        owners,
        attacker,
        owner_statements,
        attacker_statements,
    }
}
