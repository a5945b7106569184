// Queries on `api_keys` (SPEC §3): keys live here only as SHA-256, named by their clear `key_id`.

/** Ingest keys write only, read keys read only (SPEC §3): the `kind` column. */
export type KeyKind = "ingest" | "read";

export type ApiKeyRow = {
  key_id: string;
  project_id: string;
  kind: KeyKind;
  key_sha256: string;
  created_at_ms: number;
  revoked_at_ms: number | null;
};

export type KeyWithProject = ApiKeyRow & { payload_budget_per_minute: number; database_name: string | null };

/** One query on the directory's database (SPEC §7). */
export async function findKeyById(db: D1Database, keyId: string): Promise<KeyWithProject | null> {
  return db
    .prepare(
      "SELECT k.key_id, k.project_id, k.kind, k.key_sha256, k.created_at_ms, k.revoked_at_ms, " +
        "p.payload_budget_per_minute, d.database_name FROM api_keys AS k JOIN projects AS p ON p.project_id = k.project_id " +
        "LEFT JOIN project_databases AS d ON d.project_id = k.project_id WHERE k.key_id = ?1",
    )
    .bind(keyId)
    .first<KeyWithProject>();
}

export function insertKeyStatement(
  db: D1Database,
  key: { key_id: string; project_id: string; kind: KeyKind; key_sha256: string; created_at_ms: number },
): D1PreparedStatement {
  return db
    .prepare(
      "INSERT INTO api_keys (key_id, project_id, kind, key_sha256, created_at_ms) VALUES (?1, ?2, ?3, ?4, ?5)",
    )
    .bind(key.key_id, key.project_id, key.kind, key.key_sha256, key.created_at_ms);
}

/** Idempotent: a second revocation keeps the first time. */
export async function revokeKey(db: D1Database, keyId: string, nowMs: number): Promise<boolean> {
  const result = await db
    .prepare("UPDATE api_keys SET revoked_at_ms = COALESCE(revoked_at_ms, ?2) WHERE key_id = ?1")
    .bind(keyId, nowMs)
    .run();
  return result.meta.changes > 0;
}

/** A project's keys, oldest first, without the key or its hash (SPEC §3). */
export async function listKeys(
  db: D1Database,
  projectId: string,
): Promise<Pick<ApiKeyRow, "key_id" | "kind" | "created_at_ms" | "revoked_at_ms">[]> {
  const { results } = await db
    .prepare("SELECT key_id, kind, created_at_ms, revoked_at_ms FROM api_keys WHERE project_id = ?1 ORDER BY created_at_ms, key_id")
    .bind(projectId)
    .all<Pick<ApiKeyRow, "key_id" | "kind" | "created_at_ms" | "revoked_at_ms">>();
  return results;
}
