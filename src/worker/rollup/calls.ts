// Folds one chunk of new calls into the hour/day counters, the tool pairs and the session counters
// (SPEC §2.1–2.4), as ONE D1 batch (one transaction): a chunk applies exactly once or not at all, and
// running it again finds no call.
//
// Calls wait in `call_batches` rows (one per request, migration 0025) and are appended to
// `call_state`, one JSON row per (project, session, client, UTC hour): D1 bills rows, not bytes.
// Every figure is a per-call flag of the call's neighbours, so the chunk loads the state rows that
// can hold a neighbour whose flag a new call changes, derives their flags with window functions
// without and with the chunk, and adds the difference (calls whose flags did not change cancel out,
// so do the edges of the loaded span). Why that span suffices: "The span a chunk loads" in
// docs/metrics.md. The first statement (CHUNK_SELECTION_SQL) bounds the chunk before any JSON is read.
import { dayStartSql, hourStartSql } from "../time.ts";
import { MAX_RETRY_REACH_MS, flagReachSql, isRetryOfSql } from "../retry-rule.ts";
import { CALLS_CHUNK, INGEST_EPOCH, nextCallSeqSql, stateValueSql } from "../db/rollup-state.ts";
import { CALL_BATCH_CALL, CALL_STATE_CALL, CHUNK_SPAN, PAIR_KEY, tupleArraySql, tupleField } from "../db/tuples.ts";
import { COUNTER_NAMES } from "../metrics/counters.ts";
import { FOLDABLE, decideScope, scopeParams, type RunScope } from "./scope.ts";
import { columnsByName, namedStatement } from "../db/named-sql.ts";

/**
 * The counter columns an hour row's change carries: the one counter list (metrics/counters.ts). The
 * `buckets` and `changes` CTEs below compute each by name; a counter added to the list and not
 * computed there makes every calls chunk fail at once (the rollup tests), never count silently 0.
 */
const COUNTERS = COUNTER_NAMES;

/**
 * A call with an empty session_id has no session (SPEC §2.2): it is a chain of its own, never a
 * retry and never retried, in no session and no pair, and costs no per-session storage. Only calls
 * with a session enter the spans, call_state, the pairs and the sessions.
 */
const IN_A_SESSION = "session_id <> ''";
const COUNTER_COLUMNS = COUNTERS.join(", ");
const ADD_COUNTERS = COUNTERS.map((c) => `${c} = ${c} + excluded.${c}`).join(", ");

/**
 * A row the chunk may take: it still has calls, and it is closed — opened before the current ingest
 * epoch, which run.ts advanced before this chunk, so no request can append to it any more
 * (migration 0025). NULL epochs are rows stored before 0025.
 */
export const WAITING_CLOSED = `call_count > 0 AND epoch IS NOT ${stateValueSql(INGEST_EPOCH)}`;

/** The chunk `takeChunk` chose (a JSON object in rollup_state), read by every later statement of the batch. */
const chunkSql = `(SELECT value FROM rollup_state WHERE name = '${CALLS_CHUNK}')`;

/**
 * The requests of the chunk, with their calls and how many calls the chunk's earlier requests (by
 * batch_seq) hold: `call_count` is each row's number of calls, the same count the chunk's `seq`
 * advances by (nextCallSeqSql).
 */
const TAKEN_BATCHES = `SELECT b.batch_seq, b.project_id, b.received_at_ms, b.call_count, b.calls_json,
        (${chunkSql} ->> '$.seq') + SUM(b.call_count) OVER (ORDER BY b.batch_seq ROWS UNBOUNDED PRECEDING) - b.call_count AS seq_before
      FROM json_each(${chunkSql}, '$.batches') AS t JOIN call_batches b ON b.batch_seq = t.value`;

/** The fields of a call in a `call_batches` row (db/tuples.ts, written by db/raw-writes.ts). */
const BATCH_FIELDS = CALL_BATCH_CALL;
type BatchField = (typeof BATCH_FIELDS)[number];
/** SQL reading a field of a `call_batches` call (`j.value` by default). */
const batchField = (name: BatchField, json = "j.value") => tupleField(CALL_BATCH_CALL, name, json);
/** SQL reading a field of a `call_state` call (db/tuples.ts). */
const stateField = (name: (typeof CALL_STATE_CALL)[number], json = "j.value") => tupleField(CALL_STATE_CALL, name, json);
/** SQL reading a field of a chunk span. */
const spanField = (name: (typeof CHUNK_SPAN)[number]) => tupleField(CHUNK_SPAN, name, "s.value");

/**
 * `new_calls`: the chunk's calls, numbered in receive order above every number handed out before
 * (the chunk's `seq`, nextCallSeqSql), so each statement of the batch derives the same rows; each
 * extracts only the fields it reads. A call's number is its place in (batch_seq, position in the
 * request) order, which needs no sort of the chunk's calls. `jsonb_each` rather than `json_each`
 * wherever the rollup reads calls out of a JSON array: every field's `->>` then reads the binary
 * form instead of parsing the call's text again (faster, the same values).
 */
const newCallsCtes = (fields: readonly BatchField[]) => `taken AS MATERIALIZED (${TAKEN_BATCHES}),
    new_calls AS MATERIALIZED (
      SELECT t.project_id, ${fields.map((f) => `${batchField(f)} AS ${f}`).join(", ")},
        t.seq_before + j.key + 1 AS call_seq
      FROM taken t, jsonb_each(t.calls_json) AS j)`;
const ALL_FIELDS = BATCH_FIELDS;
/** What the pairs need of a call. */
const SPAN_FIELDS = ["session_id", "client_name", "tool_name", "started_at_ms"] as const satisfies readonly BatchField[];

const sameGroup = (a: string, b: string) =>
  `${a}.project_id = ${b}.project_id AND ${a}.session_id = ${b}.session_id AND ${a}.client_name = ${b}.client_name`;

/** What one range scan tells of a cluster's state rows (\`near\` in the chunk selection). */
const CLUSTER_NEAR = ["max_duration_ms", "own_before", "own_after", "row_before", "row_after"] as const;
const near = (name: (typeof CLUSTER_NEAR)[number], json = "cl.near") => tupleField(CLUSTER_NEAR, name, json);
/** One side of a cluster (nearSideSql). */
const NEAR_SIDE = ["near", "near_calls", "far"] as const;
const side = (name: (typeof NEAR_SIDE)[number], json: string) => tupleField(NEAR_SIDE, name, json);

/** The nearest state row of a cluster's (session, client) before (after) its hour, at any distance (pairs). */
const nearestRowSql = (side: "before" | "after", cl = "cl") =>
  `(SELECT ${side === "before" ? "MAX" : "MIN"}(x.hour_start_ms) FROM call_state x WHERE ${sameGroup("x", cl)}
        AND x.hour_start_ms ${side === "before" ? "<" : ">"} ${cl}.h)`;

/**
 * One side of a cluster, over the state rows between its hour and its time reach, nearest first,
 * with the running count of their calls: `[near, near_calls, far]` — the farthest hour and the calls
 * of the rows within :near_calls calls (the nearest row always), and whether rows lie beyond them in reach.
 */
const nearSideSql = (which: "before" | "after") => {
  const order = `x.hour_start_ms ${which === "before" ? "DESC" : "ASC"}`;
  return `(SELECT ${tupleArraySql(NEAR_SIDE, {
          near: `${which === "before" ? "MIN" : "MAX"}(hour_start_ms) FILTER (WHERE kept)`, near_calls: "MAX(running) FILTER (WHERE kept)",
          far: "COUNT(*) > COALESCE(SUM(kept), 0)" })}
      FROM (SELECT hour_start_ms, running, running <= :near_calls OR n = 1 AS kept FROM (
        SELECT x.hour_start_ms, SUM(x.call_count) OVER (ORDER BY ${order} ROWS UNBOUNDED PRECEDING) AS running,
          ROW_NUMBER() OVER (ORDER BY ${order}) AS n
        FROM call_state x WHERE ${sameGroup("x", "cl")} AND ${which === "before"
          ? "x.hour_start_ms < cl.h AND x.hour_start_ms >= cl.wide_from"
          : "x.hour_start_ms > cl.h AND x.hour_start_ms <= cl.wide_to"})))`;
};

/** A cluster's side is short when one of its tools has fewer than 2 old calls in its near rows on that side. */
const shortSideSql = (before: 0 | 1) => `EXISTS (SELECT 1 FROM cluster_tools t
        LEFT JOIN near_counts c ON ${sameGroup("c", "t")} AND c.h = t.h AND c.before = ${before} AND c.tool_name = t.tool_name
        WHERE ${sameGroup("t", "rc")} AND t.h = rc.h AND COALESCE(c.n, 0) < 2)`;

/**
 * Whose durations set a cluster's reach (the longest duration among its new calls and these rows'):
 * a new call's predecessor and that one's predecessor start at most one retry reach each before it,
 * so their rows are within two longest reaches before the cluster; its successor, whose own
 * successor decides its first-call success, within one after it (retry-rule.ts).
 */
export const DURATIONS_BEFORE_MS = 2 * MAX_RETRY_REACH_MS;
export const DURATIONS_AFTER_MS = MAX_RETRY_REACH_MS;

/**
 * How many of the oldest waiting requests take turns (their small columns only are read): a
 * project's backlog longer than this hides newer requests of the others until it shrinks.
 */
export const TURN_WINDOW_REQUESTS = 5_000;

/** What each candidate request costs the chunk (`costs`: its calls and loaded rows' calls, its spans), by name. */
const COST_COLUMNS = ["k", "touched", "spans"] as const;

export const CHUNK_SELECTION_SQL =
  /**
   * Chooses the chunk and writes it to rollup_state (`calls_chunk`: the requests, the state rows to
   * load around them, the estimate) for the statements after it; returns it as the chunk's report.
   *
   * Order (one project never holds up the others): the oldest TURN_WINDOW_REQUESTS waiting requests (of projects not
   * being recomputed), taken by turns —
   * every project's oldest request first, then every project's second, and so on — the project
   * that led the previous chunk (its `leader`, kept in the same row across runs) last within a turn. A project's own requests keep their
   * receive order, which is all the SPEC §2.2 tie-break compares (calls of one session).
   *
   * Bound (no transaction holds the database long, whatever a tenant sends): requests are taken in
   * that order while the calls before each are fewer than :chunk_calls, the rows of work so far — new calls
   * plus the calls of every state row the chunk will load, from `call_count`, before any state JSON
   * is read — are at most :chunk_touched_calls, and the spans at most :chunk_spans; the first request is always taken so the
   * rollup always advances. At most :chunk_spans requests are candidates: what this statement reads grows
   * with them (~90 rows each, whatever their size), and each request of a session adds a span
   * unless it shares one.
   *
   * Spans: per cluster (project, session, client, UTC hour of the new calls) the state rows the
   * flags need (see the file header): the time reach (lo − 2 (reach + 30 s) to hi + 2 (reach + 30 s)), or,
   * when that holds more rows than the nearest ones within :near_calls calls on a side and each tool of the
   * cluster has at least 2 old calls in those near rows, only those (the tool's predecessor and its
   * predecessor are then loaded, and every call between them and the new ones: the flags that can
   * change are exact whatever the durations); and for the pairs the nearest row on each side unless
   * the cluster's own row already holds a call before (after) the new ones. Reading
   * the near rows' JSON for that check is itself bounded: clusters are checked in chunk order while
   * the near rows' calls add up to at most :chunk_touched_calls, the others take the time reach. Spans computed from
   * the candidates hold every span the taken requests alone need (a later request only widens a
   * cluster, adds tools, lengthens durations), and loading more rows never changes a difference.
   */
  `INSERT INTO rollup_state (name, value)
    WITH pending AS MATERIALIZED (
      SELECT batch_seq, project_id, call_count, ROW_NUMBER() OVER (PARTITION BY project_id ORDER BY batch_seq) AS turn
      FROM (SELECT batch_seq, project_id, call_count FROM call_batches WHERE ${WAITING_CLOSED} AND ${FOLDABLE} ORDER BY batch_seq LIMIT ${TURN_WINDOW_REQUESTS})),
    ordered AS MATERIALIZED (
      SELECT batch_seq, project_id, call_count, ROW_NUMBER() OVER w AS k, SUM(call_count) OVER w - call_count AS calls_before
      FROM pending WINDOW w AS (ORDER BY turn, project_id IS (${chunkSql} ->> '$.leader'), batch_seq ROWS UNBOUNDED PRECEDING)),
    candidates AS MATERIALIZED (
      SELECT o.k, o.batch_seq, o.project_id, o.call_count, b.calls_json FROM ordered o JOIN call_batches b ON b.batch_seq = o.batch_seq
      WHERE o.calls_before < :chunk_calls AND o.k <= :chunk_spans),
    cand_calls AS MATERIALIZED (
      SELECT c.k, c.project_id, ${batchField("session_id")} AS session_id, ${batchField("client_name")} AS client_name,
        ${batchField("tool_name")} AS tool_name, ${hourStartSql(batchField("started_at_ms"))} AS h,
        ${batchField("started_at_ms")} AS started_at_ms, ${batchField("duration_ms")} AS duration_ms
      FROM candidates c, jsonb_each(c.calls_json) AS j),
    clusters AS MATERIALIZED (
      SELECT project_id, session_id, client_name, h, MIN(k) AS k, MIN(started_at_ms) AS lo, MAX(started_at_ms) AS hi,
        MAX(duration_ms) AS dur
      FROM cand_calls WHERE ${IN_A_SESSION} GROUP BY project_id, session_id, client_name, h),
    cluster_tools AS MATERIALIZED (SELECT DISTINCT project_id, session_id, client_name, h, tool_name FROM cand_calls WHERE ${IN_A_SESSION}),
    around AS MATERIALIZED (
      SELECT c.*, (SELECT ${tupleArraySql(CLUSTER_NEAR, {
          max_duration_ms: "MAX(cs.max_duration_ms)",
          own_before: "MAX(cs.min_started_at_ms <= c.lo) FILTER (WHERE cs.hour_start_ms = c.h)",
          own_after: "MAX(cs.max_started_at_ms > c.hi) FILTER (WHERE cs.hour_start_ms = c.h)",
          row_before: "MAX(cs.hour_start_ms) FILTER (WHERE cs.hour_start_ms < c.h)",
          row_after: "MIN(cs.hour_start_ms) FILTER (WHERE cs.hour_start_ms > c.h)" })}
        FROM call_state cs WHERE ${sameGroup("cs", "c")}
          AND cs.hour_start_ms >= ${hourStartSql(`c.lo - ${DURATIONS_BEFORE_MS}`)} AND cs.hour_start_ms <= c.hi + ${DURATIONS_AFTER_MS}) AS near
      FROM clusters c),
    reach_of AS MATERIALIZED (
      SELECT cl.*, ${hourStartSql(`cl.lo - ${flagReachSql("cl.reach")}`)} AS wide_from,
        ${hourStartSql(`cl.hi + ${flagReachSql("cl.reach")}`)} AS wide_to,
        ${near("own_before")} AS own_before, ${near("own_after")} AS own_after
      FROM (SELECT c.*, MAX(c.dur, COALESCE(${near("max_duration_ms", "c.near")}, 0)) AS reach FROM around c) AS cl),
    -- A side is read only when rows can lie in it (\`near\` holds the nearest row before within reach).
    sides AS MATERIALIZED (
      SELECT cl.*, CASE WHEN cl.wide_from < cl.h AND ${near("row_before")} IS NOT NULL THEN ${nearSideSql("before")} END AS before_side,
        CASE WHEN cl.wide_to > cl.h THEN ${nearSideSql("after")} END AS after_side
      FROM reach_of cl),
    reaches AS MATERIALIZED (
      SELECT rc.*, SUM(before_far * COALESCE(before_near_calls, 0) + after_far * COALESCE(after_near_calls, 0)) OVER (
          ORDER BY k, project_id, session_id, client_name, h ROWS UNBOUNDED PRECEDING) <= :chunk_touched_calls AS checked
      FROM (
        SELECT n.*, ${side("near", "before_side")} AS before_near, ${side("near_calls", "before_side")} AS before_near_calls, COALESCE(${side("far", "before_side")}, 0) AS before_far,
          ${side("near", "after_side")} AS after_near, ${side("near_calls", "after_side")} AS after_near_calls, COALESCE(${side("far", "after_side")}, 0) AS after_far
        FROM sides n) AS rc),
    near_rows AS MATERIALIZED (
      SELECT rc.project_id, rc.session_id, rc.client_name, rc.h, 1 AS before, x.calls_json FROM reaches rc JOIN call_state x
        ON ${sameGroup("x", "rc")} AND x.hour_start_ms >= rc.before_near AND x.hour_start_ms < rc.h
      WHERE rc.checked AND rc.before_far
      UNION ALL
      SELECT rc.project_id, rc.session_id, rc.client_name, rc.h, 0, x.calls_json FROM reaches rc JOIN call_state x
        ON ${sameGroup("x", "rc")} AND x.hour_start_ms > rc.h AND x.hour_start_ms <= rc.after_near
      WHERE rc.checked AND rc.after_far),
    near_counts AS MATERIALIZED (
      SELECT n.project_id, n.session_id, n.client_name, n.h, n.before, ${stateField("tool_name")} AS tool_name, COUNT(*) AS n
      FROM near_rows n, jsonb_each(n.calls_json) AS j
      GROUP BY n.project_id, n.session_id, n.client_name, n.h, n.before, tool_name),
    spans AS MATERIALIZED (
      SELECT project_id, session_id, client_name, k,
        MIN(CASE WHEN own_before THEN h ELSE COALESCE(${near("row_before", "near")}, ${nearestRowSql("before", "rc")}, h) END, CASE
          WHEN NOT before_far THEN wide_from
          WHEN checked AND before_near IS NOT NULL AND NOT ${shortSideSql(1)} THEN before_near
          ELSE wide_from END) AS from_ms,
        MAX(CASE WHEN own_after THEN h ELSE COALESCE(${near("row_after", "near")}, ${nearestRowSql("after", "rc")}, h) END, CASE
          WHEN NOT after_far THEN wide_to
          WHEN checked AND after_near IS NOT NULL AND NOT ${shortSideSql(0)} THEN after_near
          ELSE wide_to END) AS to_ms,
        lo - ${flagReachSql("reach")} AS reach_from_ms, hi + ${flagReachSql("reach")} AS reach_to_ms,
        MIN(lo) OVER (PARTITION BY project_id, session_id, client_name) AS group_lo_ms
      FROM reaches rc),
    covered AS MATERIALIZED (
      SELECT MIN(s.k) AS k, x.call_count FROM spans s JOIN call_state x
        ON ${sameGroup("x", "s")} AND x.hour_start_ms >= s.from_ms AND x.hour_start_ms <= s.to_ms
      GROUP BY x.project_id, x.session_id, x.client_name, x.hour_start_ms),
    costs AS (
      SELECT k, SUM(touched) AS touched, SUM(spans) AS spans FROM (
        SELECT ${columnsByName(COST_COLUMNS, { k: "k", touched: "call_count" }, "0")} FROM candidates
        UNION ALL SELECT ${columnsByName(COST_COLUMNS, { k: "k", touched: "call_count" }, "0")} FROM covered
        UNION ALL SELECT ${columnsByName(COST_COLUMNS, { k: "k", spans: "1" }, "0")} FROM spans)
      GROUP BY k),
    running AS MATERIALIZED (
      SELECT k, SUM(touched) OVER w AS touched, SUM(spans) OVER w AS spans FROM costs WINDOW w AS (ORDER BY k ROWS UNBOUNDED PRECEDING)),
    chosen AS MATERIALIZED (
      SELECT c.k, c.batch_seq, c.project_id, c.call_count, rn.touched FROM candidates c JOIN running rn ON rn.k = c.k
      WHERE c.k = 1 OR (rn.touched <= :chunk_touched_calls AND rn.spans <= :chunk_spans))
    SELECT '${CALLS_CHUNK}', json_object(
      'batches', json(COALESCE((SELECT json_group_array(batch_seq) FROM chosen), '[]')),
      'spans', json(COALESCE((SELECT json_group_array(${tupleArraySql(CHUNK_SPAN)})
        FROM spans WHERE k <= (SELECT MAX(k) FROM chosen)), '[]')),
      'seq', ${nextCallSeqSql()},
      'calls', (SELECT COALESCE(SUM(call_count), 0) FROM chosen),
      'touched', (SELECT COALESCE(MAX(touched), 0) FROM chosen),
      -- Counted up to one past the chosen ones only: a backlog of a million requests is not read to say "more".
      'more', (SELECT COUNT(*) FROM (SELECT 1 FROM call_batches WHERE ${WAITING_CLOSED} AND ${FOLDABLE}
        LIMIT (SELECT COUNT(*) FROM chosen) + 1)) > (SELECT COUNT(*) FROM chosen),
      'leader', (SELECT project_id FROM chosen WHERE k = 1))
    WHERE true
    ON CONFLICT (name) DO UPDATE SET value = excluded.value
    RETURNING value`;

/** Columns of a call as the flag CTEs use it; `good` = ok and not empty (SPEC §2.2 first-call success). */
export const CALL_COLUMNS = "project_id, session_id, client_name, tool_name, started_at_ms, duration_ms, good, args_hash, call_seq";

/**
 * The calls a loaded state row contributes (`cs`, with its (session, client)'s earliest new call
 * `k.group_lo_ms`, taken over the chunk's candidate requests: no later than over its own): when
 * every call of the row comes before every new call of its (session, client) — it started no later
 * than the earliest one, whose call_seq is higher — only the two latest calls of
 * each tool (`latest_per_tool_json`, migration 0032), else all of them. Of such a row, a new call can
 * change the flags of only the latest call of its tool before it (its successor changes) and the
 * pairs of only the latest call before it; the flag of that latest call of a tool depends on its own
 * predecessor in the tool's sequence, the row's second latest call of the tool or the latest of an
 * earlier row (whose calls come before too, so its latest are loaded as well). Every other call kept
 * from such a row sees the same neighbours with and without the chunk, so its contributions cancel,
 * as those at the edges of a span do. A row without the list (written before 0032) is read whole.
 */
const LOADED_CALLS_SQL = `CASE WHEN cs.latest_per_tool_json IS NOT NULL AND cs.max_started_at_ms <= k.group_lo_ms
        THEN (SELECT json_group_array(json(cs.calls_json -> p.value)) FROM json_each(cs.latest_per_tool_json) AS p)
        ELSE cs.calls_json END`;

/**
 * `loaded`: the state rows of the chunk's spans (a row in several spans once), for the retry flags
 * only the calls of the (session, client, tool) sequences of the chunk's calls (`new_tools`: no
 * other call's flags can change); `all_calls`: the same with the chunk's calls. State elements are
 * [call_seq, tool_name, started_at_ms, duration_ms, outcome, response_bytes, is_empty, args_hash].
 */
const loadedCtes = (sequence: "tool" | "session") => `${newCallsCtes(sequence === "tool" ? ALL_FIELDS : SPAN_FIELDS)},
    spans AS MATERIALIZED (
      SELECT ${CHUNK_SPAN.map((name) => `${spanField(name)} AS ${name}`).join(", ")}
      FROM json_each(${chunkSql}, '$.spans') AS s),
    loaded_keys AS MATERIALIZED (
      SELECT cs.project_id, cs.session_id, cs.client_name, cs.hour_start_ms,
        MIN(p.reach_from_ms) AS reach_from_ms, MAX(p.reach_to_ms) AS reach_to_ms, MIN(p.group_lo_ms) AS group_lo_ms
      FROM spans p JOIN call_state cs
        ON ${sameGroup("cs", "p")} AND cs.hour_start_ms >= p.from_ms AND cs.hour_start_ms <= p.to_ms
      GROUP BY cs.project_id, cs.session_id, cs.client_name, cs.hour_start_ms),
    loaded AS MATERIALIZED (
      SELECT cs.project_id, cs.session_id, cs.client_name, ${LOADED_CALLS_SQL} AS calls_json, k.reach_from_ms, k.reach_to_ms
      FROM loaded_keys k JOIN call_state cs ON ${sameGroup("cs", "k")} AND cs.hour_start_ms = k.hour_start_ms),
${sequence === "tool" ? `
    new_tools AS MATERIALIZED (SELECT DISTINCT project_id, session_id, client_name, tool_name FROM new_calls WHERE ${IN_A_SESSION}),
    old_calls AS MATERIALIZED (
      SELECT project_id, session_id, client_name, tool_name, started_at_ms,
        ${stateField("duration_ms")} AS duration_ms, (${stateField("outcome")} = 'ok' AND ${stateField("is_empty")} = 0) AS good,
        ${stateField("args_hash")} AS args_hash, ${stateField("call_seq")} AS call_seq
      FROM (SELECT l.project_id, l.session_id, l.client_name, ${stateField("tool_name")} AS tool_name,
          ${stateField("started_at_ms")} AS started_at_ms, l.reach_from_ms, l.reach_to_ms, j.value
        FROM loaded l, jsonb_each(l.calls_json) AS j) AS j
      WHERE started_at_ms BETWEEN reach_from_ms AND reach_to_ms
        AND (project_id, session_id, client_name, tool_name) IN (SELECT * FROM new_tools)),
    all_calls AS (
      SELECT ${CALL_COLUMNS} FROM old_calls
      UNION ALL
      SELECT project_id, session_id, client_name, tool_name, started_at_ms, duration_ms, (outcome = 'ok' AND is_empty = 0),
        args_hash, call_seq FROM new_calls WHERE ${IN_A_SESSION})` : `
    old_calls AS MATERIALIZED (
      SELECT l.project_id, l.session_id, l.client_name, ${stateField("tool_name")} AS tool_name,
        ${stateField("started_at_ms")} AS started_at_ms, ${stateField("call_seq")} AS call_seq
      FROM loaded l, jsonb_each(l.calls_json) AS j),
    all_calls AS (
      SELECT project_id, session_id, client_name, tool_name, started_at_ms, call_seq FROM old_calls
      UNION ALL
      SELECT project_id, session_id, client_name, tool_name, started_at_ms, call_seq FROM new_calls WHERE ${IN_A_SESSION})`}`;

const TOOL_SEQUENCE = "PARTITION BY project_id, session_id, client_name, tool_name ORDER BY started_at_ms, call_seq";
export const SESSION_SEQUENCE = "PARTITION BY project_id, session_id, client_name ORDER BY started_at_ms, call_seq";

/** SPEC §2.2 flags of a call from its LAG (`p_…`) and LEAD (`n_…`) neighbours in its tool sequence (retry-rule.ts). */
export const IS_RETRY_SQL = isRetryOfSql(
  { startedAt: "p_started_at_ms", duration: "p_duration_ms", argsHash: "p_args_hash" }, { startedAt: "started_at_ms", argsHash: "args_hash" });
export const WAS_RETRIED_SQL = isRetryOfSql(
  { startedAt: "started_at_ms", duration: "duration_ms", argsHash: "args_hash" }, { startedAt: "n_started_at_ms", argsHash: "n_args_hash" });

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
      FROM (${callFlagsSql(calls)})
      GROUP BY project_id, hour_start_ms, tool_name, client_name`;

/**
 * Every call of `calls` (a CTE with CALL_COLUMNS) with its hour and its SPEC §2.2 flags
 * (`is_retry`, `was_retried`: 0 or 1), from its neighbours in its (session, client, tool) sequence.
 * The rollup and the recompute (recompute.ts) both derive the flags here.
 */
export const callFlagsSql = (calls: string) => `SELECT project_id, ${hourStartSql("started_at_ms")} AS hour_start_ms, tool_name, client_name,
          started_at_ms, good, COALESCE(${IS_RETRY_SQL}, 0) AS is_retry, COALESCE(${WAS_RETRIED_SQL}, 0) AS was_retried
        FROM (SELECT ${CALL_COLUMNS}, LAG(started_at_ms) OVER w AS p_started_at_ms, LAG(duration_ms) OVER w AS p_duration_ms,
            LAG(args_hash) OVER w AS p_args_hash, LEAD(started_at_ms) OVER w AS n_started_at_ms, LEAD(args_hash) OVER w AS n_args_hash
          FROM ${calls} WINDOW w AS (${TOOL_SEQUENCE}))`;

/** Two sparse JSON histograms {"<bucket>": count} added key by key, keys in bucket order. */
const mergeHistograms = (stored: string, added: string) => `CASE WHEN ${added} = '{}' THEN ${stored} ELSE (
      SELECT json_group_object(key, calls) FROM (
        SELECT key, SUM(value) AS calls FROM (
          SELECT key, value FROM json_each(${stored}) UNION ALL SELECT key, value FROM json_each(${added}))
        GROUP BY key ORDER BY CAST(key AS INTEGER))) END`;

/** The columns of a change to an hour row: its key, then every counter (the arms of `changes` line up by name). */
const HOUR_ROW_COLUMNS = ["project_id", "hour_start_ms", "tool_name", "client_name"] as const;
const CHANGE_COLUMNS = [...HOUR_ROW_COLUMNS, ...COUNTERS];
/** The counters a call's neighbours decide (retryContributions), the others its own. */
const RETRY_COUNTERS: readonly string[] = ["retries", "first_call_attempts", "first_call_ok"];
/** Each name as its own value (a column taken as it is). */
const byName = (names: readonly string[]) => Object.fromEntries(names.map((n) => [n, n]));
/** The arm of each call's own counters: a counter of the list that `buckets` does not compute fails every chunk, never counts 0. */
const OWN_CHANGES = {
  ...byName(HOUR_ROW_COLUMNS), ...byName(COUNTERS.filter((c) => !RETRY_COUNTERS.includes(c))),
  retries: "0", first_call_attempts: "calls_without_session", first_call_ok: "sessionless_good",
};
/** The arms of the retry contributions, the other counters 0. */
const RETRY_CHANGES = byName([...HOUR_ROW_COLUMNS, ...RETRY_COUNTERS]);

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
        SUM(session_id = '' AND outcome = 'ok' AND is_empty = 0) AS sessionless_good,
        SUM(args_hash = '') AS calls_without_args_hash
      FROM new_calls GROUP BY project_id, hour_start_ms, tool_name, client_name, duration_bucket),
    histograms AS (
      SELECT project_id, hour_start_ms, tool_name, client_name,
        json_group_object(CAST(duration_bucket AS TEXT), calls ORDER BY duration_bucket) AS histogram
      FROM buckets GROUP BY project_id, hour_start_ms, tool_name, client_name),
    changes AS (
      -- A call without a session is a chain of one: an attempt, ok when the call is ok and not empty.
      SELECT ${columnsByName(CHANGE_COLUMNS, OWN_CHANGES)}
      FROM buckets
      UNION ALL
      SELECT ${columnsByName(CHANGE_COLUMNS, RETRY_CHANGES, "0")}
      FROM (${retryContributions("all_calls", 1)})
      UNION ALL
      SELECT ${columnsByName(CHANGE_COLUMNS, RETRY_CHANGES, "0")}
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
      SELECT project_id, ${dayStartSql("started_at_ms")} AS day_start_ms, client_name, ${tupleArraySql(PAIR_KEY, { from_tool: "tool_name", to_tool: "next_tool" })} AS pair, SUM(delta) AS delta
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

  // The calls join their (session, client, hour) rows: appended to the JSON array (its order does
  // not matter; the flag CTEs sort), with the row's longest duration for the spans, and the
  // positions of each tool's two latest calls (LOADED_CALLS_SQL) recomputed from the row's two and
  // the new ones (a row without them, written before migration 0032, stays without).
  appendCalls: `INSERT INTO call_state (project_id, session_id, client_name, hour_start_ms, max_duration_ms, min_started_at_ms,
      max_started_at_ms, call_count, calls_json, latest_per_tool_json)
    WITH ${newCallsCtes(BATCH_FIELDS.filter((f) => f !== "duration_bucket"))}
    SELECT project_id, session_id, client_name, hour_start_ms, MAX(duration_ms),
      MIN(started_at_ms), MAX(started_at_ms), COUNT(*),
      json_group_array(${tupleArraySql(CALL_STATE_CALL)} ORDER BY call_seq),
      json_group_array(position ORDER BY position) FILTER (WHERE tool_rank <= 2)
    FROM (
      SELECT *, ROW_NUMBER() OVER (PARTITION BY project_id, session_id, client_name, hour_start_ms ORDER BY call_seq) - 1 AS position,
        ROW_NUMBER() OVER (PARTITION BY project_id, session_id, client_name, hour_start_ms, tool_name
          ORDER BY started_at_ms DESC, call_seq DESC) AS tool_rank
      FROM (SELECT *, ${hourStartSql("started_at_ms")} AS hour_start_ms FROM new_calls WHERE ${IN_A_SESSION}))
    GROUP BY project_id, session_id, client_name, hour_start_ms
    ON CONFLICT (project_id, session_id, client_name, hour_start_ms) DO UPDATE SET
      max_duration_ms = MAX(max_duration_ms, excluded.max_duration_ms), call_count = call_count + excluded.call_count,
      min_started_at_ms = MIN(min_started_at_ms, excluded.min_started_at_ms),
      max_started_at_ms = MAX(max_started_at_ms, excluded.max_started_at_ms),
      calls_json = substr(calls_json, 1, length(calls_json) - 1) || ',' || substr(excluded.calls_json, 2),
      latest_per_tool_json = CASE WHEN call_state.latest_per_tool_json IS NULL THEN NULL ELSE (
        SELECT json_group_array(position ORDER BY position) FROM (
          SELECT position, ROW_NUMBER() OVER (PARTITION BY ${stateField("tool_name", "c")}
              ORDER BY ${stateField("started_at_ms", "c")} DESC, ${stateField("call_seq", "c")} DESC) AS tool_rank
          FROM (
            SELECT p.value AS position, call_state.calls_json -> p.value AS c FROM json_each(call_state.latest_per_tool_json) AS p
            UNION ALL
            SELECT call_state.call_count + p.value, excluded.calls_json -> p.value FROM json_each(excluded.latest_per_tool_json) AS p))
        WHERE tool_rank <= 2) END`,

  // Emptied, not deleted: the row keeps its batch ids for the Idempotency-Key window (migration
  // 0025); run.ts deletes it after that. Running the chunk again finds no call in it.
  emptyTakenBatches: `UPDATE call_batches SET call_count = 0, chars = 2, calls_json = '[]'
    WHERE batch_seq IN (SELECT value FROM json_each(${chunkSql}, '$.batches'))`,
} as const;

/** What `takeChunk` chose: the requests and state rows of the chunk and what it is estimated to touch. */
export type CallChunkReport = {
  /** New calls in the chunk, and the requests they came in. */
  calls: number;
  requests: number;
  /** New calls plus the calls of the state rows the chunk loads (estimated before loading them). */
  touched: number;
  /** 1 when requests are left waiting. */
  more: number;
  /** The project whose request came first in the chunk (null when nothing was waiting). */
  leader: string | null;
  /** Rows the chunk's statements read (the sum of D1's meta.rows_read): what its transaction cost. */
  rowsRead: number;
};

export interface CallChunkBounds {
  /** New calls per chunk (the calls before the last request taken are fewer than this). */
  chunkCalls: number;
  /** Rows of work per chunk: new calls plus the calls of the state rows loaded around them. */
  chunkTouchedCalls: number;
  /** Spans per chunk (what the chunk's JSON row holds; each a (session, client, hour) of new calls). */
  chunkSpans: number;
  /** Calls of the rows on each side of a span read to find each tool's two predecessors (successors). */
  nearCalls: number;
}

/**
 * The statements of one calls chunk, in order; run them as one `db.batch()`. Requests of the projects
 * the run leaves alone wait (scope.ts: held by a move, whose requests are moved unfolded; being
 * recomputed, which nothing may change under: they are folded in once it is done).
 */
export function callChunkStatements(db: D1Database, bounds: CallChunkBounds, scope: RunScope): D1PreparedStatement[] {
  const order = [
    "applyHourDeltas", "applyPairDeltas", "dropEmptyPairs", "addSessionCounters", "appendCalls", "emptyTakenBatches",
  ] as const satisfies readonly (keyof typeof CALL_CHUNK_SQL)[];
  return [
    namedStatement(db, CHUNK_SELECTION_SQL, {
      chunk_calls: bounds.chunkCalls, chunk_touched_calls: bounds.chunkTouchedCalls, chunk_spans: bounds.chunkSpans, near_calls: bounds.nearCalls,
      ...scopeParams(scope),
    }),
    ...order.map((name) => namedStatement(db, CALL_CHUNK_SQL[name])),
  ];
}

/** Statements one calls chunk costs against the per-invocation query budget. */
export const CALL_CHUNK_STATEMENTS = 7;

/**
 * Runs one calls chunk (one transaction: a failure anywhere rolls all of it back, and the next run
 * takes the same requests again); returns what it chose (calls 0 when nothing was waiting). `scope`:
 * the run's decision (decided now for a chunk run on its own).
 */
export async function rollupCallChunk(db: D1Database, bounds: CallChunkBounds, scope?: RunScope): Promise<CallChunkReport> {
  const results = await db.batch(callChunkStatements(db, bounds, scope ?? (await decideScope(db))));
  const value = (results[0]?.results?.[0] as { value?: string } | undefined)?.value;
  if (typeof value !== "string") throw new Error("rollup: calls chunk returned no report");
  const chunk = JSON.parse(value) as Omit<CallChunkReport, "requests" | "rowsRead"> & { batches: number[] };
  const rowsRead = results.reduce((n, r) => n + (r.meta?.rows_read ?? 0), 0);
  return { calls: chunk.calls, requests: chunk.batches.length, touched: chunk.touched, more: chunk.more, leader: chunk.leader, rowsRead };
}
