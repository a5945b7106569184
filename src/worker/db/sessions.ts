// Queries on `dashboard_sessions` (migration 0017): the dashboard's read and admin sessions, stored
// as the SHA-256 of their id, each ended by deleting its row.

export type SessionKind = "read" | "admin";

export type SessionRow = {
  session_sha256: string;
  kind: SessionKind;
  project_id: string | null;
  key_id: string | null;
  created_at_ms: number;
  expires_at_ms: number;
};

/** A new session, with the sweep of every expired one (sign-in is rare; pages never write). */
export async function insertSession(db: D1Database, row: SessionRow): Promise<void> {
  await db.batch([
    db.prepare("DELETE FROM dashboard_sessions WHERE expires_at_ms <= ?1").bind(row.created_at_ms),
    db
      .prepare(
        `INSERT INTO dashboard_sessions (session_sha256, kind, project_id, key_id, created_at_ms, expires_at_ms)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)`,
      )
      .bind(row.session_sha256, row.kind, row.project_id, row.key_id, row.created_at_ms, row.expires_at_ms),
  ]);
}

/** One statement per page, as checking the key itself was. */
export async function findReadSession(db: D1Database, sessionSha256: string, nowMs: number): Promise<{ project_id: string; key_id: string; database_name: string | null } | null> {
  return db
    .prepare(
      `SELECT s.project_id, s.key_id, d.database_name FROM dashboard_sessions AS s JOIN api_keys AS k ON k.key_id = s.key_id
       LEFT JOIN project_databases AS d ON d.project_id = s.project_id
       WHERE s.session_sha256 = ?1 AND s.kind = 'read' AND s.expires_at_ms > ?2
         AND k.revoked_at_ms IS NULL AND k.kind = 'read' AND k.project_id = s.project_id`,
    )
    .bind(sessionSha256, nowMs)
    .first<{ project_id: string; key_id: string; database_name: string | null }>();
}

export async function adminSessionLive(db: D1Database, sessionSha256: string, nowMs: number): Promise<boolean> {
  const row = await db
    .prepare("SELECT 1 AS live FROM dashboard_sessions WHERE session_sha256 = ?1 AND kind = 'admin' AND expires_at_ms > ?2")
    .bind(sessionSha256, nowMs)
    .first<{ live: number }>();
  return row !== null;
}

export async function deleteSessions(db: D1Database, sessionSha256s: string[]): Promise<void> {
  if (sessionSha256s.length === 0) return;
  await db.batch(sessionSha256s.map((sha) => db.prepare("DELETE FROM dashboard_sessions WHERE session_sha256 = ?1").bind(sha)));
}

/** Ends every session signed in with `keyId` (its revocation). */
export async function deleteSessionsOfKey(db: D1Database, keyId: string): Promise<number> {
  return (await db.prepare("DELETE FROM dashboard_sessions WHERE key_id = ?1").bind(keyId).run()).meta.changes;
}

export async function deleteAdminSessions(db: D1Database): Promise<number> {
  return (await db.prepare("DELETE FROM dashboard_sessions WHERE kind = 'admin'").run()).meta.changes;
}
