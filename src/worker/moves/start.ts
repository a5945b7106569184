// Asking for a move (SPEC §7, POST /v1/admin/projects/:id/move) and how a move is shown
// (GET /v1/admin/moves/:id). The steps are steps.ts; the job that runs them, queues/rollup-jobs.ts.
import type { Env } from "../env.ts";
import { apiError } from "../errors.ts";
import { databases, directoryDb, resolveProjectDatabase } from "../databases.ts";
import { findProject } from "../db/projects.ts";
import { readRecompute } from "../db/recomputes.ts";
import { findRunningMove, insertMoveStatement, type MoveRow } from "../db/moves.ts";
import { randomBase62 } from "../auth.ts";

/**
 * Records a move of the project to the database named `targetName` (its steps start with the next
 * job): 404 for an unknown project, 400 for a database that is not one of the deployment's or is
 * the project's own, 409 while the project has a move or a recompute under way.
 */
export async function startMove(env: Env, projectId: string, targetName: string, nowMs: number): Promise<MoveRow> {
  const directory = directoryDb(env);
  if (!(await findProject(directory, projectId))) throw apiError("NOT_FOUND", "no such project");
  const names = databases(env).map((d) => d.name);
  if (!names.includes(targetName)) throw apiError("BAD_REQUEST", `database must be one of: ${names.join(", ")}`);
  const source = await resolveProjectDatabase(env, projectId);
  if (source.name === targetName) throw apiError("BAD_REQUEST", `the project is already in ${targetName}`);
  const running = await findRunningMove(directory, projectId);
  if (running) throw apiError("CONFLICT", `a move of this project is under way (${running.move_id})`);
  const recompute = await readRecompute(source.db, projectId);
  if (recompute && recompute.state !== "done") throw apiError("CONFLICT", "a recompute of this project is under way; move it when it is done");
  const moveId = "mov_" + randomBase62(16);
  try {
    await insertMoveStatement(directory, { move_id: moveId, project_id: projectId, source: source.name, target: targetName, created_at_ms: nowMs }).run();
  } catch (err) {
    // The unique index of unfinished moves: another request started one just now.
    if (await findRunningMove(directory, projectId)) throw apiError("CONFLICT", "a move of this project is under way");
    throw err;
  }
  const move = await findRunningMove(directory, projectId);
  if (!move) throw new Error("the move just recorded is not there");
  return move;
}

const isoOrNull = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

/** A move as the admin API shows it. */
export function moveBody(m: MoveRow) {
  return {
    move_id: m.move_id,
    project_id: m.project_id,
    // SPEC §7's four states: the drain and the cleanup after the switch are still "switching"
    // (the source's last rows go over, then are deleted); `phase` says which.
    state: m.state === "draining" ? "switching" : m.state,
    // The step within the state (docs/scaling.md, "Moving a project"), and the table it works on.
    phase: m.phase,
    table: m.step_table,
    source: m.source,
    target: m.target,
    // Rows written into the target per table (copied, then drained).
    counts: JSON.parse(m.counts_json) as Record<string, number>,
    steps: m.steps,
    max_step_rows: m.max_step_rows,
    started_at: isoOrNull(m.created_at_ms),
    switched_at: isoOrNull(m.switched_at_ms),
    finished_at: isoOrNull(m.finished_at_ms),
    error: m.error,
  };
}
