// Folds one chunk of new raw calls into the derived per-call columns, the hour/day counters,
// the tool pairs and the session counters (SPEC §2.1–2.4), as ONE D1 batch (one transaction).
//
// Why this is exact whatever the arrival order (SPEC §2.2, "exact and final"): every figure is a
// per-call flag that depends only on the call's immediate predecessor and successor, in its
// (project, session, tool) sequence for retries and in its session for pairs, both ordered by
// (started_at_ms, call_seq). A new call changes the flags of itself and of those neighbours only.
// So a chunk (a) takes the next calls above the `calls_seq` watermark, (b) adds their neighbours,
// (c) recomputes the flags of all of them among the calls at or below the new watermark, and
// (d) re-aggregates from raw rows every (project, hour) whose rows or flags changed, then the
// days of those hours from the hour rows. Everything is recompute-and-overwrite except two
// counters that must survive raw retention, which take the difference between a stored per-call
// value and its recomputed value inside the same transaction that advances the watermark, so they
// are applied exactly once: tool pairs (a pair's first call may be older than the kept raw rows)
// and the session counters.
//
// The chunk bounds come from `rollup_state` read inside the batch, so two overlapping cron runs
// simply take consecutive chunks.
import { DAY_MS, HOUR_MS, dayStartSql, hourStartSql, retryGapSql } from "./time.ts";
import { CALLS_WATERMARK, RAW_KEPT_FROM, stateValueSql } from "./state.ts";

const watermark = stateValueSql(CALLS_WATERMARK);
/** Raw calls that start before this may have been deleted by retention (src/worker/rollup/retention.ts). */
const keptFrom = stateValueSql(RAW_KEPT_FROM);
/** Highest call_seq of the chunk: calls above it are not visible to this chunk. */
const chunkTop = `(SELECT MAX(call_seq) FROM rollup_chunk_calls WHERE is_new = 1)`;

/** Row-value order of the SPEC: started_at, then receive order. */
const before = (a: string, b: string) => `(${a}.started_at_ms, ${a}.call_seq) < (${b}.started_at_ms, ${b}.call_seq)`;
const after = (a: string, b: string) => `(${a}.started_at_ms, ${a}.call_seq) > (${b}.started_at_ms, ${b}.call_seq)`;
const sameTool = (a: string, b: string) =>
  `${a}.project_id = ${b}.project_id AND ${a}.session_id = ${b}.session_id AND ${a}.tool_name = ${b}.tool_name`;
const sameSession = (a: string, b: string) => `${a}.project_id = ${b}.project_id AND ${a}.session_id = ${b}.session_id`;

/** Correlated lookup of `c`'s neighbour (alias `x`), returning `select`; uses the two raw_calls indexes. */
function neighbour(kind: "tool_prev" | "tool_next" | "session_prev" | "session_next", select: string, top: string): string {
  const scope = kind.startsWith("tool") ? sameTool("x", "c") : sameSession("x", "c");
  const prev = kind.endsWith("prev");
  return `(SELECT ${select} FROM raw_calls x
    WHERE ${scope} AND ${prev ? before("x", "c") : after("x", "c")} AND x.call_seq <= ${top}
    ORDER BY x.started_at_ms ${prev ? "DESC" : "ASC"}, x.call_seq ${prev ? "DESC" : "ASC"} LIMIT 1)`;
}

const COUNTER_COLUMNS =
  "calls, ok, empty, bad_args, tool_error, crashed, response_bytes_sum, duration_ms_sum, retries, first_call_attempts, first_call_ok";

const SQL = {
  takeNewCalls: `INSERT INTO rollup_chunk_calls (call_seq, is_new)
    SELECT call_seq, 1 FROM raw_calls WHERE call_seq > ${watermark} ORDER BY call_seq LIMIT ?1`,

  // A new call changes: its (session, tool) predecessor's was_retried, its successor's is_retry,
  // and its session predecessor's next tool (SPEC §2.2, §2.4). Nothing else.
  addNeighbours: `INSERT OR IGNORE INTO rollup_chunk_calls (call_seq, is_new)
    SELECT neighbour_seq, 0 FROM (
      SELECT ${neighbour("tool_prev", "x.call_seq", chunkTop)} AS neighbour_seq
        FROM rollup_chunk_calls s JOIN raw_calls c ON c.call_seq = s.call_seq
      UNION ALL
      SELECT ${neighbour("tool_next", "x.call_seq", chunkTop)}
        FROM rollup_chunk_calls s JOIN raw_calls c ON c.call_seq = s.call_seq
      UNION ALL
      SELECT ${neighbour("session_prev", "x.call_seq", chunkTop)}
        FROM rollup_chunk_calls s JOIN raw_calls c ON c.call_seq = s.call_seq
    ) WHERE neighbour_seq IS NOT NULL`,

  // SPEC §2.2: c was retried when its next call n starts 0 ≤ gap ≤ 30,000 ms after c ended and
  // has a different args_hash; then n is a retry. Same hash or overlap (gap < 0): never.
  //
  // A call older than the raw rows retention keeps (`raw_kept_from_ms`) keeps its flags: its
  // (session, tool) neighbours may be gone, and no call the ingest still accepts can be within
  // 30 s of it (docs/metrics.md, "Retention"), so its flags cannot change, and its hour, whose
  // raw rows are partly deleted, must never be re-aggregated.
  computeFlags: `UPDATE rollup_chunk_calls AS s SET
      is_retry = CASE WHEN s.is_new = 0 AND c.started_at_ms < ${keptFrom} THEN c.is_retry ELSE
        COALESCE(${neighbour("tool_prev", `(${retryGapSql("x", "c")}) AND x.args_hash <> c.args_hash`, chunkTop)}, 0) END,
      was_retried = CASE WHEN s.is_new = 0 AND c.started_at_ms < ${keptFrom} THEN c.was_retried ELSE
        COALESCE(${neighbour("tool_next", `(${retryGapSql("c", "x")}) AND x.args_hash <> c.args_hash`, chunkTop)}, 0) END,
      next_tool_name = ${neighbour("session_next", "x.tool_name", chunkTop)}
    FROM raw_calls AS c WHERE c.call_seq = s.call_seq`,

  markDirtyHours: `INSERT OR IGNORE INTO rollup_chunk_hours (project_id, hour_start_ms)
    SELECT DISTINCT c.project_id, ${hourStartSql("c.started_at_ms")}
    FROM rollup_chunk_calls s JOIN raw_calls c ON c.call_seq = s.call_seq
    WHERE s.is_new = 1 OR s.is_retry IS NOT c.is_retry OR s.was_retried IS NOT c.was_retried`,

  // Pairs change by difference between the stored and the recomputed next tool of each call, so
  // a pair whose first call is older than the kept raw rows is still right (see file comment).
  // A new call's stored next tool is NULL, which is also "no pair", so it starts from nothing.
  applyPairDeltas: `INSERT INTO tool_pair_days (project_id, day_start_ms, client_name, from_tool, to_tool, pair_count)
    SELECT project_id, day_start_ms, client_name, from_tool, to_tool, SUM(delta) FROM (
      SELECT c.project_id, ${dayStartSql("c.started_at_ms")} AS day_start_ms, c.client_name,
             c.tool_name AS from_tool, c.next_tool_name AS to_tool, -1 AS delta
        FROM rollup_chunk_calls s JOIN raw_calls c ON c.call_seq = s.call_seq
        WHERE c.next_tool_name IS NOT s.next_tool_name AND c.next_tool_name IS NOT NULL AND c.next_tool_name <> c.tool_name
      UNION ALL
      SELECT c.project_id, ${dayStartSql("c.started_at_ms")}, c.client_name, c.tool_name, s.next_tool_name, 1
        FROM rollup_chunk_calls s JOIN raw_calls c ON c.call_seq = s.call_seq
        WHERE c.next_tool_name IS NOT s.next_tool_name AND s.next_tool_name IS NOT NULL AND s.next_tool_name <> c.tool_name
    ) WHERE true
    GROUP BY project_id, day_start_ms, client_name, from_tool, to_tool HAVING SUM(delta) <> 0
    ON CONFLICT (project_id, day_start_ms, client_name, from_tool, to_tool)
      DO UPDATE SET pair_count = pair_count + excluded.pair_count`,

  dropEmptyPairs: `DELETE FROM tool_pair_days WHERE pair_count = 0`,

  storeFlags: `UPDATE raw_calls SET is_retry = s.is_retry, was_retried = s.was_retried, next_tool_name = s.next_tool_name
    FROM rollup_chunk_calls AS s WHERE raw_calls.call_seq = s.call_seq`,

  deleteDirtyHours: `DELETE FROM tool_hour_metrics
    WHERE (project_id, hour_start_ms) IN (SELECT project_id, hour_start_ms FROM rollup_chunk_hours)`,

  // Re-aggregate each dirty hour from all its raw calls up to the chunk's top. The range test
  // (widened by 1 ms) lets the index find the hour; the equality keeps exactly the calls whose
  // hour arithmetic says they belong here. SPEC §2.2: a chain counts in its first call's hour and
  // client, a retry in its own; both are the hour and client of the call carrying the flag.
  insertDirtyHours: `INSERT INTO tool_hour_metrics (project_id, hour_start_ms, tool_name, client_name,
      ${COUNTER_COLUMNS}, duration_histogram_json)
    WITH hour_calls AS (
      SELECT h.project_id, h.hour_start_ms, c.tool_name, c.client_name, c.outcome, c.is_empty,
             c.response_bytes, c.duration_ms, c.duration_bucket, c.is_retry, c.was_retried
      FROM rollup_chunk_hours h JOIN raw_calls c
        ON c.project_id = h.project_id
       AND c.started_at_ms >= h.hour_start_ms - 1 AND c.started_at_ms < h.hour_start_ms + ${HOUR_MS + 1}
      WHERE ${hourStartSql("c.started_at_ms")} = h.hour_start_ms AND c.call_seq <= ${chunkTop}
    ),
    bucket_counts AS (
      SELECT project_id, hour_start_ms, tool_name, client_name, duration_bucket, COUNT(*) AS n
      FROM hour_calls GROUP BY project_id, hour_start_ms, tool_name, client_name, duration_bucket
    ),
    histograms AS (
      SELECT project_id, hour_start_ms, tool_name, client_name,
             json_group_object(CAST(duration_bucket AS TEXT), n) AS histogram
      FROM bucket_counts GROUP BY project_id, hour_start_ms, tool_name, client_name
    ),
    counters AS (
      SELECT project_id, hour_start_ms, tool_name, client_name,
        COUNT(*) AS calls,
        SUM(outcome = 'ok') AS ok,
        SUM(outcome = 'ok' AND is_empty = 1) AS empty,
        SUM(outcome = 'bad_args') AS bad_args,
        SUM(outcome = 'tool_error') AS tool_error,
        SUM(outcome = 'crashed') AS crashed,
        SUM(response_bytes) AS response_bytes_sum,
        SUM(duration_ms) AS duration_ms_sum,
        SUM(is_retry = 1) AS retries,
        SUM(is_retry = 0) AS first_call_attempts,
        SUM(is_retry = 0 AND outcome = 'ok' AND is_empty = 0 AND was_retried = 0) AS first_call_ok
      FROM hour_calls GROUP BY project_id, hour_start_ms, tool_name, client_name
    )
    SELECT k.project_id, k.hour_start_ms, k.tool_name, k.client_name, ${COUNTER_COLUMNS}, h.histogram
    FROM counters k JOIN histograms h
      ON h.project_id = k.project_id AND h.hour_start_ms = k.hour_start_ms
     AND h.tool_name = k.tool_name AND h.client_name = k.client_name`,

  deleteDirtyDays: `DELETE FROM tool_day_metrics WHERE (project_id, day_start_ms) IN
    (SELECT DISTINCT project_id, hour_start_ms - hour_start_ms % ${DAY_MS} FROM rollup_chunk_hours)`,

  // A day row is the sum of that day's hour rows (hour rows are kept forever, so this never needs
  // raw rows); histograms are summed bucket by bucket.
  insertDirtyDays: `INSERT INTO tool_day_metrics (project_id, day_start_ms, tool_name, client_name,
      ${COUNTER_COLUMNS}, duration_histogram_json)
    WITH days AS (
      SELECT DISTINCT project_id, hour_start_ms - hour_start_ms % ${DAY_MS} AS day_start_ms FROM rollup_chunk_hours
    ),
    day_hours AS (
      SELECT d.day_start_ms, m.*
      FROM days d JOIN tool_hour_metrics m
        ON m.project_id = d.project_id AND m.hour_start_ms >= d.day_start_ms AND m.hour_start_ms < d.day_start_ms + ${DAY_MS}
    ),
    bucket_counts AS (
      SELECT project_id, day_start_ms, tool_name, client_name, b.key AS bucket, SUM(b.value) AS n
      FROM day_hours, json_each(day_hours.duration_histogram_json) AS b
      GROUP BY project_id, day_start_ms, tool_name, client_name, b.key
    ),
    histograms AS (
      SELECT project_id, day_start_ms, tool_name, client_name, json_group_object(bucket, n) AS histogram
      FROM bucket_counts GROUP BY project_id, day_start_ms, tool_name, client_name
    ),
    counters AS (
      SELECT project_id, day_start_ms, tool_name, client_name,
        SUM(calls) AS calls, SUM(ok) AS ok, SUM(empty) AS empty, SUM(bad_args) AS bad_args,
        SUM(tool_error) AS tool_error, SUM(crashed) AS crashed, SUM(response_bytes_sum) AS response_bytes_sum,
        SUM(duration_ms_sum) AS duration_ms_sum, SUM(retries) AS retries,
        SUM(first_call_attempts) AS first_call_attempts, SUM(first_call_ok) AS first_call_ok
      FROM day_hours GROUP BY project_id, day_start_ms, tool_name, client_name
    )
    SELECT k.project_id, k.day_start_ms, k.tool_name, k.client_name, ${COUNTER_COLUMNS}, h.histogram
    FROM counters k JOIN histograms h
      ON h.project_id = k.project_id AND h.day_start_ms = k.day_start_ms
     AND h.tool_name = k.tool_name AND h.client_name = k.client_name`,

  // SPEC §2.4 session counters: added for the chunk's new calls in the transaction that moves the
  // watermark past them, so each call is added exactly once and the sums survive raw retention.
  // The row is normally created by ingest; if it is not there yet it is created here the way
  // ingest would (first/last seen over these calls, client of the latest).
  addSessionCounters: `INSERT INTO sessions (project_id, session_id, first_seen_ms, last_seen_ms, client_name, calls, response_bytes_sum)
    SELECT g.project_id, g.session_id, g.first_seen_ms, g.last_seen_ms,
      (SELECT l.client_name FROM rollup_chunk_calls ls JOIN raw_calls l ON l.call_seq = ls.call_seq
        WHERE ls.is_new = 1 AND l.project_id = g.project_id AND l.session_id = g.session_id
        ORDER BY l.started_at_ms DESC, l.call_seq DESC LIMIT 1),
      g.calls, g.response_bytes_sum
    FROM (
      SELECT c.project_id, c.session_id, MIN(c.started_at_ms) AS first_seen_ms, MAX(c.started_at_ms) AS last_seen_ms,
             COUNT(*) AS calls, SUM(c.response_bytes) AS response_bytes_sum
      FROM rollup_chunk_calls s JOIN raw_calls c ON c.call_seq = s.call_seq
      WHERE s.is_new = 1 GROUP BY c.project_id, c.session_id
    ) AS g WHERE true
    ON CONFLICT (project_id, session_id) DO UPDATE SET
      calls = calls + excluded.calls, response_bytes_sum = response_bytes_sum + excluded.response_bytes_sum`,

  advanceWatermark: `INSERT INTO rollup_state (name, value)
    SELECT '${CALLS_WATERMARK}', top FROM (SELECT ${chunkTop} AS top) WHERE top IS NOT NULL
    ON CONFLICT (name) DO UPDATE SET value = excluded.value`,

  report: `SELECT
      (SELECT COUNT(*) FROM rollup_chunk_calls WHERE is_new = 1) AS new_calls,
      (SELECT COUNT(*) FROM rollup_chunk_calls) AS recomputed_calls,
      (SELECT COUNT(*) FROM rollup_chunk_hours) AS dirty_hours,
      EXISTS (SELECT 1 FROM raw_calls WHERE call_seq > ${watermark}) AS more`,

  clearChunkCalls: `DELETE FROM rollup_chunk_calls`,
  clearChunkHours: `DELETE FROM rollup_chunk_hours`,
} as const;

export type CallChunkReport = { new_calls: number; recomputed_calls: number; dirty_hours: number; more: number };

/** The statements of one calls chunk, in order; run them as one `db.batch()`. */
export function callChunkStatements(db: D1Database, chunkCalls: number): D1PreparedStatement[] {
  return [
    db.prepare(SQL.takeNewCalls).bind(chunkCalls),
    db.prepare(SQL.addNeighbours),
    db.prepare(SQL.computeFlags),
    db.prepare(SQL.markDirtyHours),
    db.prepare(SQL.applyPairDeltas),
    db.prepare(SQL.dropEmptyPairs),
    db.prepare(SQL.storeFlags),
    db.prepare(SQL.deleteDirtyHours),
    db.prepare(SQL.insertDirtyHours),
    db.prepare(SQL.deleteDirtyDays),
    db.prepare(SQL.insertDirtyDays),
    db.prepare(SQL.addSessionCounters),
    db.prepare(SQL.advanceWatermark),
    db.prepare(SQL.report),
    db.prepare(SQL.clearChunkCalls),
    db.prepare(SQL.clearChunkHours),
  ];
}

/** Statements one calls chunk costs against the per-invocation query budget. */
export const CALL_CHUNK_STATEMENTS = 16;

/** Runs one calls chunk; returns what it did (new_calls 0 when there was nothing to fold in). */
export async function rollupCallChunk(db: D1Database, chunkCalls: number): Promise<CallChunkReport> {
  const results = await db.batch(callChunkStatements(db, chunkCalls));
  const report = results[13]?.results?.[0] as CallChunkReport | undefined;
  if (!report) throw new Error("rollup: calls chunk returned no report");
  return report;
}
