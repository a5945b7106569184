// The Analytics Engine part of GET /v1/admin/health (SPEC §8 "Reconciliation"): AE's calls against
// D1's hour rows. A failure is reported, never a failed health answer.
import { executorFor } from "../analytics/executors.ts";
import { hourlyCallsSql } from "../analytics/explore-sql.ts";
import { reconcile, type HourlyCalls, type HourlyEstimate, type Reconciliation } from "../analytics/reconcile.ts";
import { databases } from "../databases.ts";
import { callsPerHourAndTool } from "../db/metrics.ts";
import { listProjects } from "../db/projects.ts";
import type { Env } from "../env.ts";
import { HOUR_MS, hourStartMs } from "../time.ts";
import { errorName, log } from "../log.ts";

/** Hours compared: the last three the rollup has completed (a few queries, a few hundred rows). */
export const RECONCILED_HOURS = 3;

export type AnalyticsHealth =
  | { state: "unconfigured" | "unavailable" | "no_rollup_yet" }
  | ({ state: "ok" | "drift"; from: string; to: string; executor: string } & Reconciliation);

export async function analyticsDrift(env: Env, directory: D1Database, asOfMs: number | null): Promise<AnalyticsHealth> {
  const executor = executorFor(env);
  if (executor === null) return { state: "unconfigured" };
  if (asOfMs === null) return { state: "no_rollup_yet" };
  const endMs = hourStartMs(asOfMs);
  const startMs = endMs - RECONCILED_HOURS * HOUR_MS;
  try {
    const projectIds = (await listProjects(directory)).map((p) => p.project_id);
    const [aeRows, ...d1Rows] = await Promise.all([
      executor.query(hourlyCallsSql(startMs, endMs, executor.table)),
      ...databases(env).map((d) => callsPerHourAndTool(d.db, projectIds, startMs, endMs)),
    ]);
    // Only the projects that exist: a deleted project's points stay in AE until they expire.
    const known = new Set(projectIds);
    const ae: HourlyEstimate[] = aeRows.filter((r) => known.has(String(r.project_id))).map((r) => ({
      project_id: String(r.project_id),
      hour_ms: Number(r.hour_ms),
      tool: String(r.tool),
      calls: Number(r.calls),
      variance: Number(r.variance),
      sample_interval_max: Number(r.sample_interval_max),
    }));
    const d1: HourlyCalls[] = d1Rows.flat().map((r) => ({ project_id: r.project_id, hour_ms: Number(r.hour_ms), tool: r.tool, calls: Number(r.calls) }));
    const result = reconcile(d1, ae);
    return { state: result.drifting > 0 ? "drift" : "ok", from: new Date(startMs).toISOString(), to: new Date(endMs).toISOString(), executor: executor.name, ...result };
  } catch (err) {
    log.error("analytics_reconcile_failed", { error: errorName(err) });
    return { state: "unavailable" };
  }
}
