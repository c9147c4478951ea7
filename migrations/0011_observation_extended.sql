-- The extended client signals an observation came with (available screen area, exact versions, Intl settings,
-- display preferences), for applications that enable them (docs/accuracy.md, "Extended client signals"), in
-- the library's own JSON form. NULL when the option is off, and in rows other implementations write: they
-- name their columns, so they keep working. A nullable column without a default is added without rewriting
-- the table.
ALTER TABLE observations ADD COLUMN IF NOT EXISTS extended_signals JSONB;

-- The save of migration 0010 with the extended signals. The ten- and eleven-argument forms stay, so instances
-- of earlier releases keep saving while a rolling upgrade runs.
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
  p_touch BOOLEAN,
  p_network TEXT,
  p_extended JSONB
) RETURNS BIGINT
LANGUAGE plpgsql
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
  INSERT INTO observations
    (visitor_id, seen_at, platform, browser, timezone, webgl_renderer, signals_json, network_digest,
     extended_signals)
  VALUES (p_visitor, p_now, p_platform, p_browser, p_timezone, p_renderer, p_signals, p_network, p_extended);
  DELETE FROM observations
  WHERE visitor_id = p_visitor AND (seen_at < p_cutoff OR id IN (
    SELECT id FROM observations WHERE visitor_id = p_visitor
    ORDER BY seen_at DESC, id DESC OFFSET p_keep));
  GET DIAGNOSTICS pruned = ROW_COUNT;
  RETURN pruned;
END
$$;
