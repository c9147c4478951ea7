//! `cargo xtask guide`: builds the application of janitor-axum's guide ("Add Janitor to your axum app") as a
//! reader would — its visible code, copied into a crate of its own outside the workspace — runs its tests, then
//! serves it on the memory stores and on PostgreSQL and walks through what the guide promises: a sign-in, a
//! lock that challenges unknown browsers (403 with `challenge` and `Retry-After`, the locked account's erasure
//! too) while the owner's browser still signs in, a 429 without a payload, a 403 cross-site and an erasure that
//! keeps another account's evidence.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::provision::DEFAULT_URL;
use crate::scratch::ScratchDir;

/// Where the guide lives, from the workspace root.
pub const GUIDE: &str = "janitor-axum/src/guide.md";
/// The dependency line the guide's Cargo.toml has, which the scratch crate points at this checkout.
const DEPENDENCY: &str = "janitor-axum = \"0.1\"";

/// The `[profile.dev] debug` of the workspace's `.cargo/config.toml`, given to the guide's crate.
pub const DEV_DEBUG: &str = "line-tables-only";
/// How long the application may take to listen.
const START_TIMEOUT: Duration = Duration::from_secs(30);
/// The account quota the walk-through runs with: dave's sign-in, his five failures, his locked erasure and
/// sign-in and his own browser's sign-in fit, the next one is refused.
const ACCOUNT_QUOTA: u32 = 9;

/// The files of the guide's application.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct App {
    /// The `[dependencies]` the guide lists.
    pub dependencies: String,
    /// `src/main.rs`.
    pub main: String,
    /// `src/sign_in.rs`, from every block the guide introduces as part of it.
    pub sign_in: String,
    /// The variables the guide's `cargo run` line sets (`JANITOR_SECRET`, made up there, aside).
    pub run_env: Vec<(String, String)>,
}

/// Reads the application out of the guide: the `toml` block, and each `rust` block whose introducing paragraph
/// names `src/main.rs` or `src/sign_in.rs`, without the lines rustdoc hides (`# `).
pub fn extract(markdown: &str) -> Result<App, String> {
    let mut dependencies = None;
    let (mut main, mut sign_in) = (String::new(), String::new());
    let mut run_env = None;
    // The paragraph before a block introduces it; a blank line ends a paragraph, the next line starts one.
    let (mut paragraph, mut ended) = (String::new(), false);
    let mut lines = markdown.lines();
    while let Some(line) = lines.next() {
        let Some(info) = line.strip_prefix("```") else {
            if line.trim().is_empty() {
                ended = true;
            } else {
                if ended {
                    paragraph.clear();
                    ended = false;
                }
                paragraph.push_str(line);
                paragraph.push('\n');
            }
            continue;
        };
        let mut code = String::new();
        for line in lines.by_ref() {
            if line.starts_with("```") {
                break;
            }
            if !is_hidden(line) {
                code.push_str(line);
                code.push('\n');
            }
        }
        if info == "toml" && dependencies.is_none() {
            dependencies = Some(code);
        } else if info == "sh" && run_env.is_none() && code.contains("cargo run") {
            run_env = Some(run_variables(&code));
        } else if info.starts_with("rust") {
            if paragraph.contains("`src/main.rs`") {
                main.push_str(&code);
            } else if paragraph.contains("`src/sign_in.rs`") {
                sign_in.push_str(&code);
                sign_in.push('\n');
            }
        }
        paragraph.clear();
    }
    let dependencies = dependencies.ok_or("the guide has no toml block")?;
    if !dependencies.contains(DEPENDENCY) {
        return Err(format!("the guide's Cargo.toml lacks `{DEPENDENCY}`"));
    }
    if main.is_empty() || sign_in.is_empty() {
        return Err("the guide introduces no `src/main.rs` or no `src/sign_in.rs` block".into());
    }
    Ok(App {
        dependencies,
        main,
        sign_in,
        run_env: run_env.ok_or("the guide has no `cargo run` line")?,
    })
}

/// The `NAME=value` words before `cargo run`, but the secret (the guide makes one up with a command).
fn run_variables(command: &str) -> Vec<(String, String)> {
    let before = command.split("cargo run").next().unwrap_or_default();
    before
        .split_whitespace()
        .filter_map(|word| word.split_once('='))
        .filter(|(name, _)| name.chars().all(|c| c.is_ascii_uppercase() || c == '_'))
        .filter(|(name, _)| *name != "JANITOR_SECRET")
        .map(|(name, value)| (name.to_owned(), value.to_owned()))
        .collect()
}

/// The crates the application's `use` lines name that its Cargo.toml does not list (under either spelling of
/// the name): rustdoc, which compiles the guide with janitor-axum's dev-dependencies, would not notice one.
pub fn unlisted_crates(app: &App) -> Vec<String> {
    let listed = |name: &str| {
        let dashed = name.replace('_', "-");
        app.dependencies.lines().any(|line| {
            line.starts_with(&format!("{name} ")) || line.starts_with(&format!("{dashed} "))
        })
    };
    let mut unlisted: Vec<String> = [&app.main, &app.sign_in]
        .into_iter()
        .flat_map(|code| code.lines())
        .filter_map(|line| line.trim_start().strip_prefix("use "))
        .filter_map(|path| path.split("::").next())
        .filter(|root| !["std", "core", "alloc", "crate", "self", "super"].contains(root))
        .filter(|root| !listed(root))
        .map(str::to_owned)
        .collect();
    unlisted.sort();
    unlisted.dedup();
    unlisted
}

/// A line rustdoc compiles but does not show.
fn is_hidden(line: &str) -> bool {
    let line = line.trim_start();
    line == "#" || line.starts_with("# ")
}

/// Builds the guide's application outside the workspace and walks through it on both stores.
pub fn run(root: &Path) -> Result<(), String> {
    let markdown =
        std::fs::read_to_string(root.join(GUIDE)).map_err(|e| format!("{GUIDE}: {e}"))?;
    let app = extract(&markdown)?;
    let unlisted = unlisted_crates(&app);
    if !unlisted.is_empty() {
        return Err(format!(
            "the guide's code uses crates its Cargo.toml does not list: {}",
            unlisted.join(", ")
        ));
    }
    let scratch = Scratch::new()?;
    scratch.write(&app, &root.join("janitor-axum"), &root.join("Cargo.lock"))?;
    let target = root.join("target");
    let binary = scratch.build(&target)?;
    scratch.test(&target)?;
    println!("guide's tests (section 7): passed");
    let run_env: Vec<(&str, &str)> = app
        .run_env
        .iter()
        .map(|(name, value)| (name.as_str(), value.as_str()))
        .collect();
    walk("memory", &binary, &run_env, &["INFO", "stores: in memory"])?;
    let url = std::env::var("DATABASE_URL").unwrap_or_else(|_| DEFAULT_URL.to_owned());
    let schema = format!("janitor_guide_{}", std::process::id());
    let walked = walk(
        "PostgreSQL",
        &binary,
        &[
            run_env.as_slice(),
            &[("DATABASE_URL", url.as_str()), ("JANITOR_SCHEMA", &schema)],
        ]
        .concat(),
        &["stores: PostgreSQL", "sslmode="],
    );
    let dropped = drop_schema(&url, &schema);
    walked.and(dropped)
}

/// A crate in a fresh temporary directory, removed when dropped.
struct Scratch {
    dir: ScratchDir,
}

impl Scratch {
    fn new() -> Result<Scratch, String> {
        let dir = ScratchDir::new("guide")?;
        std::fs::create_dir(dir.join("src")).map_err(|e| format!("{}: {e}", dir.display()))?;
        Ok(Scratch { dir })
    }

    /// The guide's files, with its janitor-axum dependency pointed at `crate_dir`, and the workspace's lockfile
    /// (`lockfile`): every dependency the workspace locks builds at the version the tests ran with, so a release
    /// upstream cannot turn this step red (the newest versions have a check of their own, `cargo xtask newest`).
    fn write(&self, app: &App, crate_dir: &Path, lockfile: &Path) -> Result<(), String> {
        std::fs::copy(lockfile, self.dir.join("Cargo.lock"))
            .map_err(|e| format!("{}: {e}", lockfile.display()))?;
        let dependency = format!(
            "janitor-axum = {{ path = {:?} }}",
            crate_dir.display().to_string()
        );
        let manifest = format!(
            "[package]\nname = \"guide-app\"\nversion = \"0.1.0\"\nedition = \"2021\"\npublish = false\n\n\
             [workspace]\n\n{}",
            app.dependencies.replacen(DEPENDENCY, &dependency, 1)
        );
        for (path, text) in [
            ("Cargo.toml", manifest.as_str()),
            ("src/main.rs", &app.main),
            ("src/sign_in.rs", &app.sign_in),
        ] {
            std::fs::write(self.dir.join(path), text).map_err(|e| format!("{path}: {e}"))?;
        }
        Ok(())
    }

    /// `cargo build`, refusing any warning of the guide's own code.
    fn build(&self, target: &Path) -> Result<PathBuf, String> {
        self.cargo("build", target)?;
        Ok(target.join("debug").join("guide-app"))
    }

    /// `cargo test`: the guide's own tests (its section 7).
    fn test(&self, target: &Path) -> Result<(), String> {
        self.cargo("test", target)
    }

    /// `cargo <command> --quiet` in the crate, failing on an error or on any warning; the dependencies' build
    /// is shared with the workspace's target directory.
    fn cargo(&self, command: &str, target: &Path) -> Result<(), String> {
        let output = crate::cargo::command()
            .args([command, "--quiet"])
            .current_dir(&self.dir)
            .env("CARGO_TARGET_DIR", target)
            // The workspace's debug setting (.cargo/config.toml), which a crate outside it does not read:
            // with it the guide reuses the dependencies the tests built instead of building them again.
            .env("CARGO_PROFILE_DEV_DEBUG", DEV_DEBUG)
            .output()
            .map_err(|e| format!("cargo {command}: {e}"))?;
        let stderr = String::from_utf8_lossy(&output.stderr);
        if !output.status.success() || stderr.contains("warning") {
            let stdout = String::from_utf8_lossy(&output.stdout);
            return Err(format!(
                "cargo {command} of the guide's application failed or warned:\n{stdout}{stderr}"
            ));
        }
        Ok(())
    }
}

/// The application as a child process, killed when dropped (on every path, failures included), with the file
/// its standard error (its log) goes to, removed then too.
struct Served {
    child: Child,
    address: SocketAddr,
    log: PathBuf,
}

impl Served {
    /// What the application has logged so far.
    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_file(&self.log);
    }
}

/// Starts the application with a fresh secret and `extra` (the guide's own variables first), on a free loopback port; its log goes to
/// `log`.
fn serve(binary: &Path, extra: &[(&str, &str)], log: PathBuf) -> Result<Served, String> {
    let stderr = std::fs::File::create(&log).map_err(|e| format!("{}: {e}", log.display()))?;
    let address = TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map_err(|e| format!("no free port: {e}"))?;
    let mut command = Command::new(binary);
    // Only what the walk-through sets: nothing of the caller's JANITOR_* or DATABASE_URL leaks in.
    for (name, _) in std::env::vars() {
        if name.starts_with("JANITOR_") || name == "DATABASE_URL" {
            command.env_remove(name);
        }
    }
    command
        .env("JANITOR_SECRET", secret()?)
        .env("JANITOR_QUOTA_ACCOUNT", ACCOUNT_QUOTA.to_string())
        .env("ADDR", address.to_string())
        .envs(extra.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(stderr);
    let child = command
        .spawn()
        .map_err(|e| format!("{}: {e}", binary.display()))?;
    let mut served = Served {
        child,
        address,
        log,
    };
    let started = Instant::now();
    while TcpStream::connect(address).is_err() {
        if let Ok(Some(status)) = served.child.try_wait() {
            return Err(format!(
                "the guide's application exited at start ({status}):\n{}",
                served.log()
            ));
        }
        if started.elapsed() > START_TIMEOUT {
            return Err(format!(
                "the guide's application did not listen within {START_TIMEOUT:?}"
            ));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Ok(served)
}

/// A fresh 64-hex-digit secret from the system's random source.
fn secret() -> Result<String, String> {
    let mut bytes = [0u8; 32];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .map_err(|e| format!("/dev/urandom: {e}"))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// One answer: status, headers (lower-case names) and body.
struct Answer {
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
}

impl Answer {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// One HTTP/1.1 request on its own connection.
fn send(
    address: SocketAddr,
    method: &str,
    path: &str,
    body: &str,
    headers: &[String],
) -> Result<Answer, String> {
    let mut stream = TcpStream::connect(address).map_err(|e| format!("connect: {e}"))?;
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .map_err(|e| e.to_string())?;
    let extra: String = headers.iter().map(|h| format!("{h}\r\n")).collect();
    let request = format!(
        "{method} {path} HTTP/1.1\r\nHost: {address}\r\nContent-Type: application/json\r\n{extra}\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream
        .write_all(request.as_bytes())
        .map_err(|e| format!("write: {e}"))?;
    let mut reply = String::new();
    stream
        .read_to_string(&mut reply)
        .map_err(|e| format!("read: {e}"))?;
    let (head, body) = reply
        .split_once("\r\n\r\n")
        .ok_or("an answer without a head")?;
    let mut lines = head.lines();
    let status = lines
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .and_then(|s| s.parse().ok())
        .ok_or("an answer without a status")?;
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    Ok(Answer {
        status,
        headers,
        body: body.to_owned(),
    })
}

/// Fails with `what` unless `ok`.
fn expect(ok: bool, what: &str) -> Result<(), String> {
    if ok {
        Ok(())
    } else {
        Err(what.to_owned())
    }
}

/// Serves the application and walks through the guide's promises; prints one line per store. `said` are lines
/// its log must hold by the end: what the library says at start reaches the operator only through the
/// subscriber the guide's `main` installs.
fn walk(stores: &str, binary: &Path, extra: &[(&str, &str)], said: &[&str]) -> Result<(), String> {
    let log = std::env::temp_dir().join(format!(
        "janitor-guide-{}-{}.log",
        std::process::id(),
        stores.to_lowercase()
    ));
    let served = serve(binary, extra, log)?;
    let walker = Walker {
        at: served.address,
        stores,
    };
    let cookies = walker.sign_ins()?;
    let retry_after = walker.locked(&cookies)?;
    let metrics = walker.request("GET", "/metrics", "", &[])?;
    let counted = metrics
        .body
        .contains("janitor_refusals_total{reason=\"cross_origin\"} 1");
    expect(
        counted,
        &walker.fail("/metrics counts the cross-site refusal", &metrics),
    )?;
    let log = served.log();
    if let Some(missing) = said.iter().find(|line| !log.contains(*line)) {
        return Err(format!(
            "{stores}: the log does not say {missing:?}:\n{log}"
        ));
    }
    println!(
        "guide on {stores}: sign-ins 200, five failures 401, cross-site 403, erasure 200 (cookie cleared), \
         the locked account's erasure and sign-in 403 (challenge), its owner's browser 200, its quota spent \
         without a payload (429, Retry-After {retry_after})"
    );
    Ok(())
}

/// Ada's browser's payload.
const ADAS_BROWSER: &str =
    r#"{"signals":{"userAgent":"Mozilla/5.0 Chrome/131.0","timezone":"Europe/Paris"}}"#;
/// Dave's browser's payload: another browser than ada's.
const DAVES_BROWSER: &str =
    r#"{"signals":{"userAgent":"Mozilla/5.0 Firefox/133.0","timezone":"Europe/Oslo"}}"#;

/// The `Cookie:` lines of the browsers that signed in.
struct Cookies {
    ada: String,
    dave: String,
}

/// The walk-through's requests to the served application.
struct Walker<'a> {
    at: SocketAddr,
    stores: &'a str,
}

impl Walker<'_> {
    fn request(
        &self,
        method: &str,
        path: &str,
        body: &str,
        headers: &[String],
    ) -> Result<Answer, String> {
        send(self.at, method, path, body, headers)
    }

    /// A sign-in form, with the browser's payload when given.
    fn login(
        &self,
        user: &str,
        password: &str,
        browser: Option<&str>,
        headers: &[String],
    ) -> Result<Answer, String> {
        let visitor = browser.map_or_else(String::new, |p| format!(r#","visitor":{p}"#));
        let body = format!(r#"{{"username":"{user}","password":"{password}"{visitor}}}"#);
        self.request("POST", "/login", &body, headers)
    }

    fn erase(&self, user: &str, password: &str, headers: &[String]) -> Result<Answer, String> {
        let body = format!(r#"{{"username":"{user}","password":"{password}"}}"#);
        self.request("POST", "/account/erase", &body, headers)
    }

    fn fail(&self, step: &str, answer: &Answer) -> String {
        format!("{}: {step}: {} {}", self.stores, answer.status, answer.body)
    }

    /// A successful sign-in from a browser: its `Cookie:` line.
    fn signed_in(&self, user: &str, password: &str, browser: &str) -> Result<String, String> {
        let answer = self.login(user, password, Some(browser), &[])?;
        let step = format!("{user}'s sign-in");
        expect(answer.status == 200, &self.fail(&step, &answer))?;
        // The guide's command runs in development mode with a cookie a browser keeps on plain HTTP.
        let set = answer.header("set-cookie").unwrap_or_default();
        let secure = set
            .split(';')
            .any(|attribute| attribute.trim().eq_ignore_ascii_case("secure"));
        expect(
            !secure,
            &self.fail("the guide's command sets a Secure cookie", &answer),
        )?;
        set.split(';')
            .next()
            .filter(|c| c.starts_with("__visitor="))
            .map(|c| format!("Cookie: {c}"))
            .ok_or_else(|| self.fail("a sign-in with a payload sets no cookie", &answer))
    }

    /// Ada and dave sign in from their browsers, dave's account fails five times from ada's (which his account
    /// does not know), and another site's page is refused.
    fn sign_ins(&self) -> Result<Cookies, String> {
        let ada = self.signed_in("ada", "correct horse battery staple", ADAS_BROWSER)?;
        let dave = self.signed_in("dave", "dave's passphrase", DAVES_BROWSER)?;
        for attempt in 1..=5 {
            let failed = self.login(
                "dave",
                "guess",
                Some(ADAS_BROWSER),
                std::slice::from_ref(&ada),
            )?;
            let step = format!("dave's failure {attempt}");
            expect(failed.status == 401, &self.fail(&step, &failed))?;
        }
        let origin = ["Origin: https://attacker.example".to_owned()];
        let cross = self.login("ada", "correct horse battery staple", None, &origin)?;
        let refused = cross.status == 403 && !cross.body.contains("challenge");
        expect(refused, &self.fail("a cross-site sign-in", &cross))?;
        Ok(Cookies { ada, dave })
    }

    /// Ada erases her account; dave's account stays locked for unknown browsers (its erasure too) but not for
    /// his own; then his quota refuses a client without a payload. The quota's Retry-After.
    fn locked(&self, cookies: &Cookies) -> Result<String, String> {
        let ada = std::slice::from_ref(&cookies.ada);
        let erased = self.erase("ada", "correct horse battery staple", ada)?;
        let cleared = erased
            .header("set-cookie")
            .is_some_and(|c| c.starts_with("__visitor=;"));
        expect(
            erased.status == 200 && cleared,
            &self.fail("ada's erasure", &erased),
        )?;
        // Erasure checks a password too: through the same defence (and "Dave" is dave), never a way around it.
        let oracle = self.erase("Dave", "dave's passphrase", &[])?;
        let step = "dave's erasure while he is locked";
        expect(challenged(&oracle), &self.fail(step, &oracle))?;
        let locked = self.login("dave", "dave's passphrase", None, &[])?;
        let step = "dave is still locked after ada's erasure";
        expect(challenged(&locked), &self.fail(step, &locked))?;
        let dave = std::slice::from_ref(&cookies.dave);
        let own = self.login("dave", "dave's passphrase", Some(DAVES_BROWSER), dave)?;
        let known = own.status == 200 && own.body.contains(r#""knownBrowser":true"#);
        expect(known, &self.fail("dave's own browser signs in", &own))?;
        let spent = self.login("dave", "x", None, &[])?;
        let step = "dave's quota refuses a sign-in without a payload";
        let retry_after = spent.header("retry-after").filter(|_| spent.status == 429);
        retry_after
            .map(str::to_owned)
            .ok_or_else(|| self.fail(step, &spent))
    }
}

/// A refusal that asks for a second factor because the account is locked for the browser that asked: 403, a
/// `challenge` body with its reason, and when the lock ends.
fn challenged(answer: &Answer) -> bool {
    let body: serde_json::Value = serde_json::from_str(&answer.body).unwrap_or_default();
    answer.status == 403
        && body["challenge"] == true
        && body["reasons"] == serde_json::json!(["locked_for_unknown_browsers"])
        && answer.header("retry-after").is_some()
}

/// Drops the walk-through's schema.
fn drop_schema(url: &str, schema: &str) -> Result<(), String> {
    let status = Command::new("psql")
        .args([
            "-q",
            url,
            "-c",
            &format!("DROP SCHEMA IF EXISTS {schema} CASCADE"),
        ])
        .env("PGOPTIONS", "-c client_min_messages=warning")
        .status()
        .map_err(|e| format!("psql: {e}"))?;
    expect(
        status.success(),
        &format!("psql could not drop schema {schema}"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_application_is_the_visible_code_of_the_blocks_the_prose_assigns() {
        let guide = "# Guide\n\n```toml\n[dependencies]\njanitor-axum = \"0.1\"\n```\n\n`src/main.rs`:\n\n\
                     ```rust,no_run\n# use hidden;\nfn main() {}\n```\n\nSomething else:\n\n```rust\nfn other() {}\n```\n\n\
                     Then `src/sign_in.rs`:\n\n```rust\npub fn routes() {}\n#\n```\n\nThe rest of `src/sign_in.rs`:\n\n\
                     ```rust\n# fn hidden() {}\nfn erase() {}\n```\n\nRun it:\n\n\
                     ```sh\nJANITOR_SECRET=$(openssl rand -hex 32) JANITOR_ENVIRONMENT=development cargo run\n```\n";
        let app = extract(guide).unwrap();
        assert_eq!(app.main, "fn main() {}\n");
        assert_eq!(app.sign_in, "pub fn routes() {}\n\nfn erase() {}\n\n");
        assert_eq!(
            app.run_env,
            [("JANITOR_ENVIRONMENT".into(), "development".into())]
        );
        assert!(app.dependencies.contains(DEPENDENCY));
        assert!(extract("```toml\nserde = \"1\"\n```\n").is_err());
    }

    #[test]
    fn the_committed_guide_yields_an_application() {
        let root = crate::capacity::workspace_root();
        let app = extract(&std::fs::read_to_string(root.join(GUIDE)).unwrap()).unwrap();
        assert!(app.main.contains("mod sign_in;") && app.main.contains("fn main()"));
        assert!(app.sign_in.contains("pub fn routes(") && app.sign_in.contains("async fn erase("));
        assert!(
            app.sign_in.contains("mod tests") && app.dependencies.contains("[dev-dependencies]")
        );
        assert_eq!(unlisted_crates(&app), Vec::<String>::new());
        // Without a subscriber the library's warnings (a misspelled variable, the memory stores in
        // production) go nowhere.
        assert!(
            app.main.contains("tracing_subscriber::fmt()") && app.main.contains("EnvFilter"),
            "the guide's main installs no log subscriber"
        );
        // install_recorder leaves the upkeep to the caller; without it the recorder grows until a scrape.
        assert!(
            app.main.contains(".run_upkeep()"),
            "the guide's main runs no recorder upkeep"
        );
    }

    #[test]
    fn a_crate_the_code_uses_must_be_listed() {
        let app = |dependencies: &str| App {
            dependencies: dependencies.to_owned(),
            main: "use std::io;\nuse tracing_subscriber::EnvFilter;\nuse crate::x;\n".to_owned(),
            sign_in: "    use serde::Deserialize;\n".to_owned(),
            run_env: Vec::new(),
        };
        assert_eq!(
            unlisted_crates(&app("serde = \"1\"\n")),
            ["tracing_subscriber"]
        );
        let listed = "serde = \"1\"\ntracing-subscriber = \"0.3\"\n";
        assert!(unlisted_crates(&app(listed)).is_empty());
    }
}
