// Folds one chunk of new calls into the hour/day counters, the tool pairs and the session counters
// (SPEC §2.1–2.4), as ONE D1 batch (one transaction).
//
// Where the calls live (migration 0011, docs/scaling.md): ingest writes each request's calls as one
// `call_batches` row; the chunk takes the oldest ones, numbers their calls in receive order
// (`call_seq`, the SPEC §2.2 tie-break) and appends them to `call_state`: one row per (project,
// session, client, UTC hour of started_at) holding that hour's calls as a JSON array. A call is
// never its own row: D1 bills rows, not bytes, so a chunk writes one state row per (session, client,
// hour) it lands in, whatever the number of calls.
//
// Why this is exact whatever the arrival order (SPEC §2.2, "exact and final"): every figure is a
// per-call flag that depends only on the call's neighbours, in its (session, client, tool) sequence
// for retries and in its (session, client) sequence for pairs, both ordered by (started_at_ms,
// call_seq). The chunk loads, for each (session, client) it touches, every state row that can hold
// such a neighbour (`loaded`), derives the flags of those calls twice with window functions — without
// the chunk (what the counters hold now) and with it — and changes every counter by the difference.
// Calls whose flags did not change cancel out, and so do the calls at the edges of the loaded span,
// whose neighbours outside it are missing from both sides alike. Flags are never stored: CTEs derive
// them in each statement that needs them and write nothing.
//
// The span loaded for a (session, client) whose new calls start in [lo, hi] is every row from the
// hour of lo − reach − 30 s to the hour of hi + reach + 30 s, where reach is the longest duration
// among the new calls and the rows within a day of them (a call lasts at most a day, SPEC §1.2),
// plus the nearest non-empty row on each side unless the span already holds a call before (after)
// the new ones (each row knows its earliest and latest start). A call outside that span can neither retry nor be
// retried by a new call, nor be the new calls' neighbour's neighbour in a way that changes a flag:
// its gap to anything new is over 30 s. The nearest rows carry the pairs, which have no time window
// (SPEC §2.4): the new calls' predecessor and successor in the (session, client) sequence can be any
// distance away, and retention keeps each (session, client)'s latest row before its cutoff for that.
//
// Every counter then changes by the exact difference, in the same transaction that appends the
// calls and deletes their batches: running a chunk again finds no batch and changes nothing
// (idempotent), and a chunk is applied exactly once or not at all. Unlike re-aggregating whole
// hours, the cost follows the new calls and their neighbourhood, not the history, and counters
// never need rows that retention deleted.
import { DAY_MS, RETRY_WINDOW_MS, dayStartSql, hourStartSql, retryGapSql } from "../time.ts";
import { CALLS_WATERMARK, stateValueSql } from "./state.ts";

const COUNTERS = [
  "calls", "ok", "empty", "bad_args", "tool_error", "crashed", "response_bytes_sum", "duration_ms_sum",
  "retries", "first_call_attempts", "first_call_ok", "calls_without_session",
] as const;

/**
 * A call with an empty session_id has no session (SPEC §2.2): it is a chain of its own, never a
 * retry and never retried, in no session and no pair, and costs no per-session storage. Only calls
 * with a session enter the spans, call_state, the pairs and the sessions.
 */
const IN_A_SESSION = "session_id <> ''";
const COUNTER_COLUMNS = COUNTERS.join(", ");
const SUM_COUNTERS = COUNTERS.map((c) => `SUM(${c})`).join(", ");
const ADD_COUNTERS = COUNTERS.map((c) => `${c} = ${c} + excluded.${c}`).join(", ");

/**
 * The oldest waiting requests, as long as the calls before each are fewer than ?1 (at least one).
 * The running count reads only the small columns; the JSON is read for the requests taken.
 */
const TAKEN_BATCHES = `SELECT b.batch_seq, b.project_id, b.received_at_ms, b.calls_json FROM (
      SELECT batch_seq, SUM(call_count) OVER (ORDER BY batch_seq) - call_count AS calls_before
      FROM (SELECT batch_seq, call_count FROM call_batches ORDER BY batch_seq LIMIT ?1)) AS t
    JOIN call_batches b ON b.batch_seq = t.batch_seq
    WHERE t.calls_before < ?1`;

/** The fields of a call in a `call_batches` row (src/worker/db/raw-writes.ts), by position. */
const BATCH_FIELDS = [
  "session_id", "client_name", "tool_name", "started_at_ms", "duration_ms", "outcome", "response_bytes", "is_empty",
  "args_hash", "duration_bucket",
] as const;
type BatchField = (typeof BATCH_FIELDS)[number];

/**
 * `new_calls`: the chunk's calls, numbered in receive order above every number handed out before
 * (`calls_seq`, advanced in the chunk's last statements), so each statement of the batch derives
 * the same rows. Each statement extracts only the fields it reads: the extraction is most of what
 * deriving the chunk costs, and every statement derives it again.
 */
const newCallsCtes = (fields: readonly BatchField[]) => `taken AS MATERIALIZED (${TAKEN_BATCHES}),
    new_calls AS MATERIALIZED (
      SELECT t.project_id, ${fields.map((f) => `j.value ->> ${BATCH_FIELDS.indexOf(f)} AS ${f}`).join(", ")},
        ${stateValueSql(CALLS_WATERMARK)} + ROW_NUMBER() OVER (ORDER BY t.batch_seq, j.key) AS call_seq
      FROM taken t, json_each(t.calls_json) AS j)`;
const ALL_FIELDS = BATCH_FIELDS;
/** What the spans need of a call. */
const SPAN_FIELDS = ["session_id", "client_name", "tool_name", "started_at_ms", "duration_ms"] as const satisfies readonly BatchField[];

const sameGroup = (a: string, b: string) =>
  `${a}.project_id = ${b}.project_id AND ${a}.session_id = ${b}.session_id AND ${a}.client_name = ${b}.client_name`;

/**
 * `spans`: per (project, session, client) of the chunk, the hours of state rows to load (see the
 * header): from the hour of lo − reach − 30 s to the hour of hi + reach + 30 s.
 */
const spansCtes = (fields: readonly BatchField[]) => `${newCallsCtes(fields)},
    groups AS MATERIALIZED (
      SELECT project_id, session_id, client_name, MIN(started_at_ms) AS lo, MAX(started_at_ms) AS hi, MAX(duration_ms) AS dur
      FROM new_calls WHERE ${IN_A_SESSION} GROUP BY project_id, session_id, client_name),
    spans AS MATERIALIZED (
      SELECT project_id, session_id, client_name, lo, hi, reach,
        ${hourStartSql(`lo - reach - ${RETRY_WINDOW_MS}`)} AS from_ms, ${hourStartSql(`hi + reach + ${RETRY_WINDOW_MS}`)} AS to_ms
      FROM (
        SELECT g.*, MAX(g.dur, COALESCE((SELECT MAX(cs.max_duration_ms) FROM call_state cs WHERE ${sameGroup("cs", "g")}
          AND cs.hour_start_ms >= ${hourStartSql(`g.lo - ${DAY_MS + RETRY_WINDOW_MS}`)}
          AND cs.hour_start_ms <= g.hi + ${DAY_MS + RETRY_WINDOW_MS}), 0)) AS reach
        FROM groups g))`;

/** Columns of a call as the flag CTEs use it; `good` = ok and not empty (SPEC §2.2 first-call success). */
const CALL_COLUMNS = "project_id, session_id, client_name, tool_name, started_at_ms, duration_ms, good, args_hash, call_seq";

/**
 * `old_calls`: the calls of the loaded state rows (the span, and the nearest row on each side),
 * for the retry flags only those of the (session, client, tool) sequences of the chunk's calls
 * (`new_tools`: no other call's flags can change); `all_calls`: the same with the chunk's calls. State elements are
 * [call_seq, tool_name, started_at_ms, duration_ms, outcome, response_bytes, is_empty, args_hash].
 */
const loadedCtes = (sequence: "tool" | "session") => `${spansCtes(sequence === "tool" ? ALL_FIELDS : SPAN_FIELDS)},
    loaded AS MATERIALIZED (
      SELECT cs.project_id, cs.session_id, cs.client_name, cs.calls_json FROM spans p JOIN call_state cs
        ON ${sameGroup("cs", "p")} AND cs.hour_start_ms >= p.from_ms AND cs.hour_start_ms <= p.to_ms
      UNION ALL
      SELECT cs.project_id, cs.session_id, cs.client_name, cs.calls_json FROM spans p JOIN call_state cs
        ON ${sameGroup("cs", "p")} AND cs.hour_start_ms = (
          SELECT MAX(x.hour_start_ms) FROM call_state x WHERE ${sameGroup("x", "p")} AND x.hour_start_ms < p.from_ms)
      WHERE NOT EXISTS (SELECT 1 FROM call_state y WHERE ${sameGroup("y", "p")}
        AND y.hour_start_ms >= p.from_ms AND y.hour_start_ms <= p.to_ms AND y.min_started_at_ms <= p.lo)
      UNION ALL
      SELECT cs.project_id, cs.session_id, cs.client_name, cs.calls_json FROM spans p JOIN call_state cs
        ON ${sameGroup("cs", "p")} AND cs.hour_start_ms = (
          SELECT MIN(x.hour_start_ms) FROM call_state x WHERE ${sameGroup("x", "p")} AND x.hour_start_ms > p.to_ms)
      WHERE NOT EXISTS (SELECT 1 FROM call_state y WHERE ${sameGroup("y", "p")}
        AND y.hour_start_ms >= p.from_ms AND y.hour_start_ms <= p.to_ms AND y.max_started_at_ms > p.hi)),
${sequence === "tool" ? `
    new_tools AS MATERIALIZED (SELECT DISTINCT project_id, session_id, client_name, tool_name FROM new_calls WHERE ${IN_A_SESSION}),
    old_calls AS MATERIALIZED (
      SELECT project_id, session_id, client_name, tool_name, j.value ->> 2 AS started_at_ms, j.value ->> 3 AS duration_ms,
        (j.value ->> 4 = 'ok' AND j.value ->> 6 = 0) AS good, j.value ->> 7 AS args_hash, j.value ->> 0 AS call_seq
      FROM (SELECT l.project_id, l.session_id, l.client_name, j.value ->> 1 AS tool_name, j.value
        FROM loaded l, json_each(l.calls_json) AS j) AS j
      WHERE (project_id, session_id, client_name, tool_name) IN (SELECT * FROM new_tools)),
    all_calls AS (
      SELECT ${CALL_COLUMNS} FROM old_calls
      UNION ALL
      SELECT project_id, session_id, client_name, tool_name, started_at_ms, duration_ms, (outcome = 'ok' AND is_empty = 0),
        args_hash, call_seq FROM new_calls WHERE ${IN_A_SESSION})` : `
    old_calls AS MATERIALIZED (
      SELECT l.project_id, l.session_id, l.client_name, j.value ->> 1 AS tool_name, j.value ->> 2 AS started_at_ms,
        j.value ->> 0 AS call_seq
      FROM loaded l, json_each(l.calls_json) AS j),
    all_calls AS (
      SELECT project_id, session_id, client_name, tool_name, started_at_ms, call_seq FROM old_calls
      UNION ALL
      SELECT project_id, session_id, client_name, tool_name, started_at_ms, call_seq FROM new_calls WHERE ${IN_A_SESSION})`}`;

const TOOL_SEQUENCE = "PARTITION BY project_id, session_id, client_name, tool_name ORDER BY started_at_ms, call_seq";
const SESSION_SEQUENCE = "PARTITION BY project_id, session_id, client_name ORDER BY started_at_ms, call_seq";

/**
 * SPEC §2.2 contributions of every call of `calls` (a CTE name) to the hour rows, times `sign`
 * (+1 with the chunk, −1 without it): a call is a retry when its predecessor ended 0–30 s before it
 * with another args_hash; it was retried when its successor is a retry of it (one window, both
 * neighbours); a call that is not a retry starts a chain, which counts as first-call ok when the
 * call is ok, not empty and not retried.
 */
const retryContributions = (calls: string, sign: 1 | -1) => `SELECT project_id, hour_start_ms, tool_name, client_name,
        ${sign} * SUM(is_retry) AS retries, ${sign} * SUM(1 - is_retry) AS first_call_attempts,
        ${sign} * SUM((1 - is_retry) * good * (1 - was_retried)) AS first_call_ok
      FROM (
        SELECT project_id, ${hourStartSql("started_at_ms")} AS hour_start_ms, tool_name, client_name, good,
          COALESCE((${retryGapSql("p_started_at_ms", "p_duration_ms", "started_at_ms")}) AND p_args_hash <> args_hash, 0) AS is_retry,
          COALESCE((${retryGapSql("started_at_ms", "duration_ms", "n_started_at_ms")}) AND n_args_hash <> args_hash, 0) AS was_retried
        FROM (SELECT ${CALL_COLUMNS}, LAG(started_at_ms) OVER w AS p_started_at_ms, LAG(duration_ms) OVER w AS p_duration_ms,
            LAG(args_hash) OVER w AS p_args_hash, LEAD(started_at_ms) OVER w AS n_started_at_ms, LEAD(args_hash) OVER w AS n_args_hash
          FROM ${calls} WINDOW w AS (${TOOL_SEQUENCE})))
      GROUP BY project_id, hour_start_ms, tool_name, client_name`;

/** Two sparse JSON histograms {"<bucket>": count} added key by key, keys in bucket order. */
const mergeHistograms = (stored: string, added: string) => `CASE WHEN ${added} = '{}' THEN ${stored} ELSE (
      SELECT json_group_object(key, calls) FROM (
        SELECT key, SUM(value) AS calls FROM (
          SELECT key, value FROM json_each(${stored}) UNION ALL SELECT key, value FROM json_each(${added}))
        GROUP BY key ORDER BY CAST(key AS INTEGER))) END`;

/**
 * The chunk's change to each hour row it touches (one row per project, hour, tool and client, with
 * the new calls' latency buckets as a JSON object, SPEC §2.3): the new calls' outcomes and sums,
 * and the difference of the retry figures with and without the chunk.
 */
const DELTAS_CTES = `WITH ${loadedCtes("tool")},
    buckets AS MATERIALIZED (
      SELECT project_id, ${hourStartSql("started_at_ms")} AS hour_start_ms, tool_name, client_name, duration_bucket,
        COUNT(*) AS calls, SUM(outcome = 'ok') AS ok, SUM(outcome = 'ok' AND is_empty = 1) AS empty,
        SUM(outcome = 'bad_args') AS bad_args, SUM(outcome = 'tool_error') AS tool_error, SUM(outcome = 'crashed') AS crashed,
        SUM(response_bytes) AS response_bytes_sum, SUM(duration_ms) AS duration_ms_sum,
        SUM(session_id = '') AS calls_without_session,
        SUM(session_id = '' AND outcome = 'ok' AND is_empty = 0) AS sessionless_good
      FROM new_calls GROUP BY project_id, hour_start_ms, tool_name, client_name, duration_bucket),
    histograms AS (
      SELECT project_id, hour_start_ms, tool_name, client_name,
        json_group_object(CAST(duration_bucket AS TEXT), calls ORDER BY duration_bucket) AS histogram
      FROM buckets GROUP BY project_id, hour_start_ms, tool_name, client_name),
    changes AS (
      -- A call without a session is a chain of one: an attempt, ok when the call is ok and not empty.
      SELECT project_id, hour_start_ms, tool_name, client_name, calls, ok, empty, bad_args, tool_error, crashed,
        response_bytes_sum, duration_ms_sum, 0 AS retries, calls_without_session AS first_call_attempts,
        sessionless_good AS first_call_ok, calls_without_session
      FROM buckets
      UNION ALL
      SELECT project_id, hour_start_ms, tool_name, client_name, 0, 0, 0, 0, 0, 0, 0, 0, retries, first_call_attempts, first_call_ok, 0
      FROM (${retryContributions("all_calls", 1)})
      UNION ALL
      SELECT project_id, hour_start_ms, tool_name, client_name, 0, 0, 0, 0, 0, 0, 0, 0, retries, first_call_attempts, first_call_ok, 0
      FROM (${retryContributions("old_calls", -1)})),
    deltas AS MATERIALIZED (
      SELECT d.*, COALESCE(h.histogram, '{}') AS duration_histogram_json FROM (
        SELECT project_id, hour_start_ms, tool_name, client_name,
          ${COUNTERS.map((c) => `SUM(${c}) AS ${c}`).join(", ")}
        FROM changes GROUP BY project_id, hour_start_ms, tool_name, client_name
      ) AS d LEFT JOIN histograms h USING (project_id, hour_start_ms, tool_name, client_name)
      WHERE d.calls <> 0 OR d.retries <> 0 OR d.first_call_attempts <> 0 OR d.first_call_ok <> 0)`;

export const CALL_CHUNK_SQL = {
  // Each call contributes to the counter row of its hour, tool and client (SPEC §2.1–2.3): a chain
  // counts in its first call's hour and client and a retry in its own (SPEC §2.2), both the hour
  // and client of the call carrying the flag. The histogram is merged in the same upsert: bucket
  // counts added key by key, in bucket order. The day rows follow by trigger (migration 0013: a
  // changed hour row adds its change to its day row).
  applyHourDeltas: `INSERT INTO tool_hour_metrics (project_id, hour_start_ms, tool_name, client_name, ${COUNTER_COLUMNS}, duration_histogram_json)
    ${DELTAS_CTES}
    SELECT project_id, hour_start_ms, tool_name, client_name, ${COUNTER_COLUMNS}, duration_histogram_json FROM deltas WHERE true
    ON CONFLICT (project_id, hour_start_ms, tool_name, client_name) DO UPDATE SET ${ADD_COUNTERS},
      duration_histogram_json = ${mergeHistograms("tool_hour_metrics.duration_histogram_json", "excluded.duration_histogram_json")}`,

  // Pairs (SPEC §2.4) change by the difference between each loaded call's next tool in its
  // (session, client) sequence with the chunk and without it, counted on the call's day, in the
  // (day, client) row's JSON object (migration 0019): one row written per (day, client) touched,
  // counts added key by key, a pair that drops to 0 removed from the object.
  applyPairDeltas: `INSERT INTO pair_days (project_id, day_start_ms, client_name, pairs_json)
    WITH ${loadedCtes("session")},
    nexts AS (
      SELECT project_id, started_at_ms, client_name, tool_name, LEAD(tool_name) OVER (${SESSION_SEQUENCE}) AS next_tool, 1 AS delta FROM all_calls
      UNION ALL
      SELECT project_id, started_at_ms, client_name, tool_name, LEAD(tool_name) OVER (${SESSION_SEQUENCE}), -1 FROM old_calls),
    pair_deltas AS (
      SELECT project_id, ${dayStartSql("started_at_ms")} AS day_start_ms, client_name, json_array(tool_name, next_tool) AS pair, SUM(delta) AS delta
      FROM nexts WHERE next_tool IS NOT NULL AND next_tool <> tool_name
      GROUP BY project_id, day_start_ms, client_name, tool_name, next_tool HAVING SUM(delta) <> 0)
    SELECT project_id, day_start_ms, client_name, json_group_object(pair, delta ORDER BY pair) FROM pair_deltas
    GROUP BY project_id, day_start_ms, client_name
    ON CONFLICT (project_id, day_start_ms, client_name) DO UPDATE SET pairs_json = (
      SELECT COALESCE(json_group_object(key, n ORDER BY key), '{}') FROM (
        SELECT key, SUM(value) AS n FROM (
          SELECT key, value FROM json_each(pair_days.pairs_json) UNION ALL SELECT key, value FROM json_each(excluded.pairs_json))
        GROUP BY key HAVING SUM(value) <> 0))`,

  dropEmptyPairs: `DELETE FROM pair_days WHERE pairs_json = '{}'`,

  // SPEC §2.4 sessions, folded in here (ingest writes no session row): first/last seen over the
  // calls' starts (and, in the startups chunk, the startups' receive times), the client of the
  // latest (a tie goes to the one folded in later, i.e. received later), calls and response bytes,
  // added in the transaction that folds the calls in, so each call is added exactly once.
  addSessionCounters: `INSERT INTO sessions (project_id, session_id, first_seen_ms, last_seen_ms, client_name, calls, response_bytes_sum)
    WITH ${newCallsCtes(["session_id", "client_name", "started_at_ms", "response_bytes"])}
    SELECT project_id, session_id, MIN(started_at_ms), MAX(started_at_ms), MAX(CASE WHEN latest = 1 THEN client_name END),
      COUNT(*), SUM(response_bytes)
    FROM (SELECT project_id, session_id, client_name, started_at_ms, response_bytes,
        ROW_NUMBER() OVER (PARTITION BY project_id, session_id ORDER BY started_at_ms DESC, call_seq DESC) AS latest
      FROM new_calls WHERE ${IN_A_SESSION})
    GROUP BY project_id, session_id
    ON CONFLICT (project_id, session_id) DO UPDATE SET
      client_name = CASE WHEN excluded.last_seen_ms >= sessions.last_seen_ms THEN excluded.client_name ELSE sessions.client_name END,
      first_seen_ms = MIN(sessions.first_seen_ms, excluded.first_seen_ms),
      last_seen_ms = MAX(sessions.last_seen_ms, excluded.last_seen_ms),
      calls = calls + excluded.calls, response_bytes_sum = response_bytes_sum + excluded.response_bytes_sum`,

  // Also reports the chunk (read before its requests are deleted): its new calls, and whether
  // requests are left waiting.
  report: `WITH taken AS MATERIALIZED (${TAKEN_BATCHES})
    SELECT (SELECT COALESCE(SUM(c.call_count), 0) FROM taken t JOIN call_batches c ON c.batch_seq = t.batch_seq) AS new_calls,
      (SELECT COUNT(*) FROM call_batches) > (SELECT COUNT(*) FROM taken) AS more`,

  // The calls join their (session, client, hour) rows: appended to the JSON array (its order does
  // not matter; the flag CTEs sort), with the row's longest duration for the spans.
  appendCalls: `INSERT INTO call_state (project_id, session_id, client_name, hour_start_ms, max_duration_ms, min_started_at_ms,
      max_started_at_ms, call_count, calls_json)
    WITH ${newCallsCtes(BATCH_FIELDS.filter((f) => f !== "duration_bucket"))}
    SELECT project_id, session_id, client_name, ${hourStartSql("started_at_ms")} AS hour_start_ms, MAX(duration_ms),
      MIN(started_at_ms), MAX(started_at_ms), COUNT(*),
      json_group_array(json_array(call_seq, tool_name, started_at_ms, duration_ms, outcome, response_bytes, is_empty, args_hash) ORDER BY call_seq)
    FROM new_calls WHERE ${IN_A_SESSION} GROUP BY project_id, session_id, client_name, hour_start_ms
    ON CONFLICT (project_id, session_id, client_name, hour_start_ms) DO UPDATE SET
      max_duration_ms = MAX(max_duration_ms, excluded.max_duration_ms), call_count = call_count + excluded.call_count,
      min_started_at_ms = MIN(min_started_at_ms, excluded.min_started_at_ms),
      max_started_at_ms = MAX(max_started_at_ms, excluded.max_started_at_ms),
      calls_json = substr(calls_json, 1, length(calls_json) - 1) || ',' || substr(excluded.calls_json, 2)`,

  advanceCallSeq: `INSERT INTO rollup_state (name, value)
    WITH taken AS (${TAKEN_BATCHES})
    SELECT '${CALLS_WATERMARK}', ${stateValueSql(CALLS_WATERMARK)} + SUM(c.call_count)
    FROM taken t JOIN call_batches c ON c.batch_seq = t.batch_seq HAVING COUNT(*) > 0
    ON CONFLICT (name) DO UPDATE SET value = excluded.value`,

  deleteTakenBatches: `DELETE FROM call_batches WHERE batch_seq IN (SELECT batch_seq FROM (${TAKEN_BATCHES}))`,
} as const;

export type CallChunkReport = { new_calls: number; more: number };

/** The statements of one calls chunk, in order; run them as one `db.batch()`. */
export function callChunkStatements(db: D1Database, chunkCalls: number): D1PreparedStatement[] {
  const order = [
    "applyHourDeltas", "applyPairDeltas", "dropEmptyPairs", "addSessionCounters",
    "report", "appendCalls", "advanceCallSeq", "deleteTakenBatches",
  ] as const satisfies readonly (keyof typeof CALL_CHUNK_SQL)[];
  return order.map((name) => {
    const sql = CALL_CHUNK_SQL[name];
    return sql.includes("?1") ? db.prepare(sql).bind(chunkCalls) : db.prepare(sql);
  });
}

/** Statements one calls chunk costs against the per-invocation query budget. */
export const CALL_CHUNK_STATEMENTS = 8;
/** Position of the report statement in the chunk's batch. */
const REPORT_INDEX = 4;

/** Runs one calls chunk; returns what it did (new_calls 0 when there was nothing to fold in). */
export async function rollupCallChunk(db: D1Database, chunkCalls: number): Promise<CallChunkReport> {
  const results = await db.batch(callChunkStatements(db, chunkCalls));
  const report = results[REPORT_INDEX]?.results?.[0] as CallChunkReport | undefined;
  if (!report) throw new Error("rollup: calls chunk returned no report");
  return report;
}
