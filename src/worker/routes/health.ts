// GET /v1/admin/health and POST /v1/admin/health/requeue (docs/ingest.md), under the admin routes.
import { Hono } from "hono";
import type { AppEnv } from "../env.ts";
import { rollupLagByProject, type RollupLag } from "../db/rollup-lag.ts";
import { INGEST_HEALTH_NAME } from "../health/ingest-health.ts";
import { requeueDeadLetters } from "../queues/ingest-dead-letters.ts";
import { databases, directoryDb } from "../databases.ts";
import { analyticsDrift } from "./health-analytics.ts";

export const healthRoutes = new Hono<AppEnv>();

const isoOrNull = (ms: number | null | undefined) => (ms === null || ms === undefined ? null : new Date(ms).toISOString());

/** Dead letters sent back per request (each is one queue message). */
export const REQUEUE_LIMIT = 100;

healthRoutes.get("/", async (c) => {
  const health = c.env.INGEST_HEALTH.get(c.env.INGEST_HEALTH.idFromName(INGEST_HEALTH_NAME));
  const snapshot = await health.snapshot();
  // Every database on its own (SPEC §7). D1 may be the very thing that is down: the answer then
  // says so for that database instead of failing.
  const nowMs = Date.now();
  const perDatabase = await Promise.all(
    databases(c.env).map(async (d) => {
      try {
        return { name: d.name, state: "ok" as const, lag: await rollupLagByProject(d.db, nowMs) };
      } catch {
        return { name: d.name, state: "unavailable" as const, lag: { as_of_ms: null, projects: [] } as RollupLag };
      }
    }),
  );
  const database: "ok" | "unavailable" = perDatabase.every((d) => d.state === "ok") ? "ok" : "unavailable";
  // The deployment's rollup is as fresh as its least fresh database; the projects behind, of all of them.
  const asOfs = perDatabase.map((d) => d.lag.as_of_ms);
  const lag: RollupLag = {
    as_of_ms: asOfs.some((a) => a === null) ? null : Math.min(...(asOfs as number[])),
    projects: perDatabase.flatMap((d) => d.lag.projects).sort((a, b) => a.oldest_pending_received_at_ms - b.oldest_pending_received_at_ms || (a.project_id < b.project_id ? -1 : 1)),
  };
  const pending = snapshot.pending.sort((a, b) => a.oldest_received_at_ms - b.oldest_received_at_ms);
  return c.json({
    database,
    queue: {
      backlog_batches: pending.reduce((n, p) => n + p.batches, 0),
      oldest_received_at: isoOrNull(pending[0]?.oldest_received_at_ms),
      projects: pending.map((p) => ({ project_id: p.project_id, batches: p.batches, oldest_received_at: isoOrNull(p.oldest_received_at_ms) })),
    },
    dead_letters: {
      batches: snapshot.dead_letters.batches,
      oldest_received_at: isoOrNull(snapshot.dead_letters.oldest_received_at_ms),
      projects: snapshot.dead_letters.projects,
    },
    last_24h: snapshot.last_24h,
    databases: perDatabase.map((d) => ({
      name: d.name,
      state: d.state,
      rollup_as_of: isoOrNull(d.lag.as_of_ms),
      lag_ms: d.lag.as_of_ms === null ? null : Math.max(0, nowMs - d.lag.as_of_ms),
      projects_behind: d.lag.projects.length,
    })),
    // A project whose backlog is pathological falls behind on its own (docs/metrics.md): listed
    // here, most behind first, with what waits for it.
    // Analytics Engine against D1's hour rows for the last rolled-up hours (SPEC §8).
    analytics: await analyticsDrift(c.env, directoryDb(c.env), lag.as_of_ms),
    rollup: {
      as_of: isoOrNull(lag.as_of_ms),
      projects_behind: lag.projects.map((p) => ({
        project_id: p.project_id,
        lag_ms: p.lag_ms,
        oldest_pending_received_at: isoOrNull(p.oldest_pending_received_at_ms),
        pending_requests: p.pending_requests,
        pending_calls: p.pending_calls,
        pending_startups: p.pending_startups,
        pending_agreements: p.pending_agreements,
      })),
    },
  });
});

healthRoutes.post("/requeue", async (c) => {
  const requeued = await requeueDeadLetters(c.env, REQUEUE_LIMIT);
  return c.json({ requeued }, 200);
});
