// The rows of `rollup_state` (the rollup's bookkeeping: watermarks, as_of, the calls chunk, the lease), by name, and the SQL reading them.
import { namedStatement } from "./named-sql.ts";

/** Legacy call_seq watermark (see nextCallSeqSql); calls are numbered in receive order above it (SPEC §2.2 ties). */
export const CALLS_WATERMARK = "calls_seq";
/** Passes the chunk's plan from its first statement to the rest of the same transaction. */
export const CALLS_CHUNK = "calls_chunk";
/** {"from", "end"}; once committed, `end` is the startups watermark, so a chunk writes one row, not two. */
export const STARTUPS_CHUNK = "startups_chunk";
/** Legacy startups watermark (see startupsWatermarkSql). */
export const STARTUPS_WATERMARK = "startups_seq";
/** Folded hourly, so reads add the startups above it; absent (before migration 0029) means `startups_seq`. */
export const TOOL_VERSIONS_WATERMARK = "tool_versions_seq";
export const AGREEMENTS_WATERMARK = "agreements_seq";
/** SPEC §2.6 `as_of`. */
export const AS_OF = "as_of_ms";
/**
 * Migration 0025: ingest appends only to a call_batches row of this epoch; a run advances it before
 * choosing rows, so nothing is appended to a row a run may take.
 */
export const INGEST_EPOCH = "ingest_epoch";
/**
 * One rollup job per database at a time. Migration 0031 put the lease on rows a run writes anyway:
 * taken on the `ingest_epoch` row, released by naming the holder on the `as_of_ms` row.
 */
export const rollupLeaseHeldSql = (now: string) => `COALESCE((SELECT e.lease_until_ms > ${now}
      AND e.lease_holder IS NOT (SELECT a.lease_holder FROM rollup_state a WHERE a.name = '${AS_OF}')
    FROM rollup_state e WHERE e.name = '${INGEST_EPOCH}'), 0)`;
/** So the next run after a failure need not wait for the lease to expire. */
export const RELEASE_LEASE_SQL = `UPDATE rollup_state SET lease_until_ms = 0 WHERE name = '${INGEST_EPOCH}' AND lease_holder = :holder`;

/** A run whose lease expired mid-run finds it taken at its next renewal, and stops. */
export const TAKE_LEASE_SQL = `INSERT INTO rollup_state (name, value, lease_holder, lease_until_ms)
  SELECT '${INGEST_EPOCH}', 0, :holder, :lease_until_ms WHERE NOT ${rollupLeaseHeldSql(":now_ms")}
  ON CONFLICT (name) DO UPDATE SET lease_holder = excluded.lease_holder, lease_until_ms = excluded.lease_until_ms
  RETURNING lease_holder AS holder`;

/** null without running `job` while another job holds the lease. `nowMs` is real time, as the runs' leases are. */
export async function withRollupLease<T>(db: D1Database, holder: string, nowMs: number, leaseMs: number, job: () => Promise<T>): Promise<{ value: T } | null> {
  const taken = await namedStatement(db, TAKE_LEASE_SQL, { holder, now_ms: nowMs, lease_until_ms: nowMs + leaseMs }).first();
  if (!taken) return null;
  try {
    return { value: await job() };
  } finally {
    await namedStatement(db, RELEASE_LEASE_SQL, { holder }).run().catch(() => undefined);
  }
}

/** Retention may have deleted raw calls that start before this (epoch ms, hour-aligned). */
export const RAW_KEPT_FROM = "raw_kept_from_ms";

export const stateValueSql = (name: string, fallback = 0) =>
  `COALESCE((SELECT value FROM rollup_state WHERE name = '${name}'), ${fallback})`;

export const toolVersionsWatermarkSql = () =>
  `COALESCE((SELECT value FROM rollup_state WHERE name = '${TOOL_VERSIONS_WATERMARK}'), ${startupsWatermarkSql()})`;

export const startupsWatermarkSql = () =>
  `COALESCE((SELECT value ->> '$.end' FROM rollup_state WHERE name = '${STARTUPS_CHUNK}'), ${stateValueSql(STARTUPS_WATERMARK)})`;

/**
 * Read from `calls_chunk` (written in the chunk's own transaction, so a rolled-back chunk leaves the
 * one before it): one row written per chunk instead of two.
 */
export const nextCallSeqSql = () =>
  `COALESCE((SELECT (value ->> '$.seq') + (value ->> '$.calls') FROM rollup_state WHERE name = '${CALLS_CHUNK}'), ${stateValueSql(CALLS_WATERMARK)})`;
