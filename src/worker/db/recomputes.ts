// The `recomputes` table (migration 0024): which projects' counters are being recomputed from their
// raw calls, and how far each got. The steps themselves are rollup/recompute.ts.

export const RECOMPUTE_STATES = ["clearing", "counting", "hours", "pairs", "done"] as const;
export type RecomputeState = (typeof RECOMPUTE_STATES)[number];

export interface RecomputeRow {
  project_id: string;
  requested_at_ms: number;
  state: RecomputeState;
  /** The first day recomputed (epoch ms, a UTC day start); null until the counting starts. */
  from_ms: number | null;
  kept_from_ms: number | null;
  steps: number;
  sessions: number;
  calls: number;
  hour_rows: number;
  pair_rows: number;
  finished_at_ms: number | null;
}

/** A recompute asked for again starts from its beginning. */
const START_AGAIN = `ON CONFLICT (project_id) DO UPDATE SET requested_at_ms = excluded.requested_at_ms, state = 'clearing',
  kept_from_ms = NULL, from_ms = NULL, cursor = '[]', step = NULL, steps = 0, sessions = 0, calls = 0,
  hour_rows = 0, pair_rows = 0, finished_at_ms = NULL`;

/**
 * The recompute mark, for a migration that changes a rule the recompute applies: every project is
 * recomputed by the next rollup runs (one under way starts again). docs/migrations.md quotes it.
 */
export const RECOMPUTE_MARK_SQL = `INSERT INTO recomputes (project_id, requested_at_ms, state)
SELECT project_id, 0, 'clearing' FROM projects WHERE true
${START_AGAIN};`;

/** False when one is already under way (left as it is). */
export async function requestRecompute(db: D1Database, projectId: string, nowMs: number): Promise<boolean> {
  const result = await db
    .prepare(
      `INSERT INTO recomputes (project_id, requested_at_ms, state) VALUES (?1, ?2, 'clearing')
       ${START_AGAIN}
       WHERE recomputes.state = 'done'`,
    )
    .bind(projectId, nowMs)
    .run();
  return (result.meta.changes ?? 0) > 0;
}

export async function readRecompute(db: D1Database, projectId: string): Promise<RecomputeRow | null> {
  return db
    .prepare(
      `SELECT project_id, requested_at_ms, state, from_ms, kept_from_ms, steps, sessions, calls, hour_rows, pair_rows, finished_at_ms
       FROM recomputes WHERE project_id = ?1`,
    )
    .bind(projectId)
    .first<RecomputeRow>();
}
