// Which projects a rollup run leaves alone, decided once per run, in the transaction that takes its
// lease (run.ts): the projects a move holds (db/moves.ts: their rows are being copied, or wait for
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

/** Where a statement reads the decision: the run's bound lists, or, in the statements that make it, `run_scope`. */
export type ScopeLists = { held: string; recomputing: string };
export const BOUND_SCOPE: ScopeLists = { held: ":held_projects", recomputing: ":recomputing_projects" };
export const DECIDING_SCOPE: ScopeLists = {
  held: "(SELECT held_projects FROM run_scope)", recomputing: "(SELECT recomputing_projects FROM run_scope)",
};

/** The decision, as a CTE of the statements that make it (the lease's and the probe's, one transaction). */
export const RUN_SCOPE_CTE = `run_scope AS MATERIALIZED (SELECT
      (SELECT json_group_array(project_id) FROM project_holds) AS held_projects,
      (SELECT json_group_array(project_id) FROM recomputes WHERE state <> 'done') AS recomputing_projects)`;

/** A row of a project no move holds. */
export const notHeldSql = (lists: ScopeLists = BOUND_SCOPE) => `project_id NOT IN (SELECT value FROM json_each(${lists.held}))`;
/** A request the calls chunks may take: its project is neither held nor being recomputed. */
export const foldableSql = (lists: ScopeLists = BOUND_SCOPE) =>
  `${notHeldSql(lists)} AND project_id NOT IN (SELECT value FROM json_each(${lists.recomputing}))`;

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

/** The decision on its own, for a chunk or step run outside a run (its tests). */
export const DECIDE_SCOPE_SQL = `WITH ${RUN_SCOPE_CTE} SELECT held_projects, recomputing_projects FROM run_scope`;

export async function decideScope(db: D1Database): Promise<RunScope> {
  return parseScope(await db.prepare(DECIDE_SCOPE_SQL).first());
}
