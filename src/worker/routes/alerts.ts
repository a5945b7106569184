// Alert routes (SPEC §5): rules and destinations of a project under /v1/admin/projects/:id/alert-*
// (ADMIN_TOKEN). What a read key sees of them, GET /v1/metrics/alerts, is a read route (metrics.ts).
// A destination's URL and secret are answered once, at creation, and never again. Every write is
// alerts/manage.ts's, the same the dashboard's admin forms use; this file only decides statuses.
import { Hono } from "hono";
import { z } from "zod";
import type { AppContext, AppEnv } from "../env.ts";
import { apiError, codeOfStatus, validBody } from "../errors.ts";
import { findRule, listProjectStates, listRules } from "../db/alerts.ts";
import { findProject } from "../db/projects.ts";
import {
  MANAGE_ERRORS,
  MANAGE_ERROR_MESSAGES,
  createDestination,
  createRule,
  destinationList,
  queueTestNotification,
  removeDestination,
  removeRule,
  updateRule,
  type ManageContext,
  type Outcome,
} from "../alerts/manage.ts";
import { runsLocally } from "../alerts/targets.ts";
import { ruleAnswer } from "../alerts/report.ts";
import { requireAdmin } from "./admin.ts";
import { projectDatabaseOfParam } from "../databases.ts";

export const alertRoutes = new Hono<AppEnv>();

/**
 * What alerts/manage.ts needs of a request: the project's database (resolved for the request),
 * whether local targets are allowed, the public origin, the request's clock. The dashboard's admin
 * forms use it too.
 */
export function manageContext(c: AppContext): ManageContext {
  return { db: c.var.db, local: runsLocally(c.env), publicUrl: c.env.PUBLIC_URL, nowMs: Date.now() };
}

/** The service's value, or its refusal as the API's error (the code of its status, a fixed message). */
function valueOf<T>(outcome: Outcome<T>): T {
  if (!outcome.ok) throw apiError(codeOfStatus(MANAGE_ERRORS[outcome.error]), MANAGE_ERROR_MESSAGES[outcome.error]);
  return outcome.value;
}

/**
 * A rule's or a destination's body: a JSON object, by the API's body validator; its fields are
 * checked by alerts/manage.ts with the rule and destination schemas, the same the dashboard's forms
 * go through, so both refuse the same inputs.
 */
const JsonObjectBody = z.record(z.string(), z.unknown());

async function requireProject(db: D1Database, projectId: string) {
  const project = await findProject(db, projectId);
  if (!project) throw apiError("NOT_FOUND", MANAGE_ERROR_MESSAGES.no_such_project);
  return project;
}

// ---------------------------------------------------------------------------------------------
// Destinations
// ---------------------------------------------------------------------------------------------

// Admin first, then the project's database (SPEC §7), resolved once for the request.
for (const path of ["/admin/projects/:id/alert-destinations", "/admin/projects/:id/alert-destinations/*", "/admin/projects/:id/alert-rules", "/admin/projects/:id/alert-rules/*"]) {
  alertRoutes.use(path, requireAdmin, projectDatabaseOfParam);
}

alertRoutes.post("/admin/projects/:id/alert-destinations", validBody(JsonObjectBody), async (c) => {
  const d = valueOf(await createDestination(manageContext(c), c.req.param("id"), c.req.valid("json")));
  return c.json({ id: d.id, kind: d.kind, name: d.name, url_hint: d.url_hint, ...(d.secret !== null ? { secret: d.secret } : {}) }, 201);
});

alertRoutes.get("/admin/projects/:id/alert-destinations", async (c) => {
  const projectId = c.req.param("id");
  await requireProject(c.var.db, projectId);
  return c.json({ destinations: await destinationList(c.var.db, projectId) });
});

alertRoutes.delete("/admin/projects/:id/alert-destinations/:dest", async (c) => {
  valueOf(await removeDestination(manageContext(c), c.req.param("id"), c.req.param("dest")));
  return c.body(null, 204);
});

alertRoutes.post("/admin/projects/:id/alert-destinations/:dest/test", async (c) => {
  const queued = valueOf(await queueTestNotification(manageContext(c), c.req.param("id"), c.req.param("dest")));
  // Delivered by the next cron run, like every notification (SPEC §5: 202, queued).
  return c.json(queued, 202);
});

// ---------------------------------------------------------------------------------------------
// Rules
// ---------------------------------------------------------------------------------------------

alertRoutes.post("/admin/projects/:id/alert-rules", validBody(JsonObjectBody), async (c) => {
  const rule = valueOf(await createRule(manageContext(c), c.req.param("id"), c.req.valid("json")));
  return c.json(ruleAnswer(rule, []), 201);
});

alertRoutes.get("/admin/projects/:id/alert-rules", async (c) => {
  const projectId = c.req.param("id");
  await requireProject(c.var.db, projectId);
  const [rules, states] = await Promise.all([listRules(c.var.db, projectId), listProjectStates(c.var.db, projectId)]);
  return c.json({ rules: rules.map((r) => ruleAnswer(r, states)) });
});

alertRoutes.get("/admin/projects/:id/alert-rules/:rule", async (c) => {
  const projectId = c.req.param("id");
  const record = await findRule(c.var.db, projectId, c.req.param("rule"));
  if (!record) throw apiError("NOT_FOUND", MANAGE_ERROR_MESSAGES.no_such_rule);
  const states = await listProjectStates(c.var.db, projectId);
  return c.json(ruleAnswer(record, states));
});

alertRoutes.patch("/admin/projects/:id/alert-rules/:rule", validBody(JsonObjectBody), async (c) => {
  const { rule, states } = valueOf(await updateRule(manageContext(c), c.req.param("id"), c.req.param("rule"), c.req.valid("json")));
  return c.json(ruleAnswer(rule, states));
});

alertRoutes.delete("/admin/projects/:id/alert-rules/:rule", async (c) => {
  valueOf(await removeRule(manageContext(c), c.req.param("id"), c.req.param("rule")));
  return c.body(null, 204);
});
