//! Identifies one sample payload twice on the in-memory store and prints both results.
//!
//! Run with: `cargo run -p janitor-core --example identify`

use janitor_core::{Engine, EngineConfig, MemoryVisitorStore, Retention, VisitorPayload};

const SAMPLE: &str = r#"{"signals": {
    "userAgent": "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 Chrome/130.0.0.0 Safari/537.36",
    "platform": "MacIntel",
    "languages": ["en-US", "he"],
    "timezone": "Asia/Jerusalem",
    "screen": {"width": 1440, "height": 900, "colorDepth": 24, "pixelRatio": 2},
    "viewport": {"width": 1280, "height": 720},
    "hardware": {"hardwareConcurrency": 8, "deviceMemory": 8, "maxTouchPoints": 0},
    "automation": {"webdriver": false},
    "graphics": {"webglVendor": "WebKit", "webglRenderer": "WebKit WebGL"}
}}"#;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let runtime = tokio::runtime::Builder::new_current_thread().build()?;
    runtime.block_on(async {
        let engine = Engine::new(
            MemoryVisitorStore::new(Retention::default()),
            EngineConfig::default(),
        );
        let payload = VisitorPayload::from_slice(SAMPLE.as_bytes())?;

        let first = engine.identify(&payload, None).await?;
        println!("first visit:  {}", serde_json::to_string(&first.identity)?);

        // The browser returns the id in its `__visitor` cookie.
        let second = engine
            .identify(&payload, Some(&first.identity.visitor_id))
            .await?;
        println!("second visit: {}", serde_json::to_string(&second.identity)?);

        // Cookie cleared: the same device is recognised by similarity.
        let third = engine.identify(&payload, None).await?;
        println!("cookie lost:  {}", serde_json::to_string(&third.identity)?);
        Ok(())
    })
}
