// How many of a project's payloads the head schema holds, for tests that wait until a batch's
// rows have landed (ingest writes after its 202, in waitUntil). Follows the schema: a migration
// that moves raw payloads changes this one place.
// Calls without a session (SPEC §2.2) keep no call_state element once rolled up: they are counted
// from the hour rows' calls_without_session instead (migration 0014).
export async function storedPayloadRows(db: D1Database, projectId: string): Promise<number> {
  const row = await db
    .prepare(
      // A call without a session is stored in no call_state row once rolled up (migration 0014):
      // its hour row counts it.
      `SELECT (SELECT COALESCE(SUM(call_count), 0) FROM call_state WHERE project_id = ?1)
        + (SELECT COALESCE(SUM(calls_without_session), 0) FROM tool_hour_metrics WHERE project_id = ?1)
        + (SELECT COALESCE(SUM(call_count), 0) FROM call_batches WHERE project_id = ?1)
        + (SELECT COUNT(*) FROM raw_startups WHERE project_id = ?1)
        + (SELECT COUNT(*) FROM raw_agreements WHERE project_id = ?1) AS n`,
    )
    .bind(projectId)
    .first<{ n: number }>();
  return row?.n ?? 0;
}
