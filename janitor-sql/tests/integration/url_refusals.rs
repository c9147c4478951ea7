//! A connection string that cannot be used is refused without its password: on every refusal path (the form and
//! scheme, libpq's TLS parameters, the driver's parser, the environment, a settings file), neither `Display` nor
//! `Debug` of the error shows the password or the whole string.

use janitor_core::config::EnvSource;
use janitor_sql::{Database, DatabaseConfig, DatabaseSettings, SetupError};

/// The password of every refused string below.
const SECRET: &str = "S3cretMarker";

/// Neither form of `error` shows the password.
fn keeps_the_secret(case: &str, error: &SetupError) {
    for shown in [error.to_string(), format!("{error:?}")] {
        assert!(!shown.contains(SECRET), "{case}: {shown}");
        assert!(!shown.contains("user:"), "{case}: {shown}");
    }
}

fn refusal(url: &str) -> SetupError {
    DatabaseConfig::builder(url).build().unwrap_err()
}

#[test]
fn a_scheme_that_is_not_postgres_is_an_unknown_scheme() {
    for (url, named) in [
        (
            "postgress://user:S3cretMarker@db.example.com/app",
            Some("\"postgress\""),
        ),
        (
            "mysql://user:S3cretMarker@db.example.com/app",
            Some("\"mysql\""),
        ),
        (
            "POSTGRES://user:S3cretMarker@db.example.com/app",
            Some("\"POSTGRES\""),
        ),
        ("postgres//user:S3cretMarker@db.example.com/app", None),
        ("postgres:/user:S3cretMarker@db.example.com/app", None),
        ("user:S3cretMarker@db.example.com/app", None),
        (
            "jdbc:postgresql://user:S3cretMarker@db.example.com/app",
            None,
        ),
    ] {
        let error = refusal(url);
        keeps_the_secret(url, &error);
        let text = error.to_string();
        assert!(
            matches!(error, SetupError::InvalidUrl(_)),
            "{url}: {error:?}"
        );
        assert!(text.contains("unknown scheme"), "{url}: {text}");
        assert!(
            text.contains("postgres://"),
            "{url}: the accepted forms: {text}"
        );
        if let Some(scheme) = named {
            assert!(text.contains(scheme), "{url}: {text}");
        }
    }
}

#[test]
fn key_value_refusals_quote_nothing_of_the_string() {
    for text in [
        // An unquoted password with a space: the part after it has no `=`.
        "host=db.example.com user=u password=pass S3cretMarker dbname=app",
        "host=db.example.com user=u password=pass S3cretMarker",
        "host=db.example.com user=u password='S3cretMarker",
        "host=db.example.com password=S3cretMarker sslmode=verify",
        "host=db.example.com password=S3cretMarker port=notaport",
        "host=db.example.com password=S3cretMarker sslkey=/k.pem",
    ] {
        keeps_the_secret(text, &refusal(text));
    }
}

#[test]
fn url_refusals_quote_nothing_of_the_string() {
    for url in [
        // Two forms mixed: the password lands in the sslmode value.
        "postgres://db.example.com/app?sslmode=require password=S3cretMarker",
        "postgres://user:S3cretMarker@db.example.com/app?sslmode=%zz",
        "postgres://user:S3cretMarker@db.example.com/app?sslmode=allow",
        "postgres://user:S3cretMarker@db.example.com/app?sslcert=/c.pem",
        "postgres://user:S3cretMarker@db.example.com/app?sslrootcert=",
        "postgres://user:S3cretMarker@localhost/app?sslmode=verify-full&sslrootcert=/nonexistent/ca.pem",
        "postgres://user:S3cretMarker@db.example.com:notaport/app",
        "postgres://user:S3cretMarker@[::1/app",
        "postgres://user:S3cretMarker@db.example.com/app?S3cretMarker=1",
        "postgres://user:S3cretMarker@db.example.com/app?connect_timeout=soon",
    ] {
        keeps_the_secret(url, &refusal(url));
    }
}

#[test]
fn the_driver_s_reason_is_kept_when_it_names_only_an_option() {
    let text = refusal("postgres://user:S3cretMarker@db.example.com:notaport/app").to_string();
    assert!(text.contains("`port`"), "{text}");
    let text = refusal("postgres://user:S3cretMarker@db.example.com/app?colour=blue").to_string();
    assert!(text.contains("unknown option `colour`"), "{text}");
}

#[test]
fn the_environment_a_settings_file_and_from_url_keep_the_secret() {
    let typo = "postgress://user:S3cretMarker@db.example.com/app";
    let env = EnvSource::from_pairs([("DATABASE_URL", typo)]);
    let error = DatabaseConfig::from_env_source(&env).unwrap_err();
    keeps_the_secret("from_env", &error);
    assert!(error.to_string().contains("unknown scheme"), "{error}");
    let settings = DatabaseSettings::from_env(&env).unwrap();
    assert!(!format!("{settings:?}").contains(SECRET));
    keeps_the_secret("settings from env", &settings.build().unwrap_err());

    let file: DatabaseSettings =
        serde_json::from_str(&format!(r#"{{"url": "{typo}", "max_connections": 4}}"#)).unwrap();
    keeps_the_secret("settings file", &file.build().unwrap_err());
    keeps_the_secret("from_url", &Database::from_url(typo).unwrap_err());
}
