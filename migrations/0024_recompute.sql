-- 0024: recomputing a project's counters from its raw calls (src/worker/rollup/recompute.ts,
-- docs/migrations.md "Recomputing counters"). No stored row changes.
--
-- `recomputes`: one row per project whose recompute was asked for (POST
-- /v1/admin/projects/:id/recompute, or a migration marking projects), with its progress. While its
-- state is not 'done' the rollup leaves that project's waiting requests in call_batches and runs the
-- recompute's steps instead; `step` is the step being run (one JSON value written by its first
-- statement and read by the others of its transaction, like rollup_state.calls_chunk).
CREATE TABLE recomputes (
  project_id TEXT NOT NULL PRIMARY KEY,
  requested_at_ms INTEGER NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('clearing', 'counting', 'hours', 'pairs', 'done')),
  kept_from_ms INTEGER,
  from_ms INTEGER,
  cursor TEXT NOT NULL DEFAULT '[]',
  step TEXT,
  steps INTEGER NOT NULL DEFAULT 0,
  sessions INTEGER NOT NULL DEFAULT 0,
  calls INTEGER NOT NULL DEFAULT 0,
  hour_rows INTEGER NOT NULL DEFAULT 0,
  pair_rows INTEGER NOT NULL DEFAULT 0,
  finished_at_ms INTEGER
) WITHOUT ROWID;

-- The figures recomputed from call_state, per hour row (the session calls' part of it), summed over
-- the steps that count, then written over the hour rows and deleted.
CREATE TABLE recompute_hours (
  project_id TEXT NOT NULL,
  hour_start_ms INTEGER NOT NULL,
  tool_name TEXT NOT NULL,
  client_name TEXT NOT NULL,
  retries INTEGER NOT NULL,
  chains INTEGER NOT NULL,
  first_ok INTEGER NOT NULL,
  good INTEGER NOT NULL,
  PRIMARY KEY (project_id, hour_start_ms, tool_name, client_name)
) WITHOUT ROWID;

-- The pairs recomputed from call_state, per (day, client) and pair key (db/tuples.ts PAIR_KEY).
CREATE TABLE recompute_pairs (
  project_id TEXT NOT NULL,
  day_start_ms INTEGER NOT NULL,
  client_name TEXT NOT NULL,
  pair TEXT NOT NULL,
  pair_count INTEGER NOT NULL,
  PRIMARY KEY (project_id, day_start_ms, client_name, pair)
) WITHOUT ROWID;
