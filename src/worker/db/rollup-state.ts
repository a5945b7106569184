// The rows of `rollup_state` (the rollup's bookkeeping: watermarks, as_of, the calls chunk, the lease), by name, and the SQL reading them.
import { namedStatement } from "./named-sql.ts";

/**
 * The last call_seq handed out before the calls chunks kept it in their own row (see nextCallSeqSql):
 * the rollup numbers calls in receive order above it (SPEC §2.2 ties).
 */
export const CALLS_WATERMARK = "calls_seq";
/**
 * The calls chunk being folded in (a JSON object: its requests, the state rows it loads, its
 * estimate), written by the chunk's first statement and read by the others of its transaction.
 */
export const CALLS_CHUNK = "calls_chunk";
/**
 * The startups chunk (a JSON object {"from", "end"}: it folds the startup_seqs above `from` up to
 * `end`), written by the chunk's first statement and read by the others of its transaction. Once
 * the chunk commits, `end` is the startups watermark (startupsWatermarkSql): one row written per
 * chunk instead of two.
 */
export const STARTUPS_CHUNK = "startups_chunk";
/** Highest raw_startups.startup_seq folded in, as kept before the chunk row held it (see startupsWatermarkSql). */
export const STARTUPS_WATERMARK = "startups_seq";
/**
 * Highest raw_startups.startup_seq whose tool entries are counted in `tool_versions` (never above
 * `startups_seq`): rollup/tool-versions.ts folds them in once an hour, reads add the ones above it.
 * Absent (before the first startups chunk after migration 0029): the same as `startups_seq`.
 */
export const TOOL_VERSIONS_WATERMARK = "tool_versions_seq";
/** Highest raw_agreements.agreement_seq folded in. */
export const AGREEMENTS_WATERMARK = "agreements_seq";
/** SPEC §2.6 `as_of` (epoch ms): every payload received before it is in the rollup tables. Read by the metrics API. */
export const AS_OF = "as_of_ms";
/**
 * The epoch ingest opens call_batches rows in (migration 0025): a request appends to its project's
 * newest row only while that row's epoch is this one. Each rollup run advances it before choosing
 * rows, which closes every row open so far: nothing is appended to a row a run may take.
 */
export const INGEST_EPOCH = "ingest_epoch";
/**
 * The rollup lease (at most one rollup job of a database runs at a time; rollup/run.ts takes, renews
 * and releases it) rides on two rows a run with work writes anyway (migration 0031; before it, a
 * `rollup_lease` row of its own): the `ingest_epoch` row's `lease_holder` and `lease_until_ms` hold
 * the job that took it and until when, and the `as_of_ms` row's `lease_holder` names the last job
 * that released its lease. This SQL is true while a job holds it at `now`: taken on the epoch row,
 * not expired, and not released on the as_of row since.
 */
export const rollupLeaseHeldSql = (now: string) => `COALESCE((SELECT e.lease_until_ms > ${now}
      AND e.lease_holder IS NOT (SELECT a.lease_holder FROM rollup_state a WHERE a.name = '${AS_OF}')
    FROM rollup_state e WHERE e.name = '${INGEST_EPOCH}'), 0)`;
/**
 * Ends :holder's lease at once: a run that failed (as_of releases it otherwise), so the next run
 * need not wait for it to expire, or another job done with it.
 */
export const RELEASE_LEASE_SQL = `UPDATE rollup_state SET lease_until_ms = 0 WHERE name = '${INGEST_EPOCH}' AND lease_holder = :holder`;

/**
 * Takes the database's rollup lease for another job (a move's hold, release and unhold: rollup/scope.ts)
 * for :holder until :lease_until_ms unless a job holds it at :now_ms; a row back when taken. A run
 * whose lease had expired while it still ran finds it taken over at its next renewal, and stops.
 */
export const TAKE_LEASE_SQL = `INSERT INTO rollup_state (name, value, lease_holder, lease_until_ms)
  SELECT '${INGEST_EPOCH}', 0, :holder, :lease_until_ms WHERE NOT ${rollupLeaseHeldSql(":now_ms")}
  ON CONFLICT (name) DO UPDATE SET lease_holder = excluded.lease_holder, lease_until_ms = excluded.lease_until_ms
  RETURNING lease_holder AS holder`;

/**
 * Runs `job` while holding `db`'s rollup lease as `holder` (no rollup run works there meanwhile), then
 * releases it; null, without running it, while another job holds the lease. `nowMs`: real time, as
 * the runs' leases are.
 */
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

/** SQL reading one state value, `fallback` when the row is absent. */
export const stateValueSql = (name: string, fallback = 0) =>
  `COALESCE((SELECT value FROM rollup_state WHERE name = '${name}'), ${fallback})`;

/** The tool versions watermark, as SQL (`startups_seq` while it has no row of its own). */
export const toolVersionsWatermarkSql = () =>
  `COALESCE((SELECT value FROM rollup_state WHERE name = '${TOOL_VERSIONS_WATERMARK}'), ${startupsWatermarkSql()})`;

/** Highest raw_startups.startup_seq folded in: the last committed startups chunk's end, else `startups_seq`. */
export const startupsWatermarkSql = () =>
  `COALESCE((SELECT value ->> '$.end' FROM rollup_state WHERE name = '${STARTUPS_CHUNK}'), ${stateValueSql(STARTUPS_WATERMARK)})`;

/**
 * The number the next calls chunk numbers its calls above: the last chunk's base plus its calls
 * (`calls_chunk` holds both, written in that chunk's transaction, so a chunk that rolled back
 * leaves the one before it), or `calls_seq` for a deployment whose last chunk ran before the base
 * was kept there. One row written per chunk instead of two.
 */
export const nextCallSeqSql = () =>
  `COALESCE((SELECT (value ->> '$.seq') + (value ->> '$.calls') FROM rollup_state WHERE name = '${CALLS_CHUNK}'), ${stateValueSql(CALLS_WATERMARK)})`;
