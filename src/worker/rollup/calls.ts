// Folds one chunk of new raw calls into the derived per-call columns, the hour/day counters,
// the tool pairs and the session counters (SPEC §2.1–2.4), as ONE D1 batch (one transaction).
//
// Why this is exact whatever the arrival order (SPEC §2.2, "exact and final"): every figure is a
// per-call flag that depends only on the call's immediate predecessor and successor, in its
// (project, session, client, tool) sequence for retries and in its (project, session, client)
// sequence for pairs, both ordered by (started_at_ms, call_seq). A new call changes the flags of itself and of those neighbours only.
// So a chunk (a) takes the next calls above the `calls_seq` watermark, (b) adds their neighbours,
// (c) computes the flags of all of them twice from the raw rows: among the calls at or below the
// new top of the chunk, and among those at or below the watermark (what the counters hold now).
// Flags are never stored: CTEs derive them in each statement that needs them and write nothing.
//
// Every counter (hour and day rows, histograms, pairs, sessions) then changes by the exact
// difference between each touched call's contribution with the chunk and before it (a new call:
// nothing before), in the same transaction that moves the watermark. That is not a blind
// increment: running the chunk again finds no new calls and changes nothing (idempotent), and a
// chunk is applied exactly once or not at all. Each counter therefore always equals the sum of the
// contributions of the calls folded in, i.e. the batch computation. Unlike re-aggregating whole
// hours from raw rows, the cost follows the new calls, not the history (docs/benchmarks.md), and
// counters never need raw rows that retention deleted.
//
// The chunk bounds come from `rollup_state` read inside the batch, so two overlapping cron runs
// simply take consecutive chunks.
import { DAY_MS, dayStartSql, hourStartSql, retryGapSql } from "../time.ts";
import { CALLS_WATERMARK, stateValueSql } from "./state.ts";

const watermark = stateValueSql(CALLS_WATERMARK);

/** Row-value order of the SPEC: started_at, then receive order. */
const before = (a: string, b: string) => `(${a}.started_at_ms, ${a}.call_seq) < (${b}.started_at_ms, ${b}.call_seq)`;
const after = (a: string, b: string) => `(${a}.started_at_ms, ${a}.call_seq) > (${b}.started_at_ms, ${b}.call_seq)`;
// SPEC §2.2, §2.4: one session serves many clients (every real SDK keeps one session per process),
// so both sequences are per client: user A's call followed by user B's is neither a retry nor a pair.
const sameClient = (a: string, b: string) =>
  `${a}.project_id = ${b}.project_id AND ${a}.session_id = ${b}.session_id AND ${a}.client_name = ${b}.client_name`;
const sameTool = (a: string, b: string) => `${sameClient(a, b)} AND ${a}.tool_name = ${b}.tool_name`;

type Neighbour = "tool_prev" | "tool_next" | "session_prev" | "session_next";

/**
 * call_seq of the raw call `c`'s neighbour among the calls numbered up to `visibleTo` (the chunk's
 * top for the sequence with the chunk, the watermark for the sequence before it): one seek in
 * raw_calls_by_client_tool or raw_calls_by_client.
 */
function neighbour(kind: Neighbour, visibleTo: string): string {
  const scope = kind.startsWith("tool") ? sameTool("x", "c") : sameClient("x", "c");
  const prev = kind.endsWith("prev");
  return `(SELECT x.call_seq FROM raw_calls x
    WHERE ${scope} AND ${prev ? before("x", "c") : after("x", "c")} AND x.call_seq <= ${visibleTo}
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

/**
 * The chunk, as CTEs (they write nothing; D1 refuses TEMP tables, and a scratch table cost ~4 billed
 * rows per call: insert, two updates, delete). `new_calls`: the next ?1 calls above the watermark;
 * `bounds`: the watermark and the chunk's top call_seq. Every statement of the chunk's batch
 * derives the same rows, since the watermark moves only in its last statements.
 */
const CHUNK_CTES = `new_calls AS MATERIALIZED (
      SELECT call_seq FROM raw_calls WHERE call_seq > ${watermark} ORDER BY call_seq LIMIT ?1),
    bounds AS MATERIALIZED (
      SELECT ${watermark} AS wm, (SELECT MAX(call_seq) FROM new_calls) AS top)`;

/**
 * The calls whose figures the chunk can change, with their neighbours in the sequence with the
 * chunk (new_*) and before it (old_*; none for a new call, which contributed nothing yet). A new
 * call changes the flags of itself and of its neighbours only: for retries (SPEC §2.2) its
 * (session, client, tool) predecessor and successor, for pairs (SPEC §2.4) its (session, client)
 * predecessor. Nothing is stored per call: the flags before the chunk are recomputed from the
 * same raw rows, among the calls at or below the watermark, exactly as the chunk that counted
 * them saw them.
 */
const touchedCtes = (sequence: "tool" | "session", withLinks = true) => {
  // The neighbours that touch calls (a new call's predecessor and successor for retries, its
  // predecessor for pairs) and the neighbours each touched call's figures depend on.
  const linked = sequence === "tool" ? (["tool_prev", "tool_next"] as const) : (["session_prev"] as const);
  const links = sequence === "tool" ? (["tool_prev", "tool_next"] as const) : (["session_next"] as const);
  const newLinks = [...new Set([...linked, ...links])];
  // A new call's neighbours are looked up once, and used both to find the touched calls and as
  // its own neighbours with the chunk (it has none before).
  const ctes = `${CHUNK_CTES},
    new_links AS MATERIALIZED (
      SELECT c.call_seq, ${newLinks.map((k) => `${neighbour(k, "b.top")} AS new_${k}`).join(", ")}
      FROM new_calls n JOIN raw_calls c ON c.call_seq = n.call_seq, bounds b),
    touched AS MATERIALIZED (
      SELECT call_seq FROM new_calls
      ${linked.map((k) => `UNION SELECT new_${k} FROM new_links`).join("\n      ")})`;
  if (!withLinks) return ctes;
  return `${ctes},
    linked AS MATERIALIZED (
      SELECT c.*, 1 AS is_new, ${links.map((k) => `nl.new_${k}, NULL AS old_${k}`).join(", ")}
      FROM new_links nl JOIN raw_calls c ON c.call_seq = nl.call_seq
      UNION ALL
      SELECT c.*, 0 AS is_new,
        ${links.map((k) => `${neighbour(k, "b.top")} AS new_${k}, ${neighbour(k, "b.wm")} AS old_${k}`).join(",\n        ")}
      FROM touched t JOIN raw_calls c ON c.call_seq = t.call_seq, bounds b
      WHERE t.call_seq IS NOT NULL AND t.call_seq <= b.wm)`;
};

// SPEC §2.2: c was retried when its next call n starts 0 ≤ gap ≤ 30,000 ms after c ended and has a
// different args_hash; then n is a retry. Same hash or overlap (gap < 0): never.
const isRetryOf = (prevSeq: string) =>
  `COALESCE((SELECT (${retryGapSql("x", "k")}) AND x.args_hash <> k.args_hash FROM raw_calls x WHERE x.call_seq = ${prevSeq}), 0)`;
const wasRetriedBy = (nextSeq: string) =>
  `COALESCE((SELECT (${retryGapSql("k", "x")}) AND x.args_hash <> k.args_hash FROM raw_calls x WHERE x.call_seq = ${nextSeq}), 0)`;
const toolOf = (seq: string) => `(SELECT x.tool_name FROM raw_calls x WHERE x.call_seq = ${seq})`;

/** Two sparse JSON histograms {"<bucket>": count} added key by key, keys in bucket order. */
const mergeHistograms = (stored: string, added: string) => `CASE WHEN ${added} = '{}' THEN ${stored} ELSE (
      SELECT json_group_object(key, calls) FROM (
        SELECT key, SUM(value) AS calls FROM (
          SELECT key, value FROM json_each(${stored}) UNION ALL SELECT key, value FROM json_each(${added}))
        GROUP BY key ORDER BY CAST(key AS INTEGER))) END`;

/**
 * The chunk's change to each counter row it touches, as the CTE `deltas` (one row per project,
 * hour, tool and client; with the new calls' latency buckets as a JSON object, SPEC §2.3). Both
 * counter upserts derive it: a staging table would cost a row and its delete per counter row.
 */
const DELTAS_CTES = `WITH ${touchedCtes("tool")},
    histograms AS (
      SELECT project_id, hour_start_ms, tool_name, client_name, json_group_object(CAST(bucket AS TEXT), calls) AS histogram
      FROM (
        SELECT c.project_id, ${hourStartSql("c.started_at_ms")} AS hour_start_ms, c.tool_name, c.client_name,
          c.duration_bucket AS bucket, COUNT(*) AS calls
        FROM new_calls n JOIN raw_calls c ON c.call_seq = n.call_seq
        GROUP BY c.project_id, hour_start_ms, c.tool_name, c.client_name, c.duration_bucket
        ORDER BY c.duration_bucket)
      GROUP BY project_id, hour_start_ms, tool_name, client_name),
    flags AS (
      SELECT k.project_id, ${hourStartSql("k.started_at_ms")} AS hour_start_ms, k.tool_name, k.client_name,
        k.is_new AS n, k.outcome, k.outcome = 'ok' AS is_ok, k.is_empty, k.response_bytes, k.duration_ms,
        ${isRetryOf("k.new_tool_prev")} AS new_retry, ${wasRetriedBy("k.new_tool_next")} AS new_retried,
        CASE WHEN k.is_new THEN NULL ELSE ${isRetryOf("k.old_tool_prev")} END AS old_retry,
        CASE WHEN k.is_new THEN NULL ELSE ${wasRetriedBy("k.old_tool_next")} END AS old_retried
      FROM linked k),
    deltas AS MATERIALIZED (
    SELECT d.*, COALESCE(h.histogram, '{}') AS duration_histogram_json FROM (
      SELECT project_id, hour_start_ms, tool_name, client_name,
        SUM(n) AS calls, SUM(n * is_ok) AS ok, SUM(n * is_ok * is_empty) AS empty, SUM(n * (outcome = 'bad_args')) AS bad_args,
        SUM(n * (outcome = 'tool_error')) AS tool_error, SUM(n * (outcome = 'crashed')) AS crashed,
        SUM(n * response_bytes) AS response_bytes_sum, SUM(n * duration_ms) AS duration_ms_sum,
        SUM(new_retry) - SUM(COALESCE(old_retry, 0)) AS retries,
        SUM(1 - new_retry) - SUM(COALESCE(1 - old_retry, 0)) AS first_call_attempts,
        SUM(new_retry = 0 AND is_ok AND is_empty = 0 AND new_retried = 0)
          - SUM(COALESCE(old_retry = 0 AND is_ok AND is_empty = 0 AND old_retried = 0, 0)) AS first_call_ok
      FROM flags
      GROUP BY project_id, hour_start_ms, tool_name, client_name
    ) AS d LEFT JOIN histograms h USING (project_id, hour_start_ms, tool_name, client_name)
    WHERE d.calls <> 0 OR d.retries <> 0 OR d.first_call_attempts <> 0 OR d.first_call_ok <> 0)`;

/**
 * The call_seq before the chunk's first call: above every number in use in raw_calls and above the
 * calls watermark, so a number is never handed out twice even once retention emptied the table.
 */
export const CALL_SEQ_BASE_SQL = `SELECT MAX(
    COALESCE((SELECT MAX(call_seq) FROM raw_calls), 0),
    COALESCE((SELECT value FROM rollup_state WHERE name = '${CALLS_WATERMARK}'), 0)) AS base`;

/** The oldest waiting requests, as long as the calls before each are fewer than ?1 (at least one). */
const TAKEN_BATCHES = `SELECT batch_seq, project_id, received_at_ms, calls_json FROM (
      SELECT batch_seq, project_id, received_at_ms, calls_json, SUM(call_count) OVER (ORDER BY batch_seq) - call_count AS calls_before
      FROM (SELECT * FROM call_batches ORDER BY batch_seq LIMIT ?1))
    WHERE calls_before < ?1`;

export const CALL_CHUNK_SQL = {
  // Ingest stores each request's calls as one row; the chunk numbers the oldest requests' calls
  // into raw_calls in receive order (SPEC §2.2 ties) and deletes those rows.
  numberNewCalls: `INSERT INTO raw_calls (call_seq, ${RAW_COLUMNS}, received_at_ms)
    WITH taken AS (${TAKEN_BATCHES}), seq AS (${CALL_SEQ_BASE_SQL})
    SELECT seq.base + ROW_NUMBER() OVER (ORDER BY t.batch_seq, j.key), t.project_id, j.value ->> 0, j.value ->> 1,
      j.value ->> 2, j.value ->> 3, j.value ->> 4, j.value ->> 5, j.value ->> 6, j.value ->> 7, j.value ->> 8, j.value ->> 9,
      t.received_at_ms
    FROM taken t, json_each(t.calls_json) AS j, seq ORDER BY t.batch_seq, j.key`,
  deleteNumberedBatches: `DELETE FROM call_batches WHERE batch_seq IN (SELECT batch_seq FROM (${TAKEN_BATCHES}))`,

  // Each call contributes to the counter row of its hour, tool and client (SPEC §2.1–2.3): a
  // chain counts in its first call's hour and client and a retry in its own (SPEC §2.2), and both
  // are the hour and client of the call carrying the flag. The chunk's change to a row is the sum
  // of (contribution with the chunk − contribution before it) of the touched calls: a new call adds
  // all of its counters, a neighbour only moves between retries / first_call_attempts /
  // first_call_ok when its flags changed.
  //
  // A call older than the raw rows retention keeps (`raw_kept_from_ms`) may have lost neighbours
  // to retention; both of its flag sets are computed from the same rows, and no call the ingest
  // still accepts can be within 30 s of it (docs/metrics.md, "Retention"), so its change is 0.
  // (DELTAS_CTES computes that change per counter row.)

  // The histogram is merged in the same upsert: bucket counts added key by key, in bucket order.
  applyHourDeltas: `INSERT INTO tool_hour_metrics (project_id, hour_start_ms, tool_name, client_name, ${COUNTER_COLUMNS}, duration_histogram_json)
    ${DELTAS_CTES}
    SELECT project_id, hour_start_ms, tool_name, client_name, ${COUNTER_COLUMNS}, duration_histogram_json FROM deltas WHERE true
    ON CONFLICT (project_id, hour_start_ms, tool_name, client_name) DO UPDATE SET ${ADD_COUNTERS},
      duration_histogram_json = ${mergeHistograms("tool_hour_metrics.duration_histogram_json", "excluded.duration_histogram_json")}`,

  // A day row is the sum of its hour rows: the days the chunk can have changed (its new calls' and
  // their (session, client, tool) neighbours', which share tool and client) are summed again from
  // their hour rows, after the hour upsert, and overwritten (recomputed, never incremented, so the
  // flags are derived once per chunk for the counters, not once per table).
  applyDayDeltas: `INSERT INTO tool_day_metrics (project_id, day_start_ms, tool_name, client_name, ${COUNTER_COLUMNS}, duration_histogram_json)
    WITH ${touchedCtes("tool", false)},
    days AS MATERIALIZED (
      SELECT DISTINCT c.project_id, ${dayStartSql("c.started_at_ms")} AS day_start_ms, c.tool_name, c.client_name
      FROM touched t JOIN raw_calls c ON c.call_seq = t.call_seq WHERE t.call_seq IS NOT NULL),
    hours AS MATERIALIZED (
      SELECT h.* FROM days d JOIN tool_hour_metrics h ON h.project_id = d.project_id AND h.tool_name = d.tool_name
        AND h.client_name = d.client_name AND h.hour_start_ms >= d.day_start_ms AND h.hour_start_ms < d.day_start_ms + ${DAY_MS}),
    sums AS (
      SELECT project_id, hour_start_ms - hour_start_ms % ${DAY_MS} AS day_start_ms, tool_name, client_name,
        ${SUM_COUNTERS.split(", ").map((sum, i) => `${sum} AS ${COUNTERS[i]}`).join(", ")}
      FROM hours GROUP BY project_id, day_start_ms, tool_name, client_name),
    day_buckets AS (
      SELECT project_id, day_start_ms, tool_name, client_name, json_group_object(bucket, calls) AS histogram FROM (
        SELECT h.project_id, h.hour_start_ms - h.hour_start_ms % ${DAY_MS} AS day_start_ms, h.tool_name, h.client_name,
          b.key AS bucket, SUM(b.value) AS calls
        FROM hours h, json_each(h.duration_histogram_json) AS b
        GROUP BY h.project_id, day_start_ms, h.tool_name, h.client_name, b.key ORDER BY CAST(b.key AS INTEGER))
      GROUP BY project_id, day_start_ms, tool_name, client_name)
    SELECT d.project_id, d.day_start_ms, d.tool_name, d.client_name, ${COUNTERS.map((c) => `d.${c}`).join(", ")}, COALESCE(h.histogram, '{}')
    FROM sums d LEFT JOIN day_buckets h USING (project_id, day_start_ms, tool_name, client_name) WHERE true
    ON CONFLICT (project_id, day_start_ms, tool_name, client_name) DO UPDATE SET
      ${COUNTERS.map((c) => `${c} = excluded.${c}`).join(", ")}, duration_histogram_json = excluded.duration_histogram_json`,

  // Pairs change by the difference between each touched call's next tool before and with the
  // chunk (SPEC §2.4; pairs have no time window, so retention keeps each (session, client)'s
  // latest call before its cutoff to carry them). A new call had no pair before.
  applyPairDeltas: `INSERT INTO tool_pair_days (project_id, day_start_ms, client_name, from_tool, to_tool, pair_count)
    WITH ${touchedCtes("session")},
    nexts AS (
      SELECT k.project_id, ${dayStartSql("k.started_at_ms")} AS day_start_ms, k.client_name, k.tool_name,
        ${toolOf("k.old_session_next")} AS old_next_tool, ${toolOf("k.new_session_next")} AS new_next_tool
      FROM linked k)
    SELECT project_id, day_start_ms, client_name, from_tool, to_tool, SUM(delta) FROM (
      SELECT project_id, day_start_ms, client_name, tool_name AS from_tool, old_next_tool AS to_tool, -1 AS delta
        FROM nexts WHERE old_next_tool IS NOT new_next_tool AND old_next_tool IS NOT NULL AND old_next_tool <> tool_name
      UNION ALL
      SELECT project_id, day_start_ms, client_name, tool_name, new_next_tool, 1
        FROM nexts WHERE old_next_tool IS NOT new_next_tool AND new_next_tool IS NOT NULL AND new_next_tool <> tool_name
    ) WHERE true
    GROUP BY project_id, day_start_ms, client_name, from_tool, to_tool HAVING SUM(delta) <> 0
    ON CONFLICT (project_id, day_start_ms, client_name, from_tool, to_tool)
      DO UPDATE SET pair_count = pair_count + excluded.pair_count`,

  dropEmptyPairs: `DELETE FROM tool_pair_days WHERE pair_count = 0`,

  // SPEC §2.4 session counters: added for the chunk's new calls in the transaction that moves the
  // watermark past them, so each call is added exactly once and the sums survive raw retention.
  // The row is normally created by ingest (in the batch that stores the calls); if it is not there
  // it is created here as ingest would: first/last seen over these calls, client of the latest
  // call (looked up only then; the client of an existing row is left alone).
  addSessionCounters: `INSERT INTO sessions (project_id, session_id, first_seen_ms, last_seen_ms, client_name, calls, response_bytes_sum)
    WITH ${CHUNK_CTES}
    SELECT g.project_id, g.session_id, g.first_seen_ms, g.last_seen_ms,
      CASE WHEN EXISTS (SELECT 1 FROM sessions e WHERE e.project_id = g.project_id AND e.session_id = g.session_id) THEN ''
        ELSE (SELECT l.client_name FROM raw_calls l WHERE l.project_id = g.project_id AND l.session_id = g.session_id
                AND l.call_seq <= (SELECT top FROM bounds) ORDER BY l.started_at_ms DESC, l.call_seq DESC LIMIT 1) END,
      g.calls, g.response_bytes_sum
    FROM (
      SELECT c.project_id, c.session_id, MIN(c.started_at_ms) AS first_seen_ms, MAX(c.started_at_ms) AS last_seen_ms,
             COUNT(*) AS calls, SUM(c.response_bytes) AS response_bytes_sum
      FROM new_calls n JOIN raw_calls c ON c.call_seq = n.call_seq
      GROUP BY c.project_id, c.session_id
    ) AS g WHERE true
    ON CONFLICT (project_id, session_id) DO UPDATE SET
      calls = calls + excluded.calls, response_bytes_sum = response_bytes_sum + excluded.response_bytes_sum`,

  // Also reports the chunk (read before the watermark moves): its new calls and the touched hours.
  report: `WITH ${CHUNK_CTES}
    SELECT (SELECT COUNT(*) FROM new_calls) AS new_calls,
      (SELECT COUNT(DISTINCT c.project_id || ' ' || ${hourStartSql("c.started_at_ms")}) FROM new_calls n JOIN raw_calls c ON c.call_seq = n.call_seq) AS touched_hours,
      EXISTS (SELECT 1 FROM call_batches) OR EXISTS (SELECT 1 FROM raw_calls WHERE call_seq > (SELECT top FROM bounds)) AS more`,

  advanceWatermark: `INSERT INTO rollup_state (name, value)
    WITH ${CHUNK_CTES}
    SELECT '${CALLS_WATERMARK}', top FROM bounds WHERE top IS NOT NULL
    ON CONFLICT (name) DO UPDATE SET value = excluded.value`,

} as const;

export type CallChunkReport = { new_calls: number; touched_hours: number; more: number };

/** The statements of one calls chunk, in order; run them as one `db.batch()`. */
export function callChunkStatements(db: D1Database, chunkCalls: number): D1PreparedStatement[] {
  const order = [
    "numberNewCalls", "deleteNumberedBatches", "applyHourDeltas", "applyDayDeltas",
    "applyPairDeltas", "dropEmptyPairs", "addSessionCounters", "report", "advanceWatermark",
  ] as const satisfies readonly (keyof typeof CALL_CHUNK_SQL)[];
  return order.map((name) => {
    const sql = CALL_CHUNK_SQL[name];
    return sql.includes("?1") ? db.prepare(sql).bind(chunkCalls) : db.prepare(sql);
  });
}

/** Statements one calls chunk costs against the per-invocation query budget. */
export const CALL_CHUNK_STATEMENTS = 9;
/** Position of the report statement in the chunk's batch. */
const REPORT_INDEX = 7;

/** Runs one calls chunk; returns what it did (new_calls 0 when there was nothing to fold in). */
export async function rollupCallChunk(db: D1Database, chunkCalls: number): Promise<CallChunkReport> {
  const results = await db.batch(callChunkStatements(db, chunkCalls));
  const report = results[REPORT_INDEX]?.results?.[0] as CallChunkReport | undefined;
  if (!report) throw new Error("rollup: calls chunk returned no report");
  return report;
}
