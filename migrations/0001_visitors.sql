-- Visitors and their observations, in the Janitor 0.7 layout so that instances written in other languages can
-- share the tables. Every statement tolerates objects that such an instance created already (same names, same
-- definitions). Times are epoch milliseconds.

CREATE TABLE IF NOT EXISTS visitors (
  id TEXT PRIMARY KEY,
  created_at BIGINT NOT NULL,
  last_seen_at BIGINT NOT NULL
);

CREATE TABLE IF NOT EXISTS observations (
  id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  visitor_id TEXT NOT NULL REFERENCES visitors(id) ON DELETE CASCADE,
  seen_at BIGINT NOT NULL,
  platform TEXT,
  browser TEXT,
  timezone TEXT,
  webgl_renderer TEXT,
  signals_json JSONB NOT NULL
);

-- One index per candidate probe family, each ending in seen_at so that
-- `WHERE <keys> AND seen_at >= cutoff ORDER BY seen_at DESC LIMIT 101` reads at most 101 index entries.
-- platform + browser + screen width + screen height + hardwareConcurrency
CREATE INDEX IF NOT EXISTS idx_observation_screen_hardware ON observations (
  platform, browser, (signals_json #>> '{screen,width}'), (signals_json #>> '{screen,height}'),
  (signals_json #>> '{hardware,hardwareConcurrency}'), seen_at DESC
);
-- platform + browser + screen width + screen height + timezone
CREATE INDEX IF NOT EXISTS idx_observation_screen_timezone ON observations (
  platform, browser, (signals_json #>> '{screen,width}'), (signals_json #>> '{screen,height}'), timezone,
  seen_at DESC
);
-- platform + browser + webgl renderer + timezone
CREATE INDEX IF NOT EXISTS idx_observation_graphics_timezone
  ON observations (platform, browser, webgl_renderer, timezone, seen_at DESC);
-- platform + browser
CREATE INDEX IF NOT EXISTS idx_observation_platform_browser ON observations (platform, browser, seen_at DESC);
-- webgl renderer
CREATE INDEX IF NOT EXISTS idx_observation_webgl_renderer ON observations (webgl_renderer, seen_at DESC);
-- timezone + browser
CREATE INDEX IF NOT EXISTS idx_observation_timezone_browser ON observations (timezone, browser, seen_at DESC);

-- A visitor's history, newest first (ties: the later insertion first); also serves the foreign key's cascade.
CREATE INDEX IF NOT EXISTS idx_observation_visitor_seen ON observations (visitor_id, seen_at DESC, id DESC);
-- Expiry, oldest first.
CREATE INDEX IF NOT EXISTS idx_observation_seen ON observations (seen_at);
CREATE INDEX IF NOT EXISTS idx_visitor_seen ON visitors (last_seen_at);
