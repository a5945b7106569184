-- 0027: moving a project between databases online (SPEC §7; docs/scaling.md "Moving a project").
-- Every database gets these tables (every migration goes to every database); `moves` is read only
-- in the first one (the directory's), `project_holds` and `move_cursors` in the databases a move
-- reads from and writes to. No stored row changes.

-- One row per move, in the first database: where it stands, what it copied, and its lease (the
-- job that runs its steps holds it, so two jobs never run the same move's steps at once).
CREATE TABLE moves (
  move_id TEXT PRIMARY KEY,
  project_id TEXT NOT NULL,
  -- Binding names of the databases (wrangler.toml): from `source` to `target`.
  source TEXT NOT NULL,
  target TEXT NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('copying', 'switching', 'draining', 'done', 'failed')),
  -- The step the move is at within its state (moves/steps.ts): `hold`, `settle`, `copy`, `guard`, `switch`, `grace`,
  -- `drain`, `release`, `cleanup`, `rollback`, `finished`; with `step_table`, the table it works on.
  phase TEXT NOT NULL,
  step_table TEXT,
  -- The source's calls_seq when the move switched: the target numbers the project's calls above it.
  source_calls_seq INTEGER,
  -- Rows copied per table (JSON object), steps run, and the most rows one step wrote.
  counts_json TEXT NOT NULL DEFAULT '{}',
  steps INTEGER NOT NULL DEFAULT 0,
  max_step_rows INTEGER NOT NULL DEFAULT 0,
  -- Consecutive failed steps; the last failure's text.
  failures INTEGER NOT NULL DEFAULT 0,
  error TEXT,
  created_at_ms INTEGER NOT NULL,
  -- When the phase's wait ends (`settle`, `grace`, or a retry after a failed step).
  wait_until_ms INTEGER NOT NULL DEFAULT 0,
  switched_at_ms INTEGER,
  finished_at_ms INTEGER,
  lease_until_ms INTEGER NOT NULL DEFAULT 0
);
-- At most one unfinished move per project (POST /v1/admin/projects/:id/move answers 409).
CREATE UNIQUE INDEX moves_running ON moves (project_id) WHERE finished_at_ms IS NULL;

-- A project a move holds in this database: the rollup, the alert evaluation and delivery leave its
-- rows as they are (`source`: being copied away; `target`: being copied in; `leaving`: the source's
-- rows being deleted), and the admin's alert edits are refused in the source (triggers below).
CREATE TABLE project_holds (
  project_id TEXT PRIMARY KEY,
  move_id TEXT NOT NULL,
  role TEXT NOT NULL CHECK (role IN ('source', 'target', 'leaving')),
  -- This database's startups_seq and agreements_seq watermarks when the hold began, written with it:
  -- the project's raw startups and verdicts numbered above them were not folded in here; and its
  -- tool_versions_seq: the startups above it were not counted in tool_versions yet.
  startups_seq INTEGER NOT NULL,
  agreements_seq INTEGER NOT NULL,
  tool_versions_seq INTEGER NOT NULL
) WITHOUT ROWID;

-- How far a move has written each table into this database (the target): the key of the last row
-- copied, written in the same transaction as the rows, so a step run twice never copies twice.
CREATE TABLE move_cursors (
  move_id TEXT NOT NULL,
  name TEXT NOT NULL,
  cursor_json TEXT NOT NULL,
  rows INTEGER NOT NULL,
  PRIMARY KEY (move_id, name)
) WITHOUT ROWID;

-- An alert edit of a project being copied away would be lost with the source's rows: refused here
-- in the same transaction, whatever path it comes by (the admin API answers 409 before it gets here).
CREATE TRIGGER alert_rules_insert_held BEFORE INSERT ON alert_rules
  WHEN EXISTS (SELECT 1 FROM project_holds WHERE project_id = NEW.project_id AND role = 'source')
  BEGIN SELECT RAISE(ABORT, 'project_moving'); END;
CREATE TRIGGER alert_rules_update_held BEFORE UPDATE ON alert_rules
  WHEN EXISTS (SELECT 1 FROM project_holds WHERE project_id = OLD.project_id AND role = 'source')
  BEGIN SELECT RAISE(ABORT, 'project_moving'); END;
CREATE TRIGGER alert_rules_delete_held BEFORE DELETE ON alert_rules
  WHEN EXISTS (SELECT 1 FROM project_holds WHERE project_id = OLD.project_id AND role = 'source')
  BEGIN SELECT RAISE(ABORT, 'project_moving'); END;
CREATE TRIGGER alert_destinations_insert_held BEFORE INSERT ON alert_destinations
  WHEN EXISTS (SELECT 1 FROM project_holds WHERE project_id = NEW.project_id AND role = 'source')
  BEGIN SELECT RAISE(ABORT, 'project_moving'); END;
CREATE TRIGGER alert_destinations_update_held BEFORE UPDATE ON alert_destinations
  WHEN EXISTS (SELECT 1 FROM project_holds WHERE project_id = OLD.project_id AND role = 'source')
  BEGIN SELECT RAISE(ABORT, 'project_moving'); END;
CREATE TRIGGER alert_destinations_delete_held BEFORE DELETE ON alert_destinations
  WHEN EXISTS (SELECT 1 FROM project_holds WHERE project_id = OLD.project_id AND role = 'source')
  BEGIN SELECT RAISE(ABORT, 'project_moving'); END;
