// Alert routes (SPEC §5): rules and destinations of a project under /v1/admin/projects/:id/alert-*
// (ADMIN_TOKEN), and GET /v1/metrics/alerts (read key: rules, states, delivery log, read only).
// A destination's URL and secret are answered once, at creation, and never again.
import { Hono } from "hono";
import { HTTPException } from "hono/http-exception";
import type { AppEnv } from "../env.ts";
import { randomBase62, requireKey } from "../auth.ts";
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
  listRules,
  rulesUsingDestination,
  updateRuleStatements,
} from "../db/alerts.ts";
import { findProject } from "../db/projects.ts";
import { dashboardUrl, type NotificationPayload } from "../alerts/notification.ts";
import {
  AlertRuleSchema,
  CreateDestinationBody,
  CreateRuleBody,
  FIELDS_THAT_RESET_STATES,
  MAX_DESTINATIONS_PER_PROJECT,
  MAX_RULES_PER_PROJECT,
  UpdateRuleBody,
  asAlertRule,
  type AlertRule,
} from "../alerts/rules.ts";
import { generateWebhookSecret } from "../alerts/signing.ts";
import { checkTarget, runsLocally, urlHint } from "../alerts/targets.ts";
import { alertsReport, DELIVERY_LOG_LIMIT, ruleAnswer } from "../alerts/report.ts";
import { readBody, requireAdmin } from "./admin.ts";


export const alertRoutes = new Hono<AppEnv>();

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());


async function requireProject(db: D1Database, projectId: string) {
  const project = await findProject(db, projectId);
  if (!project) throw new HTTPException(404, { message: "no such project" });
  return project;
}

/** The rule's destinations must all be the project's own: another project's id is answered like an unknown one. */
async function checkDestinations(db: D1Database, projectId: string, ids: readonly string[]): Promise<void> {
  const found = await existingDestinationIds(db, projectId, ids);
  if (ids.some((id) => !found.has(id))) throw new HTTPException(400, { message: "unknown destination" });
}

// ---------------------------------------------------------------------------------------------
// Destinations
// ---------------------------------------------------------------------------------------------

alertRoutes.use("/admin/projects/:id/alert-destinations", requireAdmin);
alertRoutes.use("/admin/projects/:id/alert-destinations/*", requireAdmin);
alertRoutes.use("/admin/projects/:id/alert-rules", requireAdmin);
alertRoutes.use("/admin/projects/:id/alert-rules/*", requireAdmin);

alertRoutes.post("/admin/projects/:id/alert-destinations", async (c) => {
  const body = await readBody(c.req.raw, CreateDestinationBody);
  const projectId = c.req.param("id");
  await requireProject(c.env.DB, projectId);
  const target = checkTarget(body.url, runsLocally(c.env));
  // The reason, never the URL: it is a secret.
  if (!target.ok) throw new HTTPException(400, { message: target.reason === "not_https" ? "url must be https" : "invalid url" });
  if ((await countProjectAlerts(c.env.DB, projectId)).destinations >= MAX_DESTINATIONS_PER_PROJECT) {
    throw new HTTPException(409, { message: "too many destinations" });
  }
  const id = "dst_" + randomBase62(16);
  const secret = body.kind === "webhook" ? generateWebhookSecret() : null;
  const hint = urlHint(target.url);
  await insertDestinationStatement(c.env.DB, {
    destination_id: id,
    project_id: projectId,
    kind: body.kind,
    name: body.name ?? null,
    url: target.url.toString(),
    url_hint: hint,
    secret,
    created_at_ms: Date.now(),
  }).run();
  return c.json({ id, kind: body.kind, name: body.name ?? null, url_hint: hint, ...(secret !== null ? { secret } : {}) }, 201);
});

alertRoutes.get("/admin/projects/:id/alert-destinations", async (c) => {
  const projectId = c.req.param("id");
  await requireProject(c.env.DB, projectId);
  const destinations = await listDestinations(c.env.DB, projectId);
  return c.json({
    destinations: destinations.map((d) => ({ id: d.destination_id, kind: d.kind, name: d.name, url_hint: d.url_hint, created_at: iso(d.created_at_ms) })),
  });
});

alertRoutes.delete("/admin/projects/:id/alert-destinations/:dest", async (c) => {
  const projectId = c.req.param("id");
  const destinationId = c.req.param("dest");
  if ((await rulesUsingDestination(c.env.DB, projectId, destinationId)).length > 0) {
    throw new HTTPException(409, { message: "destination used by a rule" });
  }
  if (!(await deleteDestination(c.env.DB, projectId, destinationId))) throw new HTTPException(404, { message: "no such destination" });
  return c.body(null, 204);
});

alertRoutes.post("/admin/projects/:id/alert-destinations/:dest/test", async (c) => {
  const projectId = c.req.param("id");
  const destinationId = c.req.param("dest");
  const project = await requireProject(c.env.DB, projectId);
  if ((await existingDestinationIds(c.env.DB, projectId, [destinationId])).size === 0) {
    throw new HTTPException(404, { message: "no such destination" });
  }
  const nowMs = Date.now();
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
    at: new Date(nowMs).toISOString(),
    url: dashboardUrl(c.env.PUBLIC_URL, scope),
  };
  const row = await insertTestNotificationStatement(c.env.DB, {
    project_id: projectId,
    destination_id: destinationId,
    dedupe_key: `test|${destinationId}|${randomBase62(16)}`,
    payload_json: JSON.stringify(payload),
    now_ms: nowMs,
  }).first<{ notification_id: number }>();
  // Delivered by the next cron run, like every notification (SPEC §5: 202, queued).
  return c.json({ notification_id: row?.notification_id ?? null }, 202);
});

// ---------------------------------------------------------------------------------------------
// Rules
// ---------------------------------------------------------------------------------------------

alertRoutes.post("/admin/projects/:id/alert-rules", async (c) => {
  const fields = await readBody(c.req.raw, CreateRuleBody);
  const projectId = c.req.param("id");
  await requireProject(c.env.DB, projectId);
  await checkDestinations(c.env.DB, projectId, fields.destinations);
  if ((await countProjectAlerts(c.env.DB, projectId)).rules >= MAX_RULES_PER_PROJECT) {
    throw new HTTPException(409, { message: "too many rules" });
  }
  const nowMs = Date.now();
  const rule: AlertRule = { ...fields, id: "rul_" + randomBase62(16), project_id: projectId, created_at_ms: nowMs, updated_at_ms: nowMs };
  await insertRuleStatement(c.env.DB, rule).run();
  return c.json(ruleAnswer(rule, []), 201);
});

alertRoutes.get("/admin/projects/:id/alert-rules", async (c) => {
  const projectId = c.req.param("id");
  await requireProject(c.env.DB, projectId);
  const [rules, states] = await Promise.all([listRules(c.env.DB, projectId), listProjectStates(c.env.DB, projectId)]);
  return c.json({ rules: rules.map((r) => ruleAnswer(asAlertRule(r), states)) });
});

alertRoutes.get("/admin/projects/:id/alert-rules/:rule", async (c) => {
  const projectId = c.req.param("id");
  const record = await findRule(c.env.DB, projectId, c.req.param("rule"));
  if (!record) throw new HTTPException(404, { message: "no such rule" });
  const states = await listProjectStates(c.env.DB, projectId);
  return c.json(ruleAnswer(asAlertRule(record), states));
});

alertRoutes.patch("/admin/projects/:id/alert-rules/:rule", async (c) => {
  const patch = await readBody(c.req.raw, UpdateRuleBody);
  const projectId = c.req.param("id");
  const record = await findRule(c.env.DB, projectId, c.req.param("rule"));
  if (!record) throw new HTTPException(404, { message: "no such rule" });
  const current = asAlertRule(record);
  const { id, project_id, created_at_ms, updated_at_ms: _previous, ...currentFields } = current;
  const merged = AlertRuleSchema.safeParse({ ...currentFields, ...patch });
  if (!merged.success) throw new HTTPException(400, { message: "invalid body" });
  await checkDestinations(c.env.DB, projectId, merged.data.destinations);
  const rule: AlertRule = { ...merged.data, id, project_id, created_at_ms, updated_at_ms: Date.now() };
  const reset = FIELDS_THAT_RESET_STATES.some((f) => rule[f] !== current[f]);
  await c.env.DB.batch(updateRuleStatements(c.env.DB, rule, reset));
  return c.json(ruleAnswer(rule, reset ? [] : await listProjectStates(c.env.DB, projectId)));
});

alertRoutes.delete("/admin/projects/:id/alert-rules/:rule", async (c) => {
  if (!(await deleteRule(c.env.DB, c.req.param("id"), c.req.param("rule")))) throw new HTTPException(404, { message: "no such rule" });
  return c.body(null, 204);
});

// ---------------------------------------------------------------------------------------------
// GET /v1/metrics/alerts (read key)
// ---------------------------------------------------------------------------------------------

alertRoutes.get("/metrics/alerts", requireKey("read"), async (c) => {
  c.header("Cache-Control", "private, no-store");
  return c.json(await alertsReport(c.env.DB, c.var.projectId, DELIVERY_LOG_LIMIT));
});
