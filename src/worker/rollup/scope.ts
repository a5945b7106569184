// Which projects a rollup run leaves alone (held by a move, or recomputing), decided once by the
// lease's statement and bound into every later statement.
// One decision per run stays right (scope.test.ts): holds change only under the lease, and a
// recompute asked for mid-run waits for the next run.

export type RunScope = { held: string[]; recomputing: string[] };

/** Bound lists, except in the transaction that makes the decision, which reads the tables. */
export type ScopeSets = { held: string; recomputing: string };
const HOLDS = "FROM project_holds";
const RECOMPUTING = "FROM recomputes WHERE state <> 'done'";
export const BOUND_SCOPE: ScopeSets = {
  held: "(SELECT value FROM json_each(:held_projects))", recomputing: "(SELECT value FROM json_each(:recomputing_projects))",
};
export const DECIDING_SCOPE: ScopeSets = {
  held: `(SELECT project_id ${HOLDS})`, recomputing: `(SELECT project_id ${RECOMPUTING})`,
};

export const notHeldSql = (sets: ScopeSets = BOUND_SCOPE) => `project_id NOT IN ${sets.held}`;
/** A request the calls chunks may take: its project is neither held nor being recomputed. */
export const foldableSql = (sets: ScopeSets = BOUND_SCOPE) => `${notHeldSql(sets)} AND project_id NOT IN ${sets.recomputing}`;

export const NOT_HELD = notHeldSql();
export const FOLDABLE = foldableSql();

export const heldParams = (scope: RunScope) => ({ held_projects: JSON.stringify(scope.held) });
export const scopeParams = (scope: RunScope) => ({ ...heldParams(scope), recomputing_projects: JSON.stringify(scope.recomputing) });

/** The decision as its statement answers it (two JSON lists). */
export function parseScope(row: { held_projects?: unknown; recomputing_projects?: unknown } | undefined | null): RunScope {
  if (!row || typeof row.held_projects !== "string" || typeof row.recomputing_projects !== "string") {
    throw new Error("rollup: no decision on which projects to leave alone");
  }
  return { held: JSON.parse(row.held_projects) as string[], recomputing: JSON.parse(row.recomputing_projects) as string[] };
}

/** Also for a chunk or step run outside a run (its tests). */
export const SCOPE_COLUMNS = `(SELECT json_group_array(project_id) ${HOLDS}) AS held_projects,
    (SELECT json_group_array(project_id) ${RECOMPUTING}) AS recomputing_projects`;
export const DECIDE_SCOPE_SQL = `SELECT ${SCOPE_COLUMNS}`;

export async function decideScope(db: D1Database): Promise<RunScope> {
  return parseScope(await db.prepare(DECIDE_SCOPE_SQL).first());
}
