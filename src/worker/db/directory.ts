// The directory (SPEC §7, migration 0020): project → database name, in the first database only. A
// project without a row lives in the first database.

/** The database a project lives in, or null for the first database (no row). */
export async function findProjectDatabase(db: D1Database, projectId: string): Promise<string | null> {
  const row = await db.prepare("SELECT database_name FROM project_databases WHERE project_id = ?1").bind(projectId).first<{ database_name: string }>();
  return row?.database_name ?? null;
}

export function insertDirectoryStatement(db: D1Database, projectId: string, databaseName: string): D1PreparedStatement {
  return db.prepare("INSERT INTO project_databases (project_id, database_name) VALUES (?1, ?2)").bind(projectId, databaseName);
}

/** Every directory row: project → database name (projects without one are in the first database). */
export async function listDirectory(db: D1Database): Promise<Map<string, string>> {
  const { results } = await db.prepare("SELECT project_id, database_name FROM project_databases").all<{ project_id: string; database_name: string }>();
  return new Map(results.map((r) => [r.project_id, r.database_name]));
}

/**
 * The bytes a database stores, as D1 reports them after a statement (`meta.size_after`, the same
 * figure in Miniflare and on Cloudflare); SQLite's page count × page size where it is missing.
 */
export async function storedBytes(db: D1Database): Promise<number> {
  const result = await db.prepare("SELECT page_count * page_size AS bytes FROM pragma_page_count(), pragma_page_size()").all<{ bytes: number }>();
  const size = (result.meta as { size_after?: number }).size_after;
  return typeof size === "number" && size > 0 ? size : (result.results[0]?.bytes ?? 0);
}
