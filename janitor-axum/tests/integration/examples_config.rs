//! What the examples' environment means (`examples/common/mod.rs`, compiled here as it is): development mode,
//! whether `JANITOR_ENVIRONMENT=development` says so or the variable is unset, is one thing — a cookie
//! without `Secure` and the scores shown — as the README says; production is the library's defaults.

#[path = "../../examples/common/mod.rs"]
#[allow(dead_code)]
mod example;

use janitor_axum::config::{EnvSource, Environment};
use janitor_axum::JanitorConfig;

const SECRET: &str = "7c1e9a24f0b35d86e2a4c7f190b3d5e8";

/// The configuration the examples build from these variables.
fn config(variables: &[(&str, &str)]) -> JanitorConfig {
    let env = EnvSource::from_pairs(
        [("JANITOR_SECRET", SECRET)]
            .into_iter()
            .chain(variables.iter().copied()),
    );
    example::settings(&env).unwrap().build().unwrap()
}

/// The environment, whether the cookie is `Secure`, and whether the endpoint shows the scores.
fn mode(config: &JanitorConfig) -> (Environment, bool, bool) {
    (
        config.environment(),
        config.cookie().secure(),
        config.endpoint().expose_client_scores(),
    )
}

#[test]
fn development_set_or_defaulted_is_one_mode() {
    let development = (Environment::Development, false, true);
    assert_eq!(mode(&config(&[])), development, "unset");
    let set = config(&[("JANITOR_ENVIRONMENT", "development")]);
    assert_eq!(mode(&set), development, "set");
    let production = config(&[("JANITOR_ENVIRONMENT", "production")]);
    assert_eq!(mode(&production), (Environment::Production, true, false));
}

#[test]
fn the_cookie_and_scores_variables_still_win_in_development() {
    for environment in [None, Some("development")] {
        let mut variables = vec![
            ("JANITOR_COOKIE_SECURE", "true"),
            ("JANITOR_EXPOSE_CLIENT_SCORES", "false"),
        ];
        variables.extend(environment.map(|e| ("JANITOR_ENVIRONMENT", e)));
        let config = config(&variables);
        assert_eq!(
            mode(&config),
            (Environment::Development, true, false),
            "{environment:?}"
        );
    }
}
