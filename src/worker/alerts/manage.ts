// The one place that checks and writes a project's alert rules and destinations (SPEC §5), for the
// admin API and the dashboard's forms alike. No message carries the input: a destination URL is a secret.
import { randomBase62 } from "../auth.ts";
import {
  countProjectAlerts,
  deleteDestination,
  deleteRule,
  existingDestinationIds,
  findRule,
  insertDestinationStatement,
  insertRuleStatement,
  insertTestNotificationStatement,
  listDestinations,
  listProjectStates,
  rulesUsingDestination,
  updateRuleStatements,
  type StateRow,
} from "../db/alerts.ts";
import { findProject } from "../db/projects.ts";
import { isBeingMovedAway } from "../db/moves.ts";
import { dashboardUrl, type NotificationPayload } from "./notification.ts";
import {
  AlertRuleSchema,
  CreateDestinationBody,
  CreateRuleBody,
  FIELDS_THAT_RESET_STATES,
  MAX_DESTINATIONS_PER_PROJECT,
  MAX_RULES_PER_PROJECT,
  UpdateRuleBody,
  type AlertRule,
  type DestinationKind,
} from "./rules.ts";
import { generateWebhookSecret } from "./signing.ts";
import { checkTarget, urlHint, type TargetRefusal } from "./targets.ts";

/** Why a change was refused, with the HTTP status the admin API answers it with. */
export const MANAGE_ERRORS = {
  invalid_body: 400,
  unknown_destination: 400,
  invalid_url: 400,
  url_not_https: 400,
  url_not_public: 400,
  no_such_project: 404,
  no_such_rule: 404,
  no_such_destination: 404,
  too_many_rules: 409,
  too_many_destinations: 409,
  destination_in_use: 409,
  project_moving: 409,
} as const;
export type ManageError = keyof typeof MANAGE_ERRORS;

/** The admin API's `{"error"}` for each code: fixed text, never the input. */
export const MANAGE_ERROR_MESSAGES: Record<ManageError, string> = {
  invalid_body: "invalid body",
  unknown_destination: "unknown destination",
  invalid_url: "invalid url",
  url_not_https: "url must be https",
  url_not_public: "url must point at a public host",
  no_such_project: "no such project",
  no_such_rule: "no such rule",
  no_such_destination: "no such destination",
  too_many_rules: "too many rules",
  too_many_destinations: "too many destinations",
  destination_in_use: "destination used by a rule",
  project_moving: "the project is being moved to another database; change its alerts when the move is done",
};

/**
 * A refusal. `fields` (for invalid_body) names the rule or destination fields that failed: names
 * of our schema only (unknown keys are reported as the body, never by their name).
 */
export type Refusal = { ok: false; error: ManageError; fields?: string[] };
export type Outcome<T> = { ok: true; value: T } | Refusal;

const refuse = (error: ManageError, fields?: string[]): Refusal => (fields ? { ok: false, error, fields } : { ok: false, error });

/** Field names of our schemas that an invalid input got wrong (the first path element of each issue, when it is one of them). */
function failedFields(issues: readonly { path: readonly PropertyKey[] }[], known: readonly string[]): string[] {
  const names = new Set<string>();
  for (const issue of issues) {
    const first = issue.path[0];
    if (typeof first === "string" && known.includes(first)) names.add(first);
  }
  return [...names];
}

const RULE_FIELD_NAMES: readonly string[] = Object.keys(UpdateRuleBody.shape);
const DESTINATION_FIELD_NAMES: readonly string[] = Object.keys(CreateDestinationBody.shape);

/**
 * Alerts of a project being copied to another database stay as they are until the move is done
 * (SPEC §7): an edit would be lost with the source's rows. The source's triggers refuse it too
 * (migration 0027), whatever path it comes by.
 */
async function refuseWhileMoving(ctx: ManageContext, projectId: string): Promise<Refusal | null> {
  return (await isBeingMovedAway(ctx.db, projectId)) ? refuse("project_moving") : null;
}

export type ManageContext = {
  db: D1Database;
  /** Whether http://127.0.0.1, localhost and [::1] destinations are allowed (targets.ts runsLocally). */
  local: boolean;
  /** The worker's public origin, for the link in a test notification (`PUBLIC_URL`). */
  publicUrl?: string | undefined;
  nowMs: number;
};

// ---------------------------------------------------------------------------------------------
// Destinations
// ---------------------------------------------------------------------------------------------

/** A project's destinations as every list shows them: never the URL or the secret, only url_hint. */
export async function destinationList(db: D1Database, projectId: string) {
  const rows = await listDestinations(db, projectId);
  return rows.map((d) => ({ id: d.destination_id, kind: d.kind, name: d.name, url_hint: d.url_hint, created_at: new Date(d.created_at_ms).toISOString() }));
}

const TARGET_REFUSALS: Record<TargetRefusal, ManageError> = {
  not_a_url: "invalid_url",
  credentials_in_url: "invalid_url",
  not_https: "url_not_https",
  not_public: "url_not_public",
};

export type CreatedDestination = { id: string; kind: DestinationKind; name: string | null; url_hint: string; secret: string | null };

/** A new destination from `input` (the admin API's body shape, CreateDestinationBody). */
export async function createDestination(ctx: ManageContext, projectId: string, input: unknown): Promise<Outcome<CreatedDestination>> {
  const parsed = CreateDestinationBody.safeParse(input);
  if (!parsed.success) return refuse("invalid_body", failedFields(parsed.error.issues, DESTINATION_FIELD_NAMES));
  const body = parsed.data;
  if (!(await findProject(ctx.db, projectId))) return refuse("no_such_project");
  const moving = await refuseWhileMoving(ctx, projectId);
  if (moving) return moving;
  const target = checkTarget(body.url, ctx.local);
  // The reason, never the URL: it is a secret.
  if (!target.ok) return refuse(TARGET_REFUSALS[target.reason]);
  if ((await countProjectAlerts(ctx.db, projectId)).destinations >= MAX_DESTINATIONS_PER_PROJECT) return refuse("too_many_destinations");
  const id = "dst_" + randomBase62(16);
  const secret = body.kind === "webhook" ? generateWebhookSecret() : null;
  const hint = urlHint(target.url);
  const name = body.name ?? null;
  await insertDestinationStatement(ctx.db, {
    destination_id: id,
    project_id: projectId,
    kind: body.kind,
    name,
    url: target.url.toString(),
    url_hint: hint,
    secret,
    created_at_ms: ctx.nowMs,
  }).run();
  return { ok: true, value: { id, kind: body.kind, name, url_hint: hint, secret } };
}

/** Deletes a destination no rule uses. */
export async function removeDestination(ctx: ManageContext, projectId: string, destinationId: string): Promise<Outcome<null>> {
  const moving = await refuseWhileMoving(ctx, projectId);
  if (moving) return moving;
  if ((await rulesUsingDestination(ctx.db, projectId, destinationId)).length > 0) return refuse("destination_in_use");
  if (!(await deleteDestination(ctx.db, projectId, destinationId))) return refuse("no_such_destination");
  return { ok: true, value: null };
}

/** Queues a test notification to one destination; the next cron run sends it (SPEC §5: 202, queued). */
export async function queueTestNotification(ctx: ManageContext, projectId: string, destinationId: string): Promise<Outcome<{ notification_id: number | null }>> {
  const project = await findProject(ctx.db, projectId);
  if (!project) return refuse("no_such_project");
  const moving = await refuseWhileMoving(ctx, projectId);
  if (moving) return moving;
  if ((await existingDestinationIds(ctx.db, projectId, [destinationId])).size === 0) return refuse("no_such_destination");
  const scope = { tool: null, client: null };
  const payload: NotificationPayload = {
    kind: "test",
    project: { id: projectId, name: project.name },
    rule: null,
    scope,
    state: "ok",
    metric: null,
    op: null,
    value: null,
    threshold: null,
    window: null,
    at: new Date(ctx.nowMs).toISOString(),
    url: dashboardUrl(ctx.publicUrl, scope),
  };
  const row = await insertTestNotificationStatement(ctx.db, {
    project_id: projectId,
    destination_id: destinationId,
    dedupe_key: `test|${destinationId}|${randomBase62(16)}`,
    payload_json: JSON.stringify(payload),
    now_ms: ctx.nowMs,
  }).first<{ notification_id: number }>();
  return { ok: true, value: { notification_id: row?.notification_id ?? null } };
}

// ---------------------------------------------------------------------------------------------
// Rules
// ---------------------------------------------------------------------------------------------

/** The rule's destinations must all be the project's own: another project's id is answered like an unknown one. */
async function destinationsKnown(db: D1Database, projectId: string, ids: readonly string[]): Promise<boolean> {
  const found = await existingDestinationIds(db, projectId, ids);
  return ids.every((id) => found.has(id));
}

/** A new rule from `input` (the admin API's body shape, CreateRuleBody: defaults applied). */
export async function createRule(ctx: ManageContext, projectId: string, input: unknown): Promise<Outcome<AlertRule>> {
  const parsed = CreateRuleBody.safeParse(input);
  if (!parsed.success) return refuse("invalid_body", failedFields(parsed.error.issues, RULE_FIELD_NAMES));
  if (!(await findProject(ctx.db, projectId))) return refuse("no_such_project");
  const moving = await refuseWhileMoving(ctx, projectId);
  if (moving) return moving;
  if (!(await destinationsKnown(ctx.db, projectId, parsed.data.destinations))) return refuse("unknown_destination");
  if ((await countProjectAlerts(ctx.db, projectId)).rules >= MAX_RULES_PER_PROJECT) return refuse("too_many_rules");
  const rule: AlertRule = { ...parsed.data, id: "rul_" + randomBase62(16), project_id: projectId, created_at_ms: ctx.nowMs, updated_at_ms: ctx.nowMs };
  await insertRuleStatement(ctx.db, rule).run();
  return { ok: true, value: rule };
}

/**
 * PATCH semantics: the fields given replace the rule's, the merged rule is checked as a whole
 * (AlertRuleSchema), and its states are kept unless a field that changes what it measures changed
 * (FIELDS_THAT_RESET_STATES). Answers the rule and the states it keeps.
 */
export async function updateRule(ctx: ManageContext, projectId: string, ruleId: string, input: unknown): Promise<Outcome<{ rule: AlertRule; states: StateRow[] }>> {
  const patch = UpdateRuleBody.safeParse(input);
  if (!patch.success) return refuse("invalid_body", failedFields(patch.error.issues, RULE_FIELD_NAMES));
  const record = await findRule(ctx.db, projectId, ruleId);
  if (!record) return refuse("no_such_rule");
  const moving = await refuseWhileMoving(ctx, projectId);
  if (moving) return moving;
  const current = record;
  const { id, project_id, created_at_ms, updated_at_ms: _previous, ...currentFields } = current;
  const merged = AlertRuleSchema.safeParse({ ...currentFields, ...patch.data });
  if (!merged.success) return refuse("invalid_body", failedFields(merged.error.issues, RULE_FIELD_NAMES));
  if (!(await destinationsKnown(ctx.db, projectId, merged.data.destinations))) return refuse("unknown_destination");
  const rule: AlertRule = { ...merged.data, id, project_id, created_at_ms, updated_at_ms: ctx.nowMs };
  const reset = FIELDS_THAT_RESET_STATES.some((f) => rule[f] !== current[f]);
  await ctx.db.batch(updateRuleStatements(ctx.db, rule, reset));
  return { ok: true, value: { rule, states: reset ? [] : await listProjectStates(ctx.db, projectId) } };
}

/** Deletes a rule and its states. */
export async function removeRule(ctx: ManageContext, projectId: string, ruleId: string): Promise<Outcome<null>> {
  const moving = await refuseWhileMoving(ctx, projectId);
  if (moving) return moving;
  if (!(await deleteRule(ctx.db, projectId, ruleId))) return refuse("no_such_rule");
  return { ok: true, value: null };
}
