// Folds agreement verdicts (SPEC §2.5) as ONE D1 batch with the watermark, so each counts exactly
// once and the sums survive raw retention.
import { AGREEMENTS_WATERMARK, stateValueSql } from "../db/rollup-state.ts";
import { NOT_HELD, decideScope, heldParams, type RunScope } from "./scope.ts";
import { namedStatement } from "../db/named-sql.ts";
import { dayStartSql } from "../time.ts";

const watermark = stateValueSql(AGREEMENTS_WATERMARK);
/** Held projects' verdicts are moved unfolded (db/moves.ts). */
const chunk = `(SELECT * FROM raw_agreements WHERE agreement_seq > ${watermark} AND ${NOT_HELD} ORDER BY agreement_seq LIMIT :chunk_agreements)`;

export const AGREEMENT_CHUNK_SQL = {
  addVerdicts: `INSERT INTO agreement_days (project_id, day_start_ms, field, tool_a, tool_b, checks, disagreements)
    SELECT project_id, ${dayStartSql("checked_at_ms")} AS day_start_ms, field, tool_a, tool_b, COUNT(*), SUM(agreed = 0)
    FROM ${chunk} WHERE true
    GROUP BY project_id, day_start_ms, field, tool_a, tool_b
    ON CONFLICT (project_id, day_start_ms, field, tool_a, tool_b) DO UPDATE SET
      checks = checks + excluded.checks, disagreements = disagreements + excluded.disagreements`,

  advanceWatermark: `INSERT INTO rollup_state (name, value)
    SELECT '${AGREEMENTS_WATERMARK}', top FROM (SELECT MAX(agreement_seq) AS top FROM ${chunk}) WHERE top IS NOT NULL
    ON CONFLICT (name) DO UPDATE SET value = excluded.value`,

  report: `SELECT EXISTS (SELECT 1 FROM raw_agreements WHERE agreement_seq > ${watermark} AND ${NOT_HELD}) AS more`,
} as const;

export const AGREEMENT_CHUNK_STATEMENTS = 3;

export async function rollupAgreementChunk(db: D1Database, chunkAgreements: number, scope?: RunScope): Promise<{ more: number }> {
  const held = heldParams(scope ?? (await decideScope(db)));
  const results = await db.batch([
    namedStatement(db, AGREEMENT_CHUNK_SQL.addVerdicts, { chunk_agreements: chunkAgreements, ...held }),
    namedStatement(db, AGREEMENT_CHUNK_SQL.advanceWatermark, { chunk_agreements: chunkAgreements, ...held }),
    namedStatement(db, AGREEMENT_CHUNK_SQL.report, held),
  ]);
  const report = results[2]?.results?.[0] as { more: number } | undefined;
  if (!report) throw new Error("rollup: agreements chunk returned no report");
  return report;
}
