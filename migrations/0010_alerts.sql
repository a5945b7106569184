-- 0010: alerts (SPEC §5). Rules and destinations per project, a state per (rule, scope), the outbox
-- of notifications the state changes caused, and every delivery attempt. Every table carries
-- project_id, so deleting a project (src/worker/db/projects.ts) removes its alerts too.
-- Times are UTC epoch milliseconds (`*_ms`).

-- Where notifications go. `url` and `secret` are secrets: answered once at creation, never again,
-- never logged; `url_hint` is what lists show instead.
CREATE TABLE IF NOT EXISTS alert_destinations (
  destination_id TEXT PRIMARY KEY,
  project_id TEXT NOT NULL,
  kind TEXT NOT NULL CHECK (kind IN ('slack', 'discord', 'webhook')),
  name TEXT,
  url TEXT NOT NULL,
  url_hint TEXT NOT NULL,
  -- HMAC-SHA256 key of a `webhook` destination (NULL for slack and discord).
  secret TEXT,
  created_at_ms INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS alert_destinations_by_project ON alert_destinations (project_id);

-- A rule watches either a metric (with op and threshold) or an event, never both.
-- `tool` / `client`: NULL = the whole project, '*' = each tool / client separately, else one name.
CREATE TABLE IF NOT EXISTS alert_rules (
  rule_id TEXT PRIMARY KEY,
  project_id TEXT NOT NULL,
  name TEXT,
  metric TEXT,
  op TEXT CHECK (op IN ('<', '>')),
  threshold REAL,
  event TEXT,
  window_hours INTEGER NOT NULL,
  min_calls INTEGER NOT NULL,
  tool TEXT,
  client TEXT,
  for_evaluations INTEGER NOT NULL,
  repeat_hours INTEGER NOT NULL,
  -- JSON array of destination_id.
  destinations_json TEXT NOT NULL,
  created_at_ms INTEGER NOT NULL,
  updated_at_ms INTEGER NOT NULL,
  CHECK ((metric IS NULL) <> (event IS NULL))
);
CREATE INDEX IF NOT EXISTS alert_rules_by_project ON alert_rules (project_id);

-- The state of one (rule, scope). `scope_key` is the JSON array [tool, client] of the scope
-- (each null when the rule does not split on it). `revision` grows by one at every write and
-- `eval_id` names the evaluation that made it: the outbox insert of that evaluation joins on both,
-- so two overlapping cron runs can never both notify for one transition.
CREATE TABLE IF NOT EXISTS alert_states (
  rule_id TEXT NOT NULL,
  scope_key TEXT NOT NULL,
  project_id TEXT NOT NULL,
  scope_tool TEXT,
  scope_client TEXT,
  state TEXT NOT NULL CHECK (state IN ('ok', 'pending', 'firing')),
  -- Consecutive breaching evaluations so far (0 when ok).
  breaches INTEGER NOT NULL,
  since_ms INTEGER NOT NULL,
  -- The figure of the last evaluation (NULL when it was not evaluated: fewer than min_calls calls).
  value REAL,
  last_evaluated_ms INTEGER NOT NULL,
  -- When the last firing or reminder notification was queued (reminders every repeat_hours).
  last_notified_ms INTEGER,
  revision INTEGER NOT NULL,
  eval_id TEXT NOT NULL,
  PRIMARY KEY (rule_id, scope_key)
);
CREATE INDEX IF NOT EXISTS alert_states_by_project ON alert_states (project_id);

-- Notifications to deliver, one per (transition, destination), written in the same D1 batch as the
-- state change that caused it. `dedupe_key` is unique: one transition never queues twice.
-- `payload_json` holds the facts every destination format is rendered from (SPEC §5 webhook body).
CREATE TABLE IF NOT EXISTS alert_outbox (
  notification_id INTEGER PRIMARY KEY AUTOINCREMENT,
  project_id TEXT NOT NULL,
  rule_id TEXT,
  destination_id TEXT NOT NULL,
  kind TEXT NOT NULL CHECK (kind IN ('firing', 'resolved', 'reminder', 'test')),
  dedupe_key TEXT NOT NULL UNIQUE,
  payload_json TEXT NOT NULL,
  created_at_ms INTEGER NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('pending', 'delivered', 'failed')),
  attempts INTEGER NOT NULL DEFAULT 0,
  -- When the next attempt is due (NULL once delivered or given up).
  next_attempt_at_ms INTEGER,
  delivered_at_ms INTEGER
);
CREATE INDEX IF NOT EXISTS alert_outbox_due ON alert_outbox (next_attempt_at_ms) WHERE status = 'pending';
CREATE INDEX IF NOT EXISTS alert_outbox_by_project ON alert_outbox (project_id, notification_id);

-- Every delivery attempt: HTTP status (NULL when none came back), latency, and the error class
-- (NULL on success): timeout, network, http_4xx, http_5xx, invalid_target, no_destination.
CREATE TABLE IF NOT EXISTS alert_delivery_attempts (
  notification_id INTEGER NOT NULL,
  attempt INTEGER NOT NULL,
  project_id TEXT NOT NULL,
  attempted_at_ms INTEGER NOT NULL,
  http_status INTEGER,
  latency_ms INTEGER NOT NULL,
  error_class TEXT,
  PRIMARY KEY (notification_id, attempt)
);
CREATE INDEX IF NOT EXISTS alert_delivery_attempts_by_project ON alert_delivery_attempts (project_id, attempted_at_ms);
