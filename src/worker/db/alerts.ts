// SQL of the alert tables (migrations/0010_alerts.sql, SPEC §5). Statements take JSON arrays
// through json_each, so their count never grows with the number of rules.
// Rows are parsed with Zod at this boundary (the enums match 0010's CHECK constraints); a row that
// does not parse is logged and left out, never allowed to stop the other rules.
import { z } from "zod";
import { DAY_MS, HOUR_MS } from "../time.ts";
import type { RegisteredToolRow, ToolVersionRow } from "./metrics.ts";
import { NOT_HELD } from "./moves.ts";
import { toolVersionsSourceSql } from "./tool-versions.ts";
import { log } from "../log.ts";

/** Metrics a rule compares with a threshold (SPEC §5); rates follow SPEC §2 exactly. */
export const ALERT_METRICS = [
  "first_call_rate",
  "error_rate",
  "crash_rate",
  "bad_args_rate",
  "empty_rate",
  "p95_ms",
  "calls",
] as const;
/** Events a rule fires on without a threshold (SPEC §5). */
export const ALERT_EVENTS = ["dead_tool", "schema_regression", "description_churn"] as const;
export const ALERT_OPS = ["<", ">"] as const;
export const DESTINATION_KINDS = ["slack", "discord", "webhook"] as const;
/** The state of one (rule, scope) (SPEC §5). */
export const ALERT_STATES = ["ok", "pending", "firing"] as const;
export const NOTIFICATION_KINDS = ["firing", "resolved", "reminder", "test"] as const;

type DestinationKind = (typeof DESTINATION_KINDS)[number];
type NotificationKind = (typeof NOTIFICATION_KINDS)[number];

export const RuleRecordSchema = z.object({
  id: z.string(),
  project_id: z.string(),
  name: z.string().nullable(),
  metric: z.enum(ALERT_METRICS).nullable(),
  op: z.enum(ALERT_OPS).nullable(),
  threshold: z.number().nullable(),
  event: z.enum(ALERT_EVENTS).nullable(),
  window_hours: z.number().int(),
  min_calls: z.number().int(),
  tool: z.string().nullable(),
  client: z.string().nullable(),
  for_evaluations: z.number().int(),
  repeat_hours: z.number().int(),
  destinations: z.array(z.string()),
  created_at_ms: z.number(),
  updated_at_ms: z.number(),
});
export type RuleRecord = z.infer<typeof RuleRecordSchema>;
type AlertRule = RuleRecord;

/** A text that is not JSON fails the row, like any other bad column. */
const jsonText = z.string().transform((text, ctx) => {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    ctx.addIssue({ code: "custom", message: "not JSON" });
    return z.NEVER;
  }
});

const RuleRowSchema = RuleRecordSchema.omit({ id: true, destinations: true })
  .extend({ rule_id: z.string(), destinations_json: jsonText.pipe(z.array(z.string())) })
  .transform(({ rule_id, destinations_json, ...rest }): RuleRecord => ({ id: rule_id, ...rest, destinations: destinations_json }));

/** Logs table and id only, never the row's content. */
function parseRows<T>(schema: z.ZodType<T>, rows: readonly unknown[], table: string, idOf: (row: unknown) => unknown): T[] {
  const parsed: T[] = [];
  for (const row of rows) {
    const result = schema.safeParse(row);
    if (result.success) parsed.push(result.data);
    else log.error("alert_record_invalid", { table, id: String(idOf(row) ?? "") });
  }
  return parsed;
}

const ruleIdOf = (row: unknown) => (row as { rule_id?: unknown } | null)?.rule_id;

// ---------------------------------------------------------------------------------------------
// Destinations
// ---------------------------------------------------------------------------------------------

export type DestinationRow = {
  destination_id: string;
  project_id: string;
  kind: DestinationKind;
  name: string | null;
  url_hint: string;
  created_at_ms: number;
};

export function insertDestinationStatement(
  db: D1Database,
  d: DestinationRow & { url: string; secret: string | null },
): D1PreparedStatement {
  return db
    .prepare(
      `INSERT INTO alert_destinations (destination_id, project_id, kind, name, url, url_hint, secret, created_at_ms)
       VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)`,
    )
    .bind(d.destination_id, d.project_id, d.kind, d.name, d.url, d.url_hint, d.secret, d.created_at_ms);
}

/** A project's destinations, never their URL or secret. */
export async function listDestinations(db: D1Database, projectId: string): Promise<DestinationRow[]> {
  const { results } = await db
    .prepare(
      `SELECT destination_id, project_id, kind, name, url_hint, created_at_ms FROM alert_destinations
       WHERE project_id = ?1 ORDER BY created_at_ms, destination_id`,
    )
    .bind(projectId)
    .all<DestinationRow>();
  return results;
}

export async function deleteDestination(db: D1Database, projectId: string, destinationId: string): Promise<boolean> {
  const r = await db
    .prepare("DELETE FROM alert_destinations WHERE project_id = ?1 AND destination_id = ?2")
    .bind(projectId, destinationId)
    .run();
  return r.meta.changes > 0;
}

export async function rulesUsingDestination(db: D1Database, projectId: string, destinationId: string): Promise<string[]> {
  const { results } = await db
    .prepare(
      `SELECT r.rule_id FROM alert_rules AS r, json_each(r.destinations_json) AS d
       WHERE r.project_id = ?1 AND d.value = ?2 ORDER BY r.rule_id`,
    )
    .bind(projectId, destinationId)
    .all<{ rule_id: string }>();
  return results.map((r) => r.rule_id);
}

// ---------------------------------------------------------------------------------------------
// Rules and their states
// ---------------------------------------------------------------------------------------------

const RULE_COLUMNS =
  "rule_id, project_id, name, metric, op, threshold, event, window_hours, min_calls, tool, client, " +
  "for_evaluations, repeat_hours, destinations_json, created_at_ms, updated_at_ms";

export function rulesFromRows(rows: readonly unknown[]): RuleRecord[] {
  return parseRows(RuleRowSchema, rows, "alert_rules", ruleIdOf);
}

export function insertRuleStatement(db: D1Database, rule: AlertRule): D1PreparedStatement {
  return db
    .prepare(`INSERT INTO alert_rules (${RULE_COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)`)
    .bind(...ruleValues(rule));
}

function ruleValues(rule: AlertRule): unknown[] {
  return [
    rule.id, rule.project_id, rule.name, rule.metric, rule.op, rule.threshold, rule.event, rule.window_hours,
    rule.min_calls, rule.tool, rule.client, rule.for_evaluations, rule.repeat_hours, JSON.stringify(rule.destinations),
    rule.created_at_ms, rule.updated_at_ms,
  ];
}

/** Rewrites a rule's fields; `resetStates` also forgets its states (in the same batch). */
export function updateRuleStatements(db: D1Database, rule: AlertRule, resetStates: boolean): D1PreparedStatement[] {
  const update = db
    .prepare(
      `UPDATE alert_rules SET name = ?3, metric = ?4, op = ?5, threshold = ?6, event = ?7, window_hours = ?8,
         min_calls = ?9, tool = ?10, client = ?11, for_evaluations = ?12, repeat_hours = ?13, destinations_json = ?14,
         updated_at_ms = ?16
       WHERE rule_id = ?1 AND project_id = ?2`,
    )
    .bind(...ruleValues(rule));
  return resetStates ? [update, deleteStatesStatement(db, rule.project_id, rule.id)] : [update];
}

function deleteStatesStatement(db: D1Database, projectId: string, ruleId: string): D1PreparedStatement {
  return db.prepare("DELETE FROM alert_states WHERE project_id = ?1 AND rule_id = ?2").bind(projectId, ruleId);
}

export async function deleteRule(db: D1Database, projectId: string, ruleId: string): Promise<boolean> {
  const [, rule] = await db.batch([
    deleteStatesStatement(db, projectId, ruleId),
    db.prepare("DELETE FROM alert_rules WHERE project_id = ?1 AND rule_id = ?2").bind(projectId, ruleId),
  ]);
  return rule!.meta.changes > 0;
}

export async function listRules(db: D1Database, projectId: string): Promise<AlertRule[]> {
  const { results } = await db
    .prepare(`SELECT ${RULE_COLUMNS} FROM alert_rules WHERE project_id = ?1 ORDER BY created_at_ms, rule_id`)
    .bind(projectId)
    .all();
  return rulesFromRows(results);
}

export async function findRule(db: D1Database, projectId: string, ruleId: string): Promise<AlertRule | null> {
  const row = await db
    .prepare(`SELECT ${RULE_COLUMNS} FROM alert_rules WHERE project_id = ?1 AND rule_id = ?2`)
    .bind(projectId, ruleId)
    .first();
  return row ? (rulesFromRows([row])[0] ?? null) : null;
}

export async function countProjectAlerts(db: D1Database, projectId: string): Promise<{ rules: number; destinations: number }> {
  const row = await db
    .prepare(
      `SELECT (SELECT COUNT(*) FROM alert_rules WHERE project_id = ?1) AS rules,
              (SELECT COUNT(*) FROM alert_destinations WHERE project_id = ?1) AS destinations`,
    )
    .bind(projectId)
    .first<{ rules: number; destinations: number }>();
  return { rules: Number(row?.rules ?? 0), destinations: Number(row?.destinations ?? 0) };
}

export async function existingDestinationIds(db: D1Database, projectId: string, ids: readonly string[]): Promise<Set<string>> {
  if (ids.length === 0) return new Set();
  const { results } = await db
    .prepare(
      `SELECT destination_id FROM alert_destinations
       WHERE project_id = ?1 AND destination_id IN (SELECT value FROM json_each(?2))`,
    )
    .bind(projectId, JSON.stringify(ids))
    .all<{ destination_id: string }>();
  return new Set(results.map((r) => r.destination_id));
}

/** Declared once; state-machine.ts picks its part. */
export const StateRowSchema = z.object({
  rule_id: z.string(),
  scope_key: z.string(),
  project_id: z.string(),
  scope_tool: z.string().nullable(),
  scope_client: z.string().nullable(),
  state: z.enum(ALERT_STATES),
  /** Consecutive breaching evaluations so far (0 when ok). */
  breaches: z.number().int(),
  since_ms: z.number(),
  /** The last evaluation's figure; null when it was not evaluated. */
  value: z.number().nullable(),
  last_evaluated_ms: z.number(),
  last_notified_ms: z.number().nullable(),
  revision: z.number().int(),
  eval_id: z.string(),
});
export type StateRow = z.infer<typeof StateRowSchema>;

export function statesFromRows(rows: readonly unknown[]): StateRow[] {
  return parseRows(StateRowSchema, rows, "alert_states", (row) => (row as { rule_id?: unknown } | null)?.rule_id);
}

const STATE_COLUMNS =
  "rule_id, scope_key, project_id, scope_tool, scope_client, state, breaches, since_ms, value, last_evaluated_ms, " +
  "last_notified_ms, revision, eval_id";

export async function listProjectStates(db: D1Database, projectId: string): Promise<StateRow[]> {
  const { results } = await db
    .prepare(`SELECT ${STATE_COLUMNS} FROM alert_states WHERE project_id = ?1 ORDER BY rule_id, scope_key`)
    .bind(projectId)
    .all();
  return statesFromRows(results);
}

// ---------------------------------------------------------------------------------------------
// Evaluation: reads over every rule at once
// ---------------------------------------------------------------------------------------------

/** Held projects' alert rows are being moved as they are (db/moves.ts). */
export function allRulesStatement(db: D1Database): D1PreparedStatement {
  return db.prepare(`SELECT ${RULE_COLUMNS} FROM alert_rules WHERE ${NOT_HELD} ORDER BY rule_id`);
}

export function allStatesStatement(db: D1Database): D1PreparedStatement {
  return db.prepare(`SELECT ${STATE_COLUMNS} FROM alert_states`);
}

/** A row's scope is its tool (client) when the rule names one or splits on `*`, else null. */
const RULE_HOUR_ROWS = `FROM alert_rules AS r
  JOIN tool_hour_metrics AS m ON m.project_id = r.project_id
    AND m.hour_start_ms > ?1 - r.window_hours * ${HOUR_MS} AND m.hour_start_ms <= ?1
    AND (r.tool IS NULL OR r.tool = '*' OR m.tool_name = r.tool)
    AND (r.client IS NULL OR r.client = '*' OR m.client_name = r.client)`;
const SCOPE_TOOL = "CASE WHEN r.tool IS NULL THEN NULL ELSE m.tool_name END";
const SCOPE_CLIENT = "CASE WHEN r.client IS NULL THEN NULL ELSE m.client_name END";

export type ScopeCountersRow = { rule_id: string; scope_tool: string | null; scope_client: string | null } & Record<string, unknown>;

/** metrics/counters.ts owns the counter list. */
export function metricCountersStatement(db: D1Database, hourStartMs: number, counters: readonly string[]): D1PreparedStatement {
  const sums = counters.map((c: string) => `SUM(m.${c}) AS ${c}`).join(", ");
  return db
    .prepare(
      `SELECT r.rule_id AS rule_id, ${SCOPE_TOOL} AS scope_tool, ${SCOPE_CLIENT} AS scope_client, ${sums}
       ${RULE_HOUR_ROWS}
       WHERE r.metric IS NOT NULL
       GROUP BY r.rule_id, scope_tool, scope_client`,
    )
    .bind(hourStartMs);
}

export type ScopeHistogramsRow = { rule_id: string; scope_tool: string | null; scope_client: string | null; histograms_json: string };

/**
 * Concatenated per UTC day: at most 24 hour rows per string, far under D1's 2,000,000-byte limit on
 * a value.
 */
export function p95HistogramsStatement(db: D1Database, hourStartMs: number): D1PreparedStatement {
  return db
    .prepare(
      `SELECT r.rule_id AS rule_id, ${SCOPE_TOOL} AS scope_tool, ${SCOPE_CLIENT} AS scope_client,
         group_concat(m.duration_histogram_json, ',') AS histograms_json
       ${RULE_HOUR_ROWS}
       WHERE r.metric = 'p95_ms'
       GROUP BY r.rule_id, scope_tool, scope_client, m.tool_name, m.client_name, m.hour_start_ms / ${DAY_MS}`,
    )
    .bind(hourStartMs);
}

export type DeadToolRow = RegisteredToolRow & {
  rule_id: string;
  calls: number;
};

/** Every registered tool in a dead_tool rule's scope, with its calls in the rule's window and client. */
export function deadToolStatement(db: D1Database, hourStartMs: number): D1PreparedStatement {
  return db
    .prepare(
      `SELECT r.rule_id AS rule_id, t.tool_name AS tool_name, t.schema_bytes AS schema_bytes, t.schema_hash AS schema_hash,
         t.description_hash AS description_hash, t.description_norm AS description_norm,
         t.requires_authorization AS requires_authorization, t.requires_verified_identity AS requires_verified_identity,
         (SELECT COALESCE(SUM(m.calls), 0) FROM tool_hour_metrics AS m
           WHERE m.project_id = r.project_id AND m.tool_name = t.tool_name
             AND m.hour_start_ms > ?1 - r.window_hours * ${HOUR_MS} AND m.hour_start_ms <= ?1
             AND (r.client IS NULL OR m.client_name = r.client)) AS calls
       FROM alert_rules AS r
       JOIN registered_tools AS t ON t.project_id = r.project_id AND (r.tool IS NULL OR r.tool = '*' OR t.tool_name = r.tool)
       WHERE r.event = 'dead_tool'`,
    )
    .bind(hourStartMs);
}

export type EventToolVersionRow = ToolVersionRow & {
  rule_id: string;
  registered: number;
  current_schema_hash: string | null;
};

/** Every version of every tool in the scope of a schema_regression or description_churn rule. */
export function eventToolVersionsStatement(db: D1Database): D1PreparedStatement {
  return db.prepare(
    `SELECT r.rule_id AS rule_id, v.tool_name AS tool_name, v.schema_hash AS schema_hash,
       v.description_hash AS description_hash, v.description_norm AS description_norm, v.first_seen_ms AS first_seen_ms,
       v.last_seen_ms AS last_seen_ms, v.startups AS startups,
       t.tool_name IS NOT NULL AS registered, t.schema_hash AS current_schema_hash
     FROM alert_rules AS r
     JOIN ${toolVersionsSourceSql("SELECT project_id FROM alert_rules WHERE event IN ('schema_regression', 'description_churn')")} AS v
       ON v.project_id = r.project_id AND (r.tool IS NULL OR r.tool = '*' OR v.tool_name = r.tool)
     LEFT JOIN registered_tools AS t ON t.project_id = r.project_id AND t.tool_name = v.tool_name
     WHERE r.event IN ('schema_regression', 'description_churn')
     ORDER BY r.rule_id, v.tool_name, v.first_seen_ms, v.schema_hash, v.description_hash`,
  );
}

export type SpanCountersRow = { span: number } & Record<string, unknown>;

/** `spans`: JSON array of {"project", "tool", "client" (or null), "start", "end"}, end exclusive. */
export function spanCountersStatement(db: D1Database, spans: string, counters: readonly string[]): D1PreparedStatement {
  const sums = counters.map((c: string) => `COALESCE(SUM(m.${c}), 0) AS ${c}`).join(", ");
  return db
    .prepare(
      `SELECT s.key AS span, ${sums}
       FROM json_each(?1) AS s
       LEFT JOIN tool_hour_metrics AS m ON m.project_id = json_extract(s.value, '$.project')
         AND m.tool_name = json_extract(s.value, '$.tool')
         AND m.hour_start_ms >= json_extract(s.value, '$.start') AND m.hour_start_ms < json_extract(s.value, '$.end')
         AND (json_extract(s.value, '$.client') IS NULL OR m.client_name = json_extract(s.value, '$.client'))
       GROUP BY s.key`,
    )
    .bind(spans);
}

// ---------------------------------------------------------------------------------------------
// Evaluation: writes, one statement per table for every rule at once
// ---------------------------------------------------------------------------------------------

export type StateWrite = Omit<StateRow, "revision"> & { expected_revision: number };

/**
 * Replaced only when the revision is still the one read, so of two overlapping evaluations only the
 * first one's rows (and outbox rows) land.
 */
export function writeStatesStatement(db: D1Database, writes: string): D1PreparedStatement {
  const field = (name: string) => `json_extract(w.value, '$.${name}')`;
  return db
    .prepare(
      `INSERT INTO alert_states (${STATE_COLUMNS})
       SELECT ${field("rule_id")}, ${field("scope_key")}, ${field("project_id")}, ${field("scope_tool")}, ${field("scope_client")},
         ${field("state")}, ${field("breaches")}, ${field("since_ms")}, ${field("value")}, ${field("last_evaluated_ms")},
         ${field("last_notified_ms")}, ${field("expected_revision")} + 1, ${field("eval_id")}
       FROM json_each(?1) AS w
       -- Rules deleted since the evaluation read them get no state.
       WHERE EXISTS (SELECT 1 FROM alert_rules AS r WHERE r.rule_id = ${field("rule_id")})
       ON CONFLICT (rule_id, scope_key) DO UPDATE SET
         state = excluded.state, breaches = excluded.breaches, since_ms = excluded.since_ms, value = excluded.value,
         last_evaluated_ms = excluded.last_evaluated_ms, last_notified_ms = excluded.last_notified_ms,
         revision = excluded.revision, eval_id = excluded.eval_id
       WHERE alert_states.revision = excluded.revision - 1`,
    )
    .bind(writes);
}

export type OutboxWrite = {
  project_id: string;
  rule_id: string;
  scope_key: string;
  destination_id: string;
  kind: NotificationKind;
  revision: number;
  eval_id: string;
  payload_json: string;
};

/**
 * Inserted only when the state row carries this evaluation's revision, and the dedupe key is
 * unique, so a transition queues once.
 */
export function insertOutboxStatement(db: D1Database, writes: string, nowMs: number): D1PreparedStatement {
  const field = (name: string) => `json_extract(w.value, '$.${name}')`;
  return db
    .prepare(
      `INSERT OR IGNORE INTO alert_outbox
         (project_id, rule_id, destination_id, kind, dedupe_key, payload_json, created_at_ms, status, attempts, next_attempt_at_ms)
       SELECT ${field("project_id")}, ${field("rule_id")}, ${field("destination_id")}, ${field("kind")},
         ${field("rule_id")} || '|' || ${field("scope_key")} || '|' || ${field("revision")} || '|' || ${field("kind")} || '|' || ${field("destination_id")},
         ${field("payload_json")}, ?2, 'pending', 0, ?2
       FROM json_each(?1) AS w
       JOIN alert_states AS s ON s.rule_id = ${field("rule_id")} AND s.scope_key = ${field("scope_key")}
         AND s.revision = ${field("revision")} AND s.eval_id = ${field("eval_id")}`,
    )
    .bind(writes, nowMs);
}

/** A test notification for one destination (SPEC §5 `…/test`), due at once. */
export function insertTestNotificationStatement(
  db: D1Database,
  n: { project_id: string; destination_id: string; dedupe_key: string; payload_json: string; now_ms: number },
): D1PreparedStatement {
  return db
    .prepare(
      `INSERT INTO alert_outbox
         (project_id, rule_id, destination_id, kind, dedupe_key, payload_json, created_at_ms, status, attempts, next_attempt_at_ms)
       VALUES (?1, NULL, ?2, 'test', ?3, ?4, ?5, 'pending', 0, ?5)
       RETURNING notification_id`,
    )
    .bind(n.project_id, n.destination_id, n.dedupe_key, n.payload_json, n.now_ms);
}

// ---------------------------------------------------------------------------------------------
// Delivery
// ---------------------------------------------------------------------------------------------

export type DueNotificationRow = {
  notification_id: number;
  project_id: string;
  destination_id: string;
  kind: NotificationKind;
  payload_json: string;
  created_at_ms: number;
  attempts: number;
  destination_kind: DestinationKind | null;
  url: string | null;
  secret: string | null;
};

/** Destinations taken in turn, so one with a backlog (or a dead one) cannot take every slot. */
export function dueNotificationsStatement(db: D1Database, nowMs: number, limit: number, perDestination: number): D1PreparedStatement {
  return db
    .prepare(
      `SELECT notification_id, project_id, destination_id, kind, payload_json, created_at_ms, attempts,
         destination_kind, url, secret
       FROM (
         SELECT o.notification_id, o.project_id, o.destination_id, o.kind, o.payload_json, o.created_at_ms, o.attempts,
           d.kind AS destination_kind, d.url AS url, d.secret AS secret, o.next_attempt_at_ms AS due_ms,
           ROW_NUMBER() OVER (PARTITION BY o.destination_id ORDER BY o.next_attempt_at_ms, o.notification_id) AS turn
         FROM alert_outbox AS o
         LEFT JOIN alert_destinations AS d ON d.destination_id = o.destination_id
         WHERE o.status = 'pending' AND o.next_attempt_at_ms <= ?1 AND o.${NOT_HELD}
       )
       WHERE turn <= ?3
       ORDER BY turn, due_ms, notification_id
       LIMIT ?2`,
    )
    .bind(nowMs, limit, perDestination);
}

export type AttemptWrite = {
  notification_id: number;
  project_id: string;
  attempt: number;
  attempted_at_ms: number;
  http_status: number | null;
  latency_ms: number;
  error_class: string | null;
  /** The outbox row after this attempt. */
  status: "pending" | "delivered" | "failed";
  next_attempt_at_ms: number | null;
};

export function recordAttemptsStatements(db: D1Database, attempts: string): D1PreparedStatement[] {
  const field = (name: string) => `json_extract(a.value, '$.${name}')`;
  return [
    db
      .prepare(
        `INSERT OR IGNORE INTO alert_delivery_attempts
           (notification_id, attempt, project_id, attempted_at_ms, http_status, latency_ms, error_class)
         SELECT ${field("notification_id")}, ${field("attempt")}, ${field("project_id")}, ${field("attempted_at_ms")},
           ${field("http_status")}, ${field("latency_ms")}, ${field("error_class")}
         FROM json_each(?1) AS a`,
      )
      .bind(attempts),
    db
      .prepare(
        `UPDATE alert_outbox SET attempts = u.attempt, status = u.status, next_attempt_at_ms = u.next_ms,
           delivered_at_ms = CASE WHEN u.status = 'delivered' THEN u.at_ms ELSE delivered_at_ms END
         FROM (SELECT ${field("notification_id")} AS id, ${field("attempt")} AS attempt, ${field("status")} AS status,
                 ${field("next_attempt_at_ms")} AS next_ms, ${field("attempted_at_ms")} AS at_ms
               FROM json_each(?1) AS a) AS u
         WHERE alert_outbox.notification_id = u.id AND alert_outbox.attempts = u.attempt - 1`,
      )
      .bind(attempts),
  ];
}

export type DeliveryLogRow = {
  notification_id: number;
  rule_id: string | null;
  /** The rule's name now (NULL for a test, a rule without a name, or a deleted rule). */
  rule_name: string | null;
  destination_id: string;
  /** The destination's kind and name now (NULL once it is deleted). */
  destination_kind: string | null;
  destination_name: string | null;
  /** The notification's scope, from its payload (NULL for a test). */
  scope_tool: string | null;
  scope_client: string | null;
  kind: NotificationKind;
  status: "pending" | "delivered" | "failed";
  created_at_ms: number;
  next_attempt_at_ms: number | null;
  delivered_at_ms: number | null;
  attempts_json: string;
};

/** The project's last `limit` notifications, newest first, each with every attempt made. */
export async function listDeliveries(db: D1Database, projectId: string, limit: number): Promise<DeliveryLogRow[]> {
  const { results } = await db
    .prepare(
      `SELECT o.notification_id, o.rule_id, r.name AS rule_name, o.destination_id, d.kind AS destination_kind,
         d.name AS destination_name, json_extract(o.payload_json, '$.scope.tool') AS scope_tool,
         json_extract(o.payload_json, '$.scope.client') AS scope_client, o.kind, o.status, o.created_at_ms,
         o.next_attempt_at_ms, o.delivered_at_ms,
         (SELECT json_group_array(json_object('attempt', a.attempt, 'at_ms', a.attempted_at_ms, 'http_status', a.http_status,
             'latency_ms', a.latency_ms, 'error_class', a.error_class))
          FROM (SELECT * FROM alert_delivery_attempts WHERE notification_id = o.notification_id ORDER BY attempt) AS a) AS attempts_json
       FROM alert_outbox AS o
       LEFT JOIN alert_rules AS r ON r.rule_id = o.rule_id AND r.project_id = o.project_id
       LEFT JOIN alert_destinations AS d ON d.destination_id = o.destination_id AND d.project_id = o.project_id
       WHERE o.project_id = ?1
       ORDER BY o.notification_id DESC
       LIMIT ?2`,
    )
    .bind(projectId, limit)
    .all<DeliveryLogRow>();
  return results;
}
