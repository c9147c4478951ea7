//! A sign-in page whose form carries the browser's payload (`collect()` of the browser client): the server
//! signs in through `Janitor::sign_in`, which identifies the browser on the sign-in route itself, applies the
//! account and network quotas, locks an account for unknown browsers after 5 failed sign-ins in 15 minutes
//! while the owner's own browser (the cookie of an earlier sign-in) keeps signing in, and budgets the failures
//! of each unknown browser and network (docs/signin-defence.md); it erases an account's evidence and the
//! browser's visitor on request.
//!
//! Run with: `cargo run -p janitor-axum --example login`, open http://127.0.0.1:3000/ and sign in as `ada`
//! with the password in `JANITOR_DEMO_PASSWORD` (default `correct horse battery staple`). Set
//! `JANITOR_QUOTA_ACCOUNT=3` to see the account quota answer 429 to the fourth sign-in to one account within a
//! minute, whether or not the form carries the browser's payload (`curl` without one is counted too), and
//! `JANITOR_QUOTA_NETWORK=3` for the fourth attempt from one network within a minute, on any mix of accounts
//! (`JANITOR_RATE_LIMIT_HEADERS=true` adds the `RateLimit` fields). Five wrong passwords from `curl` lock `ada`
//! for browsers she never signed in from (403, a challenge, even with the right password); her browser still
//! signs in. The other variables are those of the quick start (`examples/common/mod.rs`).

#[path = "../common/mod.rs"]
mod common;

mod app;

use axum::response::Html;
use axum::routing::get;
use axum::Router;
use janitor_axum::Janitor;

const PAGE: &str = include_str!("login.html");

struct SignIn(app::Accounts);

impl common::Site for SignIn {
    const NAME: &'static str = "Janitor sign-in example";

    fn routes(&self, janitor: &Janitor) -> Router {
        app::routes(janitor.clone(), self.0.clone()).route("/", get(|| async { Html(PAGE) }))
    }
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let password = std::env::var("JANITOR_DEMO_PASSWORD")
        .unwrap_or_else(|_| "correct horse battery staple".to_owned());
    common::main(SignIn(app::Accounts::with(&[("ada", &password)]))).await
}
