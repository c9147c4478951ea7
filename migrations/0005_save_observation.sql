-- Saving an observation and pruning its visitor's history to the newest rows, in one call that stays exact
-- under concurrency. One statement cannot be: its prune sees only the rows committed when it began, so two
-- saves for one visitor at once each keep p_keep rows and together leave p_keep + 1. Here the visitor's row is
-- locked first, so saves for one visitor queue behind each other, and each later statement of the function
-- takes a fresh snapshot (READ COMMITTED, a volatile function) that holds the rows of the saves before it.
-- The lock is the touch's own row lock when there is a touch, else a lock that does not conflict with the
-- foreign key's (FOR NO KEY UPDATE). Times are epoch milliseconds; returns the rows pruned.
CREATE OR REPLACE FUNCTION janitor_save_observation(
  p_visitor TEXT,
  p_now BIGINT,
  p_platform TEXT,
  p_browser TEXT,
  p_timezone TEXT,
  p_renderer TEXT,
  p_signals JSONB,
  p_cutoff BIGINT,
  p_keep BIGINT,
  p_touch BOOLEAN
) RETURNS BIGINT
LANGUAGE plpgsql
-- The tables are those of the schema migrated now, whatever search_path the caller's connection has.
SET search_path FROM CURRENT
AS $$
DECLARE
  pruned BIGINT;
BEGIN
  IF p_touch THEN
    UPDATE visitors SET last_seen_at = GREATEST(last_seen_at, p_now) WHERE id = p_visitor;
  ELSE
    PERFORM 1 FROM visitors WHERE id = p_visitor FOR NO KEY UPDATE;
  END IF;
  INSERT INTO observations (visitor_id, seen_at, platform, browser, timezone, webgl_renderer, signals_json)
  VALUES (p_visitor, p_now, p_platform, p_browser, p_timezone, p_renderer, p_signals);
  DELETE FROM observations
  WHERE visitor_id = p_visitor AND (seen_at < p_cutoff OR id IN (
    SELECT id FROM observations WHERE visitor_id = p_visitor
    ORDER BY seen_at DESC, id DESC OFFSET p_keep));
  GET DIAGNOSTICS pruned = ROW_COUNT;
  RETURN pruned;
END
$$;
