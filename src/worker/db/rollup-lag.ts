// How far behind the rollup is, per project: read from what still waits, so it costs no write and
// is exact at any moment.
import { AGREEMENTS_WATERMARK, AS_OF, stateValueSql, startupsWatermarkSql } from "./rollup-state.ts";

export type ProjectRollupLag = {
  project_id: string;
  pending_requests: number;
  pending_calls: number;
  pending_startups: number;
  pending_agreements: number;
  /** Receive time of the oldest payload still waiting: the project's figures are complete up to just before it. */
  oldest_pending_received_at_ms: number;
  lag_ms: number;
};

export type RollupLag = {
  /** SPEC §2.6 as_of of the database (null before the first rollup). */
  as_of_ms: number | null;
  projects: ProjectRollupLag[];
};

// Emptied call_batches rows stay only for an hour (migration 0025), so the scan is about the
// backlog's size.
const LAG_SQL = `SELECT project_id, SUM(requests) AS pending_requests, SUM(calls) AS pending_calls, SUM(startups) AS pending_startups,
    SUM(agreements) AS pending_agreements, MIN(oldest) AS oldest_pending_received_at_ms
  FROM (
    SELECT project_id, COUNT(*) AS requests, SUM(call_count) AS calls, 0 AS startups, 0 AS agreements, MIN(received_at_ms) AS oldest
    FROM call_batches WHERE call_count > 0 GROUP BY project_id
    UNION ALL
    SELECT project_id, 0, 0, COUNT(*), 0, MIN(received_at_ms) FROM raw_startups
    WHERE startup_seq > ${startupsWatermarkSql()} GROUP BY project_id
    UNION ALL
    SELECT project_id, 0, 0, 0, COUNT(*), MIN(received_at_ms) FROM raw_agreements
    WHERE agreement_seq > ${stateValueSql(AGREEMENTS_WATERMARK)} GROUP BY project_id)
  GROUP BY project_id
  ORDER BY oldest_pending_received_at_ms, project_id`;

export async function rollupLagByProject(db: D1Database, nowMs: number): Promise<RollupLag> {
  const [asOf, lag] = await db.batch([
    db.prepare(`SELECT value FROM rollup_state WHERE name = '${AS_OF}'`),
    db.prepare(LAG_SQL),
  ]);
  const rows = (lag!.results ?? []) as Omit<ProjectRollupLag, "lag_ms">[];
  return {
    as_of_ms: ((asOf!.results?.[0] as { value?: number } | undefined)?.value ?? null),
    projects: rows.map((r) => ({ ...r, lag_ms: Math.max(0, nowMs - r.oldest_pending_received_at_ms) })),
  };
}
