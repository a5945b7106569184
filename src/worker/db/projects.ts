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

/** Sets the per-key payload budget (SPEC §1.1); null when the project does not exist. */
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
