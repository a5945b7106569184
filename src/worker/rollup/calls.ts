// Folds one chunk of new raw calls into the derived per-call columns, the hour/day counters,
// the tool pairs and the session counters (SPEC §2.1–2.4), as ONE D1 batch (one transaction).
//
// Why this is exact whatever the arrival order (SPEC §2.2, "exact and final"): every figure is a
// per-call flag that depends only on the call's immediate predecessor and successor, in its
// (project, session, client, tool) sequence for retries and in its (project, session, client)
// sequence for pairs, both ordered by (started_at_ms, call_seq). A new call changes the flags of itself and of those neighbours only.
// So a chunk (a) takes the next calls above the `calls_seq` watermark, (b) adds their neighbours,
// (c) recomputes the flags of all of them among the calls at or below the new watermark (the same
// value a batch computation over those calls gives), and (d) stores the flags on raw_calls.
//
// Every counter (hour and day rows, histograms, pairs, sessions) then changes by the exact
// difference between each touched call's recomputed contribution and its stored one (NULL flags:
// not counted yet), in the same transaction that stores the flags and moves the watermark. That
// is not a blind increment: running the chunk again finds stored = recomputed and changes nothing
// (idempotent), and a chunk is applied exactly once or not at all. Each counter therefore always
// equals the sum of the contributions of the stored flags, i.e. the batch computation. Unlike
// re-aggregating whole hours from raw rows, the cost follows the new calls, not the history
// (docs/benchmarks.md), and counters never need raw rows that retention deleted.
//
// The chunk bounds come from `rollup_state` read inside the batch, so two overlapping cron runs
// simply take consecutive chunks.
import { DAY_MS, dayStartSql, hourStartSql, retryGapSql } from "../time.ts";
import { CALLS_WATERMARK, RAW_KEPT_FROM, stateValueSql } from "./state.ts";

const watermark = stateValueSql(CALLS_WATERMARK);
/** Raw calls that start before this may have been deleted by retention (src/worker/rollup/retention.ts). */
const keptFrom = stateValueSql(RAW_KEPT_FROM);
/** Highest call_seq of the chunk: calls above it are not visible to this chunk. */
const chunkTop = `(SELECT MAX(call_seq) FROM rollup_chunk_call_rows WHERE is_new = 1)`;

/** Row-value order of the SPEC: started_at, then receive order. */
const before = (a: string, b: string) => `(${a}.started_at_ms, ${a}.call_seq) < (${b}.started_at_ms, ${b}.call_seq)`;
const after = (a: string, b: string) => `(${a}.started_at_ms, ${a}.call_seq) > (${b}.started_at_ms, ${b}.call_seq)`;
// SPEC §2.2, §2.4: one session serves many clients (every real SDK keeps one session per process),
// so both sequences are per client: user A's call followed by user B's is neither a retry nor a pair.
const sameClient = (a: string, b: string) =>
  `${a}.project_id = ${b}.project_id AND ${a}.session_id = ${b}.session_id AND ${a}.client_name = ${b}.client_name`;
const sameTool = (a: string, b: string) => `${sameClient(a, b)} AND ${a}.tool_name = ${b}.tool_name`;

/**
 * call_seq of the chunk row `c`'s neighbour among the calls visible to the chunk: one seek in
 * raw_calls_by_client_tool or raw_calls_by_client.
 */
function neighbour(kind: "tool_prev" | "tool_next" | "session_prev" | "session_next"): string {
  const scope = kind.startsWith("tool") ? sameTool("x", "c") : sameClient("x", "c");
  const prev = kind.endsWith("prev");
  return `(SELECT x.call_seq FROM raw_calls x
    WHERE ${scope} AND ${prev ? before("x", "c") : after("x", "c")} AND x.call_seq <= ${chunkTop}
    ORDER BY x.started_at_ms ${prev ? "DESC" : "ASC"}, x.call_seq ${prev ? "DESC" : "ASC"} LIMIT 1)`;
}

const COUNTERS = [
  "calls", "ok", "empty", "bad_args", "tool_error", "crashed", "response_bytes_sum", "duration_ms_sum",
  "retries", "first_call_attempts", "first_call_ok",
] as const;
const COUNTER_COLUMNS = COUNTERS.join(", ");
const SUM_COUNTERS = COUNTERS.map((c) => `SUM(${c})`).join(", ");
const ADD_COUNTERS = COUNTERS.map((c) => `${c} = ${c} + excluded.${c}`).join(", ");

const RAW_COLUMNS =
  "project_id, session_id, client_name, tool_name, started_at_ms, duration_ms, outcome, response_bytes, is_empty, args_hash, duration_bucket";
/** Copies raw rows into the chunk table, with their stored derived columns as old_*. */
const copyRows = (isNew: 0 | 1) => `INSERT INTO rollup_chunk_call_rows (call_seq, is_new, ${RAW_COLUMNS},
      old_is_retry, old_was_retried, old_next_tool_name)
    SELECT call_seq, ${isNew}, ${RAW_COLUMNS}, is_retry, was_retried, next_tool_name FROM raw_calls`;

const FIND_NEIGHBOURS = `UPDATE rollup_chunk_call_rows AS c SET neighbours_found = 1,
      prev_tool_seq = ${neighbour("tool_prev")},
      next_tool_seq = ${neighbour("tool_next")},
      prev_session_seq = ${neighbour("session_prev")},
      next_session_seq = ${neighbour("session_next")}
    WHERE c.neighbours_found = 0`;

export const CALL_CHUNK_SQL = {
  // Ingest appends to incoming_calls, which has no secondary index (the hot path stays a bare
  // insert); the chunk moves its oldest rows, in receive order, into the indexed raw_calls.
  moveIncomingCalls: `INSERT INTO raw_calls (call_seq, ${RAW_COLUMNS}, received_at_ms)
    SELECT call_seq, ${RAW_COLUMNS}, received_at_ms FROM incoming_calls ORDER BY call_seq LIMIT ?1`,
  deleteMovedCalls: `DELETE FROM incoming_calls WHERE call_seq IN (SELECT call_seq FROM incoming_calls ORDER BY call_seq LIMIT ?1)`,

  takeNewCalls: `${copyRows(1)}
    WHERE call_seq > ${watermark} ORDER BY call_seq LIMIT ?1`,

  // Each call's neighbours, looked up once (index seeks) and kept by call_seq.
  findNeighbours: FIND_NEIGHBOURS,

  // A new call changes: its (session, client, tool) predecessor's was_retried, its successor's
  // is_retry, and its (session, client) predecessor's next tool (SPEC §2.2, §2.4). Nothing else.
  addNeighbours: `${copyRows(0)}
    WHERE call_seq IN (
      SELECT prev_tool_seq FROM rollup_chunk_call_rows
      UNION SELECT next_tool_seq FROM rollup_chunk_call_rows
      UNION SELECT prev_session_seq FROM rollup_chunk_call_rows)
    AND call_seq NOT IN (SELECT call_seq FROM rollup_chunk_call_rows)`,

  findNeighboursOfNeighbours: FIND_NEIGHBOURS,

  // SPEC §2.2: c was retried when its next call n starts 0 ≤ gap ≤ 30,000 ms after c ended and
  // has a different args_hash; then n is a retry. Same hash or overlap (gap < 0): never.
  //
  // A call older than the raw rows retention keeps (`raw_kept_from_ms`) keeps its flags: its
  // (session, tool) neighbours may be gone, so recomputing would see a wrong predecessor, while
  // no call the ingest still accepts can be within 30 s of it (docs/metrics.md, "Retention"), so
  // its true flags cannot change. Its next tool is still recomputed (pairs have no time window):
  // retention keeps each (session, client)'s latest call before its cutoff for that.
  computeFlags: `UPDATE rollup_chunk_call_rows AS c SET
      is_retry = CASE WHEN c.is_new = 0 AND c.started_at_ms < ${keptFrom} THEN c.old_is_retry ELSE
        COALESCE((SELECT (${retryGapSql("x", "c")}) AND x.args_hash <> c.args_hash FROM raw_calls x WHERE x.call_seq = c.prev_tool_seq), 0) END,
      was_retried = CASE WHEN c.is_new = 0 AND c.started_at_ms < ${keptFrom} THEN c.old_was_retried ELSE
        COALESCE((SELECT (${retryGapSql("c", "x")}) AND x.args_hash <> c.args_hash FROM raw_calls x WHERE x.call_seq = c.next_tool_seq), 0) END,
      next_tool_name = (SELECT x.tool_name FROM raw_calls x WHERE x.call_seq = c.next_session_seq)`,

  // Each call contributes to the counter row of its hour, tool and client (SPEC §2.1–2.3): a
  // chain counts in its first call's hour and client and a retry in its own (SPEC §2.2), and both
  // are the hour and client of the call carrying the flag. The chunk's change to a row is the sum
  // of (new contribution − stored contribution) of the calls in the chunk: a new call adds all of
  // its counters, a neighbour only moves between retries / first_call_attempts / first_call_ok
  // when its flags changed. Flags still NULL (new calls) contributed nothing yet.
  stageCounterDeltas: `INSERT INTO rollup_chunk_deltas (project_id, hour_start_ms, tool_name, client_name, ${COUNTER_COLUMNS})
    SELECT * FROM (
      SELECT project_id, hour_start_ms, tool_name, client_name,
        SUM(n) AS calls, SUM(n * is_ok) AS ok, SUM(n * is_ok * is_empty) AS empty, SUM(n * (outcome = 'bad_args')) AS bad_args,
        SUM(n * (outcome = 'tool_error')) AS tool_error, SUM(n * (outcome = 'crashed')) AS crashed,
        SUM(n * response_bytes) AS response_bytes_sum, SUM(n * duration_ms) AS duration_ms_sum,
        SUM(new_retry) - SUM(COALESCE(old_retry, 0)) AS retries,
        SUM(1 - new_retry) - SUM(COALESCE(1 - old_retry, 0)) AS first_call_attempts,
        SUM(new_retry = 0 AND is_ok AND is_empty = 0 AND new_retried = 0)
          - SUM(COALESCE(old_retry = 0 AND is_ok AND is_empty = 0 AND old_retried = 0, 0)) AS first_call_ok
      FROM (
        SELECT c.project_id, ${hourStartSql("c.started_at_ms")} AS hour_start_ms, c.tool_name, c.client_name,
          c.is_new AS n, c.outcome, c.outcome = 'ok' AS is_ok, c.is_empty, c.response_bytes, c.duration_ms,
          c.is_retry AS new_retry, c.was_retried AS new_retried,
          CASE WHEN c.is_new = 1 THEN NULL ELSE c.old_is_retry END AS old_retry,
          CASE WHEN c.is_new = 1 THEN NULL ELSE c.old_was_retried END AS old_retried
        FROM rollup_chunk_call_rows c
      )
      GROUP BY project_id, hour_start_ms, tool_name, client_name
    ) WHERE calls <> 0 OR retries <> 0 OR first_call_attempts <> 0 OR first_call_ok <> 0`,

  applyHourDeltas: `INSERT INTO tool_hour_metrics (project_id, hour_start_ms, tool_name, client_name, ${COUNTER_COLUMNS}, duration_histogram_json)
    SELECT project_id, hour_start_ms, tool_name, client_name, ${COUNTER_COLUMNS}, '{}' FROM rollup_chunk_deltas WHERE true
    ON CONFLICT (project_id, hour_start_ms, tool_name, client_name) DO UPDATE SET ${ADD_COUNTERS}`,

  // A day row is the sum of its hour rows, so it takes the sum of their changes.
  applyDayDeltas: `INSERT INTO tool_day_metrics (project_id, day_start_ms, tool_name, client_name, ${COUNTER_COLUMNS}, duration_histogram_json)
    SELECT project_id, hour_start_ms - hour_start_ms % ${DAY_MS} AS day_start_ms, tool_name, client_name, ${SUM_COUNTERS}, '{}'
    FROM rollup_chunk_deltas WHERE true GROUP BY project_id, day_start_ms, tool_name, client_name
    ON CONFLICT (project_id, day_start_ms, tool_name, client_name) DO UPDATE SET ${ADD_COUNTERS}`,

  addHourBuckets: `INSERT INTO tool_hour_duration_buckets (project_id, hour_start_ms, tool_name, client_name, bucket, calls)
    SELECT c.project_id, ${hourStartSql("c.started_at_ms")} AS hour_start_ms, c.tool_name, c.client_name, c.duration_bucket, COUNT(*)
    FROM rollup_chunk_call_rows c
    WHERE c.is_new = 1 GROUP BY c.project_id, hour_start_ms, c.tool_name, c.client_name, c.duration_bucket
    ON CONFLICT (project_id, hour_start_ms, tool_name, client_name, bucket) DO UPDATE SET calls = calls + excluded.calls`,

  addDayBuckets: `INSERT INTO tool_day_duration_buckets (project_id, day_start_ms, tool_name, client_name, bucket, calls)
    SELECT c.project_id, ${dayStartSql("c.started_at_ms")} AS day_start_ms, c.tool_name, c.client_name, c.duration_bucket, COUNT(*)
    FROM rollup_chunk_call_rows c
    WHERE c.is_new = 1 GROUP BY c.project_id, day_start_ms, c.tool_name, c.client_name, c.duration_bucket
    ON CONFLICT (project_id, day_start_ms, tool_name, client_name, bucket) DO UPDATE SET calls = calls + excluded.calls`,

  // The JSON histogram of every row that gained calls, rewritten whole from its bucket counts.
  refreshHourHistograms: `UPDATE tool_hour_metrics SET duration_histogram_json = (
      SELECT json_group_object(CAST(b.bucket AS TEXT), b.calls) FROM tool_hour_duration_buckets b
      WHERE b.project_id = tool_hour_metrics.project_id AND b.hour_start_ms = tool_hour_metrics.hour_start_ms
        AND b.tool_name = tool_hour_metrics.tool_name AND b.client_name = tool_hour_metrics.client_name)
    WHERE (project_id, hour_start_ms, tool_name, client_name) IN
      (SELECT project_id, hour_start_ms, tool_name, client_name FROM rollup_chunk_deltas WHERE calls > 0)`,

  refreshDayHistograms: `UPDATE tool_day_metrics SET duration_histogram_json = (
      SELECT json_group_object(CAST(b.bucket AS TEXT), b.calls) FROM tool_day_duration_buckets b
      WHERE b.project_id = tool_day_metrics.project_id AND b.day_start_ms = tool_day_metrics.day_start_ms
        AND b.tool_name = tool_day_metrics.tool_name AND b.client_name = tool_day_metrics.client_name)
    WHERE (project_id, day_start_ms, tool_name, client_name) IN
      (SELECT project_id, hour_start_ms - hour_start_ms % ${DAY_MS}, tool_name, client_name FROM rollup_chunk_deltas WHERE calls > 0)`,

  // Pairs change by difference between the stored and the recomputed next tool of each call, so
  // a pair whose first call is older than the kept raw rows is still right (see file comment).
  // A new call's stored next tool is NULL, which is also "no pair", so it starts from nothing.
  applyPairDeltas: `INSERT INTO tool_pair_days (project_id, day_start_ms, client_name, from_tool, to_tool, pair_count)
    SELECT project_id, day_start_ms, client_name, from_tool, to_tool, SUM(delta) FROM (
      SELECT c.project_id, ${dayStartSql("c.started_at_ms")} AS day_start_ms, c.client_name,
             c.tool_name AS from_tool, c.old_next_tool_name AS to_tool, -1 AS delta
        FROM rollup_chunk_call_rows c
        WHERE c.old_next_tool_name IS NOT c.next_tool_name AND c.old_next_tool_name IS NOT NULL AND c.old_next_tool_name <> c.tool_name
      UNION ALL
      SELECT c.project_id, ${dayStartSql("c.started_at_ms")}, c.client_name, c.tool_name, c.next_tool_name, 1
        FROM rollup_chunk_call_rows c
        WHERE c.old_next_tool_name IS NOT c.next_tool_name AND c.next_tool_name IS NOT NULL AND c.next_tool_name <> c.tool_name
    ) WHERE true
    GROUP BY project_id, day_start_ms, client_name, from_tool, to_tool HAVING SUM(delta) <> 0
    ON CONFLICT (project_id, day_start_ms, client_name, from_tool, to_tool)
      DO UPDATE SET pair_count = pair_count + excluded.pair_count`,

  dropEmptyPairs: `DELETE FROM tool_pair_days WHERE pair_count = 0`,

  storeFlags: `UPDATE raw_calls SET (is_retry, was_retried, next_tool_name) =
      (SELECT c.is_retry, c.was_retried, c.next_tool_name FROM rollup_chunk_call_rows c WHERE c.call_seq = raw_calls.call_seq)
    WHERE call_seq IN (SELECT call_seq FROM rollup_chunk_call_rows)`,

  // SPEC §2.4 session counters: added for the chunk's new calls in the transaction that moves the
  // watermark past them, so each call is added exactly once and the sums survive raw retention.
  // The row is normally created by ingest (in the batch that stores the calls); if it is not there
  // it is created here as ingest would: first/last seen over these calls, client of the latest
  // call (looked up only then; the client of an existing row is left alone).
  addSessionCounters: `INSERT INTO sessions (project_id, session_id, first_seen_ms, last_seen_ms, client_name, calls, response_bytes_sum)
    SELECT g.project_id, g.session_id, g.first_seen_ms, g.last_seen_ms,
      CASE WHEN EXISTS (SELECT 1 FROM sessions e WHERE e.project_id = g.project_id AND e.session_id = g.session_id) THEN ''
        ELSE (SELECT l.client_name FROM raw_calls l WHERE l.project_id = g.project_id AND l.session_id = g.session_id
                AND l.call_seq <= ${chunkTop} ORDER BY l.started_at_ms DESC, l.call_seq DESC LIMIT 1) END,
      g.calls, g.response_bytes_sum
    FROM (
      SELECT c.project_id, c.session_id, MIN(c.started_at_ms) AS first_seen_ms, MAX(c.started_at_ms) AS last_seen_ms,
             COUNT(*) AS calls, SUM(c.response_bytes) AS response_bytes_sum
      FROM rollup_chunk_call_rows c
      WHERE c.is_new = 1 GROUP BY c.project_id, c.session_id
    ) AS g WHERE true
    ON CONFLICT (project_id, session_id) DO UPDATE SET
      calls = calls + excluded.calls, response_bytes_sum = response_bytes_sum + excluded.response_bytes_sum`,

  advanceWatermark: `INSERT INTO rollup_state (name, value)
    SELECT '${CALLS_WATERMARK}', top FROM (SELECT ${chunkTop} AS top) WHERE top IS NOT NULL
    ON CONFLICT (name) DO UPDATE SET value = excluded.value`,

  report: `SELECT
      (SELECT COUNT(*) FROM rollup_chunk_call_rows WHERE is_new = 1) AS new_calls,
      (SELECT COUNT(*) FROM rollup_chunk_call_rows) AS recomputed_calls,
      (SELECT COUNT(DISTINCT project_id || ' ' || hour_start_ms) FROM rollup_chunk_deltas) AS touched_hours,
      EXISTS (SELECT 1 FROM incoming_calls) OR EXISTS (SELECT 1 FROM raw_calls WHERE call_seq > ${watermark}) AS more`,

  clearChunkCalls: `DELETE FROM rollup_chunk_call_rows`,
  clearChunkDeltas: `DELETE FROM rollup_chunk_deltas`,
} as const;

export type CallChunkReport = { new_calls: number; recomputed_calls: number; touched_hours: number; more: number };

/** The statements of one calls chunk, in order; run them as one `db.batch()`. */
export function callChunkStatements(db: D1Database, chunkCalls: number): D1PreparedStatement[] {
  return [
    db.prepare(CALL_CHUNK_SQL.moveIncomingCalls).bind(chunkCalls),
    db.prepare(CALL_CHUNK_SQL.deleteMovedCalls).bind(chunkCalls),
    db.prepare(CALL_CHUNK_SQL.takeNewCalls).bind(chunkCalls),
    db.prepare(CALL_CHUNK_SQL.findNeighbours),
    db.prepare(CALL_CHUNK_SQL.addNeighbours),
    db.prepare(CALL_CHUNK_SQL.findNeighboursOfNeighbours),
    db.prepare(CALL_CHUNK_SQL.computeFlags),
    db.prepare(CALL_CHUNK_SQL.stageCounterDeltas),
    db.prepare(CALL_CHUNK_SQL.applyHourDeltas),
    db.prepare(CALL_CHUNK_SQL.applyDayDeltas),
    db.prepare(CALL_CHUNK_SQL.addHourBuckets),
    db.prepare(CALL_CHUNK_SQL.addDayBuckets),
    db.prepare(CALL_CHUNK_SQL.refreshHourHistograms),
    db.prepare(CALL_CHUNK_SQL.refreshDayHistograms),
    db.prepare(CALL_CHUNK_SQL.applyPairDeltas),
    db.prepare(CALL_CHUNK_SQL.dropEmptyPairs),
    db.prepare(CALL_CHUNK_SQL.storeFlags),
    db.prepare(CALL_CHUNK_SQL.addSessionCounters),
    db.prepare(CALL_CHUNK_SQL.advanceWatermark),
    db.prepare(CALL_CHUNK_SQL.report),
    db.prepare(CALL_CHUNK_SQL.clearChunkCalls),
    db.prepare(CALL_CHUNK_SQL.clearChunkDeltas),
  ];
}

/** Statements one calls chunk costs against the per-invocation query budget. */
export const CALL_CHUNK_STATEMENTS = 22;

/** Runs one calls chunk; returns what it did (new_calls 0 when there was nothing to fold in). */
export async function rollupCallChunk(db: D1Database, chunkCalls: number): Promise<CallChunkReport> {
  const results = await db.batch(callChunkStatements(db, chunkCalls));
  const report = results[CALL_CHUNK_STATEMENTS - 3]?.results?.[0] as CallChunkReport | undefined;
  if (!report) throw new Error("rollup: calls chunk returned no report");
  return report;
}
