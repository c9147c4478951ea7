//! A small W3C WebDriver client for the browser tests: starts `chromedriver` on a free port, opens headless
//! Chromium sessions on fresh profiles, navigates, runs scripts and takes screenshots.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use serde_json::{json, Value};

const CHROMIUM: &str = "/usr/bin/chromium";
const CHROMEDRIVER: &str = "/usr/bin/chromedriver";
const INSTALL: &str = "install them with: \
    sudo apt-get install -y --no-install-recommends chromium chromium-driver";

/// One running `chromedriver`; killed when dropped, after ending the sessions a failed test left open (the
/// browsers would outlive the driver otherwise).
pub struct Driver {
    child: Child,
    port: u16,
    base: String,
    open: Mutex<Vec<(String, PathBuf)>>,
    client: Client<HttpConnector, Full<Bytes>>,
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
            base: format!("http://127.0.0.1:{port}"),
            open: Mutex::new(Vec::new()),
            client: Client::builder(TokioExecutor::new()).build_http(),
        };
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Ok(status) = driver.call("GET", "/status", None).await {
                if status["value"]["ready"] == true {
                    return driver;
                }
            }
            assert!(Instant::now() < deadline, "chromedriver did not start");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// One WebDriver command; the answer's JSON, or the error's JSON as text.
    async fn call(&self, method: &str, path: &str, body: Option<Value>) -> Result<Value, String> {
        let bytes = body.map(|b| b.to_string()).unwrap_or_default();
        let request = http::Request::builder()
            .method(method)
            .uri(format!("{}{path}", self.base))
            .header("content-type", "application/json; charset=utf-8")
            .body(Full::new(Bytes::from(bytes)))
            .map_err(|e| e.to_string())?;
        let response = self
            .client
            .request(request)
            .await
            .map_err(|e| e.to_string())?;
        let ok = response.status().is_success();
        let bytes = response
            .into_body()
            .collect()
            .await
            .map_err(|e| e.to_string())?
            .to_bytes();
        let value: Value = serde_json::from_slice(&bytes).map_err(|e| e.to_string())?;
        if ok {
            Ok(value)
        } else {
            Err(value.to_string())
        }
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
        let capabilities = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {
                "binary": CHROMIUM,
                "args": [
                    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                    "--disable-component-update", "--disable-sync", "--disable-quic", "--no-first-run",
                    "--window-size=1000,700",
                    format!("--user-data-dir={}", profile.display()),
                ],
            },
        }}});
        let answer = self
            .call("POST", "/session", Some(capabilities))
            .await
            .unwrap_or_else(|e| panic!("no browser session: {e}"));
        let id = answer["value"]["sessionId"]
            .as_str()
            .expect("a session id")
            .to_owned();
        self.open
            .lock()
            .unwrap()
            .push((id.clone(), profile.clone()));
        let session = Session {
            driver: self,
            id,
            profile,
        };
        session
            .command(
                "POST",
                "timeouts",
                json!({"script": 60_000, "pageLoad": 30_000}),
            )
            .await;
        session
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
    id: String,
    profile: PathBuf,
}

impl Session<'_> {
    async fn command(&self, method: &str, command: &str, body: Value) -> Value {
        let path = format!("/session/{}/{command}", self.id);
        let body = (method == "POST").then_some(body);
        match self.driver.call(method, &path, body).await {
            Ok(answer) => answer["value"].clone(),
            Err(e) => panic!("WebDriver {command} failed: {e}"),
        }
    }

    /// Opens `url` and waits for its load event.
    pub async fn navigate(&self, url: &str) {
        self.command("POST", "url", json!({ "url": url })).await;
    }

    /// Runs `script` as a function body with `args`; its return value.
    pub async fn execute(&self, script: &str, args: Value) -> Value {
        self.command(
            "POST",
            "execute/sync",
            json!({"script": script, "args": args}),
        )
        .await
    }

    /// Runs `script` as a function body whose last argument is the callback that ends it; the value passed to
    /// the callback.
    pub async fn execute_async(&self, script: &str, args: Value) -> Value {
        self.command(
            "POST",
            "execute/async",
            json!({"script": script, "args": args}),
        )
        .await
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
        let encoded = self.command("GET", "screenshot", Value::Null).await;
        base64_decode(encoded.as_str().expect("base64 text")).expect("valid base64")
    }

    /// Ends the session and removes its profile.
    pub async fn close(self) {
        let path = format!("/session/{}", self.id);
        let _ = self.driver.call("DELETE", &path, None).await;
        let _ = std::fs::remove_dir_all(&self.profile);
        self.driver
            .open
            .lock()
            .unwrap()
            .retain(|(id, _)| *id != self.id);
    }
}

/// Standard base64 (with padding), as WebDriver sends screenshots.
fn base64_decode(text: &str) -> Option<Vec<u8>> {
    let value = |c: u8| -> Option<u32> {
        Some(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        } as u32)
    };
    let bytes: Vec<u8> = text.bytes().filter(|c| !c.is_ascii_whitespace()).collect();
    let mut out = Vec::with_capacity(bytes.len() / 4 * 3);
    for chunk in bytes.chunks(4) {
        let data: Vec<u8> = chunk.iter().copied().filter(|&c| c != b'=').collect();
        let mut n = 0u32;
        for &c in &data {
            n = (n << 6) | value(c)?;
        }
        n <<= 6 * (4 - data.len() as u32);
        let decoded = n.to_be_bytes();
        out.extend_from_slice(&decoded[1..data.len()]);
    }
    Some(out)
}

#[test]
fn base64_round_trip() {
    assert_eq!(base64_decode("aGVsbG8=").unwrap(), b"hello");
    assert_eq!(base64_decode("aGVsbG8h").unwrap(), b"hello!");
    assert_eq!(base64_decode("aGk=").unwrap(), b"hi");
    assert!(base64_decode("a$==").is_none());
}
