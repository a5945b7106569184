// Admin routes (SPEC §3): projects, keys, budgets, admin sessions, recomputes and moves, all behind
// `Authorization: Bearer <ADMIN_TOKEN>` (throttled, throttle/credentials.ts).
import { Hono, type Context, type MiddlewareHandler } from "hono";
import { bearerAuth } from "hono/bearer-auth";
import { timingSafeEqual } from "hono/utils/buffer";
import { z } from "zod";
import type { AppEnv } from "../env.ts";
import { apiError, validBody } from "../errors.ts";
import { bearerToken, generateKey, isProjectKeyShaped, keyIdOf, randomBase62, revokeKeyStates, sha256Hex, type KeyKind } from "../auth.ts";
import { findKeyById, insertKeyStatement, listKeys, revokeKey } from "../db/keys.ts";
import { revokeGrantsOf } from "../oauth/authorization-server.ts";
import { deleteAdminSessions, deleteSessionsOfKey } from "../db/sessions.ts";
import { ADMIN_PREFIX, adminPrefixRefusal, attemptOf, recordFailedCredential, tooManyAttempts } from "../throttle/credentials.ts";
import { deleteProject, findProject, insertProjectStatement, listProjects, setPayloadBudget } from "../db/projects.ts";
import { readRecompute, requestRecompute, type RecomputeRow } from "../db/recomputes.ts";
import { INGEST_HEALTH_NAME } from "../health/ingest-health.ts";
import { healthRoutes } from "./health.ts";
import { moveRoutes } from "./moves.ts";
import { insertDirectoryStatement, listDirectory } from "../db/directory.ts";
import { findRunningMove } from "../db/moves.ts";
import {
  FIRST_DATABASE,
  databaseOf,
  databases,
  directoryDb,
  placeNewProject,
  projectDatabaseOfParam,
  resolveProjectDatabase,
  summarizeDatabases,
  type Database,
} from "../databases.ts";
import { errorName, log } from "../log.ts";

export const MAX_PROJECT_NAME_CHARS = 200;
/** Upper bound of a settable budget: far above what one key can send, low enough to stay an integer. */
export const MAX_PAYLOAD_BUDGET_PER_MINUTE = 100_000_000;

const CreateProjectBody = z.object({
  name: z.string().trim().min(1).max(MAX_PROJECT_NAME_CHARS),
  /** The database to place the project in (SPEC §7); default: the one with the fewest stored bytes. */
  database: z.string().min(1).max(64).optional(),
});
const CreateKeyBody = z.object({ kind: z.enum(["ingest", "read"]) });
const UpdateProjectBody = z.object({
  payload_budget_per_minute: z.number().int().min(1).max(MAX_PAYLOAD_BUDGET_PER_MINUTE),
});

/** bearerAuth's refusal, thrown as the API's error so that app.onError writes it like every other. */
const unauthorized = (): never => {
  throw apiError("UNAUTHORIZED", "admin token required", { "WWW-Authenticate": 'Bearer realm="mcpulse-admin"' });
};

export const adminRoutes = new Hono<AppEnv>();

/** Whether `token` is the configured ADMIN_TOKEN (compared in constant time); never, when none is configured. */
export async function isAdminToken(env: AppEnv["Bindings"], token: string): Promise<boolean> {
  const adminToken = env.ADMIN_TOKEN;
  return typeof adminToken === "string" && adminToken.length > 0 && (await timingSafeEqual(adminToken, token));
}

/** A wrong token or a malformed header: counted as a failed sign-in, then 401 — or 429 once over the limit. */
async function failedAdminAttempt(c: Context): Promise<Response> {
  const refusal = await recordFailedCredential(c.env as AppEnv["Bindings"], attemptOf(c.req.raw, ADMIN_PREFIX), Date.now());
  if (refusal !== null) throw tooManyAttempts(refusal);
  return unauthorized();
}

/** `Authorization: Bearer <ADMIN_TOKEN>`; a malformed header is answered 401 like a wrong token (bearerAuth's default would be 400). */
const adminBearer = bearerAuth<AppEnv>({
  verifyToken: (token, c) => isAdminToken(c.env, token),
  noAuthenticationHeader: { message: unauthorized },
  invalidAuthenticationHeader: { message: failedAdminAttempt },
  invalidToken: { message: failedAdminAttempt },
});

/**
 * The admin routes' guard (SPEC §3). A project key sent here by mistake is a 401 and not counted (it
 * is nobody's guess, and counting it would lock its own network out). While the admin prefix's window
 * is full every attempt is refused before comparing (ADMIN_TOKEN may be guessable).
 */
export const requireAdmin: MiddlewareHandler<AppEnv> = async (c, next) => {
  const header = c.req.header("authorization");
  if (header !== undefined) {
    const token = bearerToken(header);
    if (token !== null && isProjectKeyShaped(token) && !(await isAdminToken(c.env, token))) {
      throw apiError("UNAUTHORIZED", "a project key is not the admin token", { "WWW-Authenticate": 'Bearer realm="mcpulse-admin"' });
    }
    const refusal = await adminPrefixRefusal(c.env, c.req.raw, Date.now());
    if (refusal !== null) throw tooManyAttempts(refusal);
  }
  return adminBearer(c, next);
};

adminRoutes.use("*", requireAdmin);
adminRoutes.route("/health", healthRoutes);
adminRoutes.route("/", moveRoutes);

/** A deleted project's queue backlog and dead letters are forgotten with it (best effort, logged). */
async function forgetProjectHealth(env: AppEnv["Bindings"], projectId: string): Promise<void> {
  try {
    await env.INGEST_HEALTH.get(env.INGEST_HEALTH.idFromName(INGEST_HEALTH_NAME)).forgetProject(projectId);
  } catch (err) {
    log.error("ingest_health_unavailable", { kind: "forget_project", project_id: projectId, error: errorName(err) });
  }
}

async function newKeyRow(kind: KeyKind, projectId: string, nowMs: number) {
  const key = generateKey(kind);
  return { key, row: { key_id: keyIdOf(key), project_id: projectId, kind, key_sha256: await sha256Hex(key), created_at_ms: nowMs } };
}

/** The database a new project goes to: the one the body names (400 when there is none of that name), else placement. */
async function databaseForNewProject(env: AppEnv["Bindings"], named: string | undefined): Promise<Database> {
  if (named !== undefined) {
    const found = databases(env).find((d) => d.name === named);
    if (!found) throw apiError("BAD_REQUEST", `database must be one of: ${databases(env).map((d) => d.name).join(", ")}`);
    return found;
  }
  return databaseOf(env, placeNewProject(await summarizeDatabases(env)));
}

adminRoutes.post("/projects", validBody(CreateProjectBody), async (c) => {
  const { name, database: named } = c.req.valid("json");
  const database = await databaseForNewProject(c.env, named);
  const nowMs = Date.now();
  const projectId = "prj_" + randomBase62(16);
  const ingest = await newKeyRow("ingest", projectId, nowMs);
  const read = await newKeyRow("read", projectId, nowMs);
  const directory = directoryDb(c.env);
  const project = { project_id: projectId, name, created_at_ms: nowMs };
  // In another database the project's row is written there first (its rows' writes check it), then
  // the directory's batch makes the project and its keys exist at once; if that fails, the lone row goes.
  const elsewhere = database.name !== FIRST_DATABASE;
  if (elsewhere) await insertProjectStatement(database.db, project).run();
  try {
    await directory.batch([
      insertProjectStatement(directory, project),
      insertDirectoryStatement(directory, projectId, database.name),
      insertKeyStatement(directory, ingest.row),
      insertKeyStatement(directory, read.row),
    ]);
  } catch (err) {
    if (elsewhere) await deleteProject(database.db, projectId).catch(() => false);
    throw err;
  }
  return c.json({ project_id: projectId, name, database: database.name, ingest_key: ingest.key, read_key: read.key }, 201);
});

adminRoutes.get("/databases", async (c) => {
  return c.json({ databases: await summarizeDatabases(c.env) });
});

const isoOrNull = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

adminRoutes.get("/projects", async (c) => {
  const [projects, directory] = await Promise.all([listProjects(directoryDb(c.env)), listDirectory(directoryDb(c.env))]);
  return c.json({
    projects: projects.map((p) => ({
      project_id: p.project_id,
      name: p.name,
      database: directory.get(p.project_id) ?? FIRST_DATABASE,
      created_at: isoOrNull(p.created_at_ms),
      payload_budget_per_minute: p.payload_budget_per_minute,
    })),
  });
});

adminRoutes.delete("/projects/:id", async (c) => {
  const projectId = c.req.param("id");
  const directory = directoryDb(c.env);
  const database = await resolveProjectDatabase(c.env, projectId);
  if (await findRunningMove(directory, projectId)) throw apiError("CONFLICT", "a move of this project is under way; delete it when the move is finished");
  const keys = await listKeys(directory, projectId);
  // Its rows in its own database first (one transaction there), then the directory's rows (keys
  // first, the directory row and the project last): a failure between the two leaves the project
  // listed, and a second DELETE finishes it.
  if (database.name !== FIRST_DATABASE) await deleteProject(database.db, projectId);
  if (!(await deleteProject(directory, projectId))) throw apiError("NOT_FOUND", "no such project");
  // Its ingest keys stop at once where their objects hold them (SPEC §3), not after their refresh.
  await revokeKeyStates(c.env, keys.filter((k) => k.kind === "ingest").map((k) => k.key_id));
  await revokeGrantsOf(c.env, new URL(c.req.url).origin, projectId, null);
  await forgetProjectHealth(c.env, projectId);
  return c.body(null, 204);
});

adminRoutes.get("/projects/:id/keys", async (c) => {
  const projectId = c.req.param("id");
  if (!(await findProject(directoryDb(c.env), projectId))) throw apiError("NOT_FOUND", "no such project");
  const keys = await listKeys(directoryDb(c.env), projectId);
  return c.json({
    keys: keys.map((k) => ({ key_id: k.key_id, kind: k.kind, created_at: isoOrNull(k.created_at_ms), revoked_at: isoOrNull(k.revoked_at_ms) })),
  });
});

adminRoutes.patch("/projects/:id", validBody(UpdateProjectBody), async (c) => {
  const { payload_budget_per_minute } = c.req.valid("json");
  const project = await setPayloadBudget(directoryDb(c.env), c.req.param("id"), payload_budget_per_minute);
  if (!project) throw apiError("NOT_FOUND", "no such project");
  return c.json(
    { project_id: project.project_id, name: project.name, payload_budget_per_minute: project.payload_budget_per_minute },
    200,
  );
});

adminRoutes.post("/projects/:id/keys", validBody(CreateKeyBody), async (c) => {
  const { kind } = c.req.valid("json");
  const projectId = c.req.param("id");
  if (!(await findProject(directoryDb(c.env), projectId))) throw apiError("NOT_FOUND", "no such project");
  const created = await newKeyRow(kind, projectId, Date.now());
  await insertKeyStatement(directoryDb(c.env), created.row).run();
  return c.json({ key: created.key, key_id: created.row.key_id }, 201);
});

adminRoutes.delete("/keys/:key_id", async (c) => {
  const keyId = c.req.param("key_id");
  const key = await findKeyById(directoryDb(c.env), keyId);
  if (!key || !(await revokeKey(directoryDb(c.env), keyId, Date.now()))) {
    throw apiError("NOT_FOUND", "no such key");
  }
  // The OAuth grants it approved, with their tokens (SPEC §9); /mcp also checks the key on every call.
  if (key.kind === "read") await revokeGrantsOf(c.env, new URL(c.req.url).origin, key.project_id, keyId);
  // Immediate where the worker can see it: the key's object refuses it from now on (SPEC §1.1).
  if (keyId.startsWith("mp_live_")) await revokeKeyStates(c.env, [keyId]);
  // Its dashboard sessions end with it (the session check also joins the key, so they already could not be used).
  await deleteSessionsOfKey(directoryDb(c.env), keyId);
  return c.body(null, 204);
});

/** Ends every admin session of the dashboard, in every browser, without rotating ADMIN_TOKEN. */
adminRoutes.delete("/admin-sessions", async (c) => {
  return c.json({ ended: await deleteAdminSessions(directoryDb(c.env)) }, 200);
});

/** A recompute and its progress as the admin API shows them (docs/migrations.md, "Recomputing counters"). */
function recomputeBody(r: RecomputeRow) {
  return {
    project_id: r.project_id,
    state: r.state,
    requested_at: isoOrNull(r.requested_at_ms),
    finished_at: isoOrNull(r.finished_at_ms),
    // The first day recomputed; the days before it are frozen. Null until the counting starts.
    from: r.from_ms === null ? null : isoOrNull(r.from_ms)!.slice(0, 10),
    sequences: r.sessions,
    calls: r.calls,
    hour_rows: r.hour_rows,
    pair_rows: r.pair_rows,
    steps: r.steps,
  };
}

/**
 * Recomputes the project's chain figures and pairs from the raw calls still kept, in bounded steps
 * that the rollup cron runs (202: progress at the Location). 409 while one is under way.
 */
// A recompute runs in the project's own database (its raw calls and counters), resolved once.
adminRoutes.use("/projects/:id/recompute", projectDatabaseOfParam);

adminRoutes.post("/projects/:id/recompute", async (c) => {
  const projectId = c.req.param("id");
  if (!(await findProject(directoryDb(c.env), projectId))) throw apiError("NOT_FOUND", "no such project");
  if (await findRunningMove(directoryDb(c.env), projectId)) throw apiError("CONFLICT", "a move of this project is under way; recompute it when the move is finished");
  if (!(await requestRecompute(c.var.db, projectId, Date.now()))) throw apiError("CONFLICT", "a recompute of this project is under way");
  const recompute = await readRecompute(c.var.db, projectId);
  if (!recompute) throw apiError("NOT_FOUND", "no such project");
  return c.json(recomputeBody(recompute), 202, { Location: `/v1/admin/projects/${encodeURIComponent(projectId)}/recompute` });
});

adminRoutes.get("/projects/:id/recompute", async (c) => {
  const recompute = await readRecompute(c.var.db, c.req.param("id"));
  if (!recompute) throw apiError("NOT_FOUND", "no recompute of this project");
  return c.json(recomputeBody(recompute), 200);
});
