// Which projects a rollup run leaves alone, decided once per run, by the statement that takes its
// lease (run.ts, which returns the decision): the projects a move holds (db/moves.ts: their rows are being copied, or wait for
// the move to release them) and, for the calls, those being recomputed (recompute.ts). Every later
// statement of the run reads that decision, bound as two JSON lists (:held_projects,
// :recomputing_projects), never project_holds or recomputes again.
//
// Why one decision per run stays right (test/worker/rollup/scope.test.ts):
// - Holds begin and end only while no rollup run holds the database's lease: a move takes that
//   lease for its hold, release and unhold steps (moves/steps.ts), so no run sees them change. (A
//   source's last step drops its hold once the project has no row left there: nothing to fold.)
// - A run steps only the recomputes of its decision (RECOMPUTE_SQL.next): one asked for during the
//   run waits for the next run, which leaves the project's calls alone from its start, so no call is
//   folded while that recompute counts. A recompute the run finishes leaves its decision, and the
//   project's waiting calls are folded by the same run.

/** The run's decision: the project ids it leaves alone. */
export type RunScope = { held: string[]; recomputing: string[] };

/**
 * Where a statement reads the decision, as subqueries listing project ids: the run's bound lists,
 * or, in the transaction that makes it (the lease's statement and the probe, run.ts), the tables.
 */
export type ScopeSets = { held: string; recomputing: string };
/** The rows the decision is made of: the holds of moves, the recomputes under way. */
const HOLDS = "FROM project_holds";
const RECOMPUTING = "FROM recomputes WHERE state <> 'done'";
export const BOUND_SCOPE: ScopeSets = {
  held: "(SELECT value FROM json_each(:held_projects))", recomputing: "(SELECT value FROM json_each(:recomputing_projects))",
};
export const DECIDING_SCOPE: ScopeSets = {
  held: `(SELECT project_id ${HOLDS})`, recomputing: `(SELECT project_id ${RECOMPUTING})`,
};

/** A row of a project no move holds. */
export const notHeldSql = (sets: ScopeSets = BOUND_SCOPE) => `project_id NOT IN ${sets.held}`;
/** A request the calls chunks may take: its project is neither held nor being recomputed. */
export const foldableSql = (sets: ScopeSets = BOUND_SCOPE) => `${notHeldSql(sets)} AND project_id NOT IN ${sets.recomputing}`;

export const NOT_HELD = notHeldSql();
export const FOLDABLE = foldableSql();

/** The bound parameters of a statement that reads the held projects only. */
export const heldParams = (scope: RunScope) => ({ held_projects: JSON.stringify(scope.held) });
/** …and of one that reads both lists (the calls). */
export const scopeParams = (scope: RunScope) => ({ ...heldParams(scope), recomputing_projects: JSON.stringify(scope.recomputing) });

/** The decision as its statement answers it (two JSON lists). */
export function parseScope(row: { held_projects?: unknown; recomputing_projects?: unknown } | undefined | null): RunScope {
  const list = (value: unknown) => (typeof value === "string" ? (JSON.parse(value) as string[]) : []);
  if (!row || typeof row.held_projects !== "string" || typeof row.recomputing_projects !== "string") {
    throw new Error("rollup: no decision on which projects to leave alone");
  }
  return { held: list(row.held_projects), recomputing: list(row.recomputing_projects) };
}

/** The decision as the lease's statement returns it, and on its own for a chunk or step run outside a run (its tests). */
export const SCOPE_COLUMNS = `(SELECT json_group_array(project_id) ${HOLDS}) AS held_projects,
    (SELECT json_group_array(project_id) ${RECOMPUTING}) AS recomputing_projects`;
export const DECIDE_SCOPE_SQL = `SELECT ${SCOPE_COLUMNS}`;

export async function decideScope(db: D1Database): Promise<RunScope> {
  return parseScope(await db.prepare(DECIDE_SCOPE_SQL).first());
}
