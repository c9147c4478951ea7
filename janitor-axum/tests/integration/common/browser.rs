//! Headless Chromium for the browser tests, driven through `chromedriver` by the fantoccini WebDriver client:
//! fresh profiles, navigation, scripts and screenshots.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use fantoccini::wd::TimeoutConfiguration;
use fantoccini::{Client, ClientBuilder};
use hyper_util::client::legacy::connect::HttpConnector;
use serde_json::{json, Map, Value};

const CHROMIUM: &str = "/usr/bin/chromium";
const CHROMEDRIVER: &str = "/usr/bin/chromedriver";
const INSTALL: &str = "install them with: \
    sudo apt-get install -y --no-install-recommends chromium chromium-driver";

/// One running `chromedriver`; killed when dropped, after ending the sessions a failed test left open (the
/// browsers would outlive the driver otherwise).
pub struct Driver {
    child: Child,
    port: u16,
    open: Mutex<Vec<(String, PathBuf)>>,
}

impl Driver {
    /// Starts `chromedriver` on a free loopback port and waits until it is ready. Fails (never skips) when the
    /// browser or the driver is missing.
    pub async fn start() -> Driver {
        for binary in [CHROMIUM, CHROMEDRIVER] {
            assert!(
                Path::new(binary).exists(),
                "the browser tests need {binary}: {INSTALL}"
            );
        }
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let child = Command::new(CHROMEDRIVER)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {CHROMEDRIVER} ({e}): {INSTALL}"));
        let driver = Driver {
            child,
            port,
            open: Mutex::new(Vec::new()),
        };
        let deadline = Instant::now() + Duration::from_secs(20);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "chromedriver did not start");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        driver
    }

    /// A new headless session on a fresh, empty profile (no cookies, no cache).
    pub async fn session(&self) -> Session<'_> {
        static PROFILES: AtomicUsize = AtomicUsize::new(0);
        let profile = std::env::temp_dir().join(format!(
            "janitor-browser-{}-{}",
            std::process::id(),
            PROFILES.fetch_add(1, Ordering::SeqCst)
        ));
        let _ = std::fs::remove_dir_all(&profile);
        std::fs::create_dir_all(&profile).expect("a profile directory");
        let mut capabilities = Map::new();
        capabilities.insert("browserName".into(), json!("chrome"));
        capabilities.insert(
            "goog:chromeOptions".into(),
            json!({
                "binary": CHROMIUM,
                "args": [
                    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                    "--disable-component-update", "--disable-sync", "--disable-quic", "--no-first-run",
                    "--window-size=1000,700",
                    format!("--user-data-dir={}", profile.display()),
                ],
            }),
        );
        let client = ClientBuilder::new(HttpConnector::new())
            .capabilities(capabilities)
            .connect(&format!("http://127.0.0.1:{}", self.port))
            .await
            .unwrap_or_else(|e| panic!("no browser session: {e}"));
        let id = client
            .session_id()
            .await
            .expect("the session answers")
            .expect("a session id");
        self.open
            .lock()
            .unwrap()
            .push((id.clone(), profile.clone()));
        client
            .update_timeouts(TimeoutConfiguration::new(
                Some(Duration::from_secs(60)),
                Some(Duration::from_secs(30)),
                None,
            ))
            .await
            .expect("timeouts");
        Session {
            driver: self,
            client,
            id,
            profile,
        }
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        let open = std::mem::take(&mut *self.open.lock().unwrap_or_else(|e| e.into_inner()));
        for (id, profile) in open {
            // Blocking and minimal: this runs while a failed test unwinds, outside any runtime guarantee.
            if let Ok(mut stream) = TcpStream::connect(("127.0.0.1", self.port)) {
                let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
                let request = format!(
                    "DELETE /session/{id} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                );
                if stream.write_all(request.as_bytes()).is_ok() {
                    let _ = stream.read_to_end(&mut Vec::new());
                }
            }
            let _ = std::fs::remove_dir_all(profile);
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One browser session; call [`close`](Self::close) at the end.
pub struct Session<'a> {
    driver: &'a Driver,
    client: Client,
    id: String,
    profile: PathBuf,
}

impl Session<'_> {
    /// Opens `url` and waits for its load event.
    pub async fn navigate(&self, url: &str) {
        self.client
            .goto(url)
            .await
            .unwrap_or_else(|e| panic!("navigating to {url}: {e}"));
    }

    /// Runs `script` as a function body with `args`; its return value.
    pub async fn execute(&self, script: &str, args: Value) -> Value {
        self.client
            .execute(script, arguments(args))
            .await
            .unwrap_or_else(|e| panic!("script failed: {e}"))
    }

    /// Runs `script` as a function body whose last argument is the callback that ends it; the value passed to
    /// the callback.
    pub async fn execute_async(&self, script: &str, args: Value) -> Value {
        self.client
            .execute_async(script, arguments(args))
            .await
            .unwrap_or_else(|e| panic!("asynchronous script failed: {e}"))
    }

    /// Polls `expression` (a JavaScript expression) until it is truthy; its value.
    pub async fn wait_for(&self, expression: &str) -> Value {
        let script = format!("return {expression};");
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let value = self.execute(&script, json!([])).await;
            if !(value.is_null() || value == false || value == "") {
                return value;
            }
            assert!(
                Instant::now() < deadline,
                "timed out waiting for {expression}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// A PNG of the viewport.
    pub async fn screenshot(&self) -> Vec<u8> {
        self.client.screenshot().await.expect("a screenshot")
    }

    /// Ends the session and removes its profile.
    pub async fn close(self) {
        let _ = self.client.close().await;
        let _ = std::fs::remove_dir_all(&self.profile);
        self.driver
            .open
            .lock()
            .unwrap()
            .retain(|(id, _)| *id != self.id);
    }
}

/// A JSON array of arguments as the list WebDriver takes.
fn arguments(args: Value) -> Vec<Value> {
    match args {
        Value::Array(values) => values,
        Value::Null => Vec::new(),
        other => vec![other],
    }
}
