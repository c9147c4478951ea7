-- The compared features of each observation, for the missing-cookie candidate lookup: the fourteen values the
-- similarity reads, as text, in a fixed order (absent = NULL; numbers and the languages array as PostgreSQL
-- spells their JSON). The lookup reads this small array instead of the whole signals_json, which costs the
-- server a jsonb-to-text conversion and the client a JSON parse for each of its ~600 rows.
--
-- Computed by PostgreSQL from signals_json, so rows that any implementation inserts get it without naming it,
-- and stay valid. Adding it to an existing table rewrites the table and its indexes under an exclusive lock:
-- run it at a quiet time on a big table (see docs/storage.md for the measured cost).
ALTER TABLE observations ADD COLUMN IF NOT EXISTS lookup_features TEXT[] GENERATED ALWAYS AS (ARRAY[
  signals_json #>> '{platform}',
  signals_json #>> '{browser}',
  signals_json #>> '{timezone}',
  signals_json #>> '{languages}',
  signals_json #>> '{screen,width}',
  signals_json #>> '{screen,height}',
  signals_json #>> '{viewport,width}',
  signals_json #>> '{viewport,height}',
  signals_json #>> '{hardware,hardwareConcurrency}',
  signals_json #>> '{hardware,deviceMemory}',
  signals_json #>> '{hardware,maxTouchPoints}',
  signals_json #>> '{graphics,webglVendor}',
  signals_json #>> '{graphics,webglRenderer}',
  signals_json #>> '{automation,webdriver}'
]) STORED;
