// The directory (SPEC §7, migration 0020): project → database name, in the first database only. A
// project without a row lives in the first database.

export async function findProjectDatabase(db: D1Database, projectId: string): Promise<string | null> {
  const row = await db.prepare("SELECT database_name FROM project_databases WHERE project_id = ?1").bind(projectId).first<{ database_name: string }>();
  return row?.database_name ?? null;
}

export function insertDirectoryStatement(db: D1Database, projectId: string, databaseName: string): D1PreparedStatement {
  return db.prepare("INSERT INTO project_databases (project_id, database_name) VALUES (?1, ?2)").bind(projectId, databaseName);
}

export async function listDirectory(db: D1Database): Promise<Map<string, string>> {
  const { results } = await db.prepare("SELECT project_id, database_name FROM project_databases").all<{ project_id: string; database_name: string }>();
  return new Map(results.map((r) => [r.project_id, r.database_name]));
}

/** `meta.size_after`: D1's authorizer refuses `PRAGMA page_count` (SQLITE_AUTH). */
export async function storedBytes(db: D1Database): Promise<number> {
  const result = await db.prepare("SELECT 1").run();
  const size = (result.meta as { size_after?: unknown }).size_after;
  if (typeof size !== "number") throw new Error("D1 answered no size_after");
  return size;
}

/** Projects per database name, from the projects and the directory (a project without a row counts for `firstName`). */
export async function projectCountsByDatabase(db: D1Database, firstName: string): Promise<Map<string, number>> {
  const { results } = await db
    .prepare(
      `SELECT COALESCE(d.database_name, ?1) AS name, COUNT(*) AS projects
       FROM projects AS p LEFT JOIN project_databases AS d ON d.project_id = p.project_id GROUP BY 1`,
    )
    .bind(firstName)
    .all<{ name: string; projects: number }>();
  return new Map(results.map((r) => [r.name, r.projects]));
}
