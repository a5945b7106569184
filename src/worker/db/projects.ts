// Queries on `projects` (SPEC §3): a project is a name, a payload budget and the keys that name it.

export type ProjectRow = {
  project_id: string;
  name: string;
  payload_budget_per_minute: number;
  created_at_ms: number;
};

export function insertProjectStatement(
  db: D1Database,
  project: { project_id: string; name: string; created_at_ms: number },
): D1PreparedStatement {
  return db
    .prepare("INSERT INTO projects (project_id, name, created_at_ms) VALUES (?1, ?2, ?3)")
    .bind(project.project_id, project.name, project.created_at_ms);
}

export async function findProject(db: D1Database, projectId: string): Promise<ProjectRow | null> {
  return db
    .prepare("SELECT project_id, name, payload_budget_per_minute, created_at_ms FROM projects WHERE project_id = ?1")
    .bind(projectId)
    .first<ProjectRow>();
}

export async function setPayloadBudget(
  db: D1Database,
  projectId: string,
  payloadsPerMinute: number,
): Promise<ProjectRow | null> {
  return db
    .prepare(
      "UPDATE projects SET payload_budget_per_minute = ?2 WHERE project_id = ?1 " +
        "RETURNING project_id, name, payload_budget_per_minute, created_at_ms",
    )
    .bind(projectId, payloadsPerMinute)
    .first<ProjectRow>();
}

export async function listProjects(db: D1Database): Promise<ProjectRow[]> {
  const { results } = await db
    .prepare("SELECT project_id, name, payload_budget_per_minute, created_at_ms FROM projects ORDER BY created_at_ms, project_id")
    .all<ProjectRow>();
  return results;
}

/** Read from the schema so a table a later migration adds can never be forgotten by a deletion. */
export async function tablesWithProjectRows(db: D1Database): Promise<string[]> {
  const { results } = await db
    .prepare(
      `SELECT m.name AS name FROM sqlite_master AS m, pragma_table_info(m.name) AS c
       WHERE m.type = 'table' AND c.name = 'project_id' AND m.name NOT LIKE 'sqlite_%' AND m.name NOT LIKE '_cf_%'
       ORDER BY m.name`,
    )
    .all<{ name: string }>();
  return results.map((r) => r.name);
}

/**
 * SPEC §3: one transaction, keys first so they answer 401 from the moment it commits, the project
 * last (api_keys references it).
 */
export async function deleteProject(db: D1Database, projectId: string): Promise<boolean> {
  const tables = (await tablesWithProjectRows(db)).filter((t) => t !== "api_keys" && t !== "projects");
  const results = await db.batch([
    db.prepare("DELETE FROM api_keys WHERE project_id = ?1").bind(projectId),
    // Table names come from sqlite_master, never from the request.
    ...tables.map((table) => db.prepare(`DELETE FROM "${table.replaceAll('"', '""')}" WHERE project_id = ?1`).bind(projectId)),
    db.prepare("DELETE FROM projects WHERE project_id = ?1").bind(projectId),
  ]);
  return results.at(-1)!.meta.changes > 0;
}
