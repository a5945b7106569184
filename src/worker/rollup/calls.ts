// Folds one chunk of new calls into the counters, pairs and sessions (SPEC §2.1–2.4) as ONE D1
// batch, so a chunk applies exactly once or not at all. Flags depend on neighbours, so the chunk
// loads the state rows around it and adds the difference with and without it; why that span
// suffices: "The span a chunk loads" in docs/metrics.md.
import { dayStartSql, hourStartSql } from "../time.ts";
import { MAX_RETRY_REACH_MS, flagReachSql, isRetryOfSql } from "../retry-rule.ts";
import { CALLS_CHUNK, INGEST_EPOCH, nextCallSeqSql, stateValueSql } from "../db/rollup-state.ts";
import { CALL_BATCH_CALL, CALL_STATE_CALL, CHUNK_SPAN, PAIR_KEY, tupleArraySql, tupleField } from "../db/tuples.ts";
import { COUNTER_NAMES } from "../metrics/counters.ts";
import { FOLDABLE, decideScope, scopeParams, type RunScope } from "./scope.ts";
import { columnsByName, namedStatement } from "../db/named-sql.ts";
import { addCountsSql, labelPathSql } from "../db/json-counts.ts";

/**
 * A counter added to the list but not computed in `buckets`/`changes` fails every chunk rather than
 * counting 0.
 */
const COUNTERS = COUNTER_NAMES;

/** SPEC §2.2: a call without a session is a chain of its own and costs no per-session storage. */
const IN_A_SESSION = "session_id <> ''";
const COUNTER_COLUMNS = COUNTERS.join(", ");
const ADD_COUNTERS = COUNTERS.map((c) => `${c} = ${c} + excluded.${c}`).join(", ");

/**
 * Closed rows only: run.ts advanced the ingest epoch first, so nothing can append to them
 * (migration 0025). NULL epochs predate 0025.
 */
export const WAITING_CLOSED = `call_count > 0 AND epoch IS NOT ${stateValueSql(INGEST_EPOCH)}`;

const chunkSql = `(SELECT value FROM rollup_state WHERE name = '${CALLS_CHUNK}')`;

/** `call_count` is what the chunk's `seq` advances by (nextCallSeqSql). */
const TAKEN_BATCHES = `SELECT b.batch_seq, b.project_id, b.received_at_ms, b.call_count, b.calls_json,
        (${chunkSql} ->> '$.seq') + SUM(b.call_count) OVER (ORDER BY b.batch_seq ROWS UNBOUNDED PRECEDING) - b.call_count AS seq_before
      FROM json_each(${chunkSql}, '$.batches') AS t JOIN call_batches b ON b.batch_seq = t.value`;

const BATCH_FIELDS = CALL_BATCH_CALL;
type BatchField = (typeof BATCH_FIELDS)[number];
const batchField = (name: BatchField, json = "j.value") => tupleField(CALL_BATCH_CALL, name, json);
const stateField = (name: (typeof CALL_STATE_CALL)[number], json = "j.value") => tupleField(CALL_STATE_CALL, name, json);
const spanField = (name: (typeof CHUNK_SPAN)[number]) => tupleField(CHUNK_SPAN, name, "s.value");

/**
 * Numbered above nextCallSeqSql in (batch_seq, position) order, so every statement of the batch
 * derives the same rows without a sort. `jsonb_each` so `->>` reads the binary form instead of
 * re-parsing text.
 */
const newCallsCtes = (fields: readonly BatchField[]) => `taken AS MATERIALIZED (${TAKEN_BATCHES}),
    new_calls AS MATERIALIZED (
      SELECT t.project_id, ${fields.map((f) => `${batchField(f)} AS ${f}`).join(", ")},
        t.seq_before + j.key + 1 AS call_seq
      FROM taken t, jsonb_each(t.calls_json) AS j)`;
const ALL_FIELDS = BATCH_FIELDS;
const SPAN_FIELDS = ["session_id", "client_name", "tool_name", "started_at_ms"] as const satisfies readonly BatchField[];

const sameGroup = (a: string, b: string) =>
  `${a}.project_id = ${b}.project_id AND ${a}.session_id = ${b}.session_id AND ${a}.client_name = ${b}.client_name`;

/** What one range scan tells of a cluster's state rows (\`near\` in the chunk selection). */
const CLUSTER_NEAR = ["max_duration_ms", "own_before", "own_after", "row_before", "row_after"] as const;
const near = (name: (typeof CLUSTER_NEAR)[number], json = "cl.near") => tupleField(CLUSTER_NEAR, name, json);
const NEAR_SIDE = ["near", "near_calls", "far"] as const;
const side = (name: (typeof NEAR_SIDE)[number], json: string) => tupleField(NEAR_SIDE, name, json);

/** The nearest state row of a cluster's (session, client) before (after) its hour, at any distance (pairs). */
const nearestRowSql = (side: "before" | "after", cl = "cl") =>
  `(SELECT ${side === "before" ? "MAX" : "MIN"}(x.hour_start_ms) FROM call_state x WHERE ${sameGroup("x", cl)}
        AND x.hour_start_ms ${side === "before" ? "<" : ">"} ${cl}.h)`;

/**
 * [near, near_calls, far]: the nearest rows up to :near_calls calls (always the nearest one), and
 * whether more rows lie within reach.
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
 * A predecessor and its predecessor start at most one retry reach each before a call; a successor's
 * successor decides first-call success (retry-rule.ts).
 */
export const DURATIONS_BEFORE_MS = 2 * MAX_RETRY_REACH_MS;
export const DURATIONS_AFTER_MS = MAX_RETRY_REACH_MS;

/**
 * Bounds the read; a longer backlog of one project hides the others' newer requests until it
 * shrinks.
 */
export const TURN_WINDOW_REQUESTS = 5_000;

const COST_COLUMNS = ["k", "touched", "spans"] as const;

export const CHUNK_SELECTION_SQL =
  /**
   * Turns: every project's oldest request first, then every second, the previous chunk's leader
   * last, so one project never holds up the others; a project's own requests keep receive order,
   * all SPEC §2.2 ties compare.
   * Bounds (:chunk_calls, :chunk_touched_calls, :chunk_spans) keep any transaction short whatever a
   * tenant sends; the first request is always taken so the rollup advances.
   * Spans: the time reach, or only the near rows when each tool has 2 old calls there (its
   * predecessors are then loaded); loading more rows never changes a difference.
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
 * A tool's entry in `call_state.latest_per_tool_json` (migration 0032): the positions in the row's
 * calls of its latest call and of the one before (absent when the tool has one call there). Rows
 * appended before the entries were keyed by tool hold a plain array of those positions, and
 * retention's trimmed rows `[0]`: readers take every position of either form.
 */
const LATEST_OF_TOOL = ["latest", "second"] as const;
const latestOfToolSql = (latest: string, second: string) =>
  `CASE WHEN ${second} IS NULL THEN json_array(${latest}) ELSE ${tupleArraySql(LATEST_OF_TOOL, { latest, second })} END`;

/**
 * The positions a `latest_per_tool_json` holds, of either form (LATEST_OF_TOOL): each tool's latest
 * only, or both of its two; a pass per kind, as a nested json_each would read each tool's entry
 * once more.
 */
const latestPositionsSql = (latest: string, which: "latest" | "both") => {
  const first = `SELECT CASE WHEN t.type = 'array' THEN ${tupleField(LATEST_OF_TOOL, "latest", "t.value")} ELSE t.value END AS position
          FROM json_each(${latest}) AS t`;
  if (which === "latest") return first;
  return `${first}
          UNION ALL
          SELECT ${tupleField(LATEST_OF_TOOL, "second", "t.value")} FROM json_each(${latest}) AS t
          WHERE t.type = 'array' AND ${tupleField(LATEST_OF_TOOL, "second", "t.value")} IS NOT NULL`;
};

/**
 * A row entirely before the (session, client)'s new calls can only change through each tool's two
 * latest calls (migration 0032); its other calls cancel out. Rows written before 0032 are read
 * whole. `reduced`: what is read of such a row instead.
 */
const loadedCallsSql = (reduced: string) => `CASE WHEN cs.latest_per_tool_json IS NOT NULL AND cs.max_started_at_ms <= k.group_lo_ms
        THEN (${reduced}) ELSE cs.calls_json END`;

const LOADED_CALLS_SQL = loadedCallsSql(
  `SELECT json_group_array(json(cs.calls_json -> p.position)) FROM (${latestPositionsSql("cs.latest_per_tool_json", "both")}) AS p`);

/**
 * In the session sequence (pairs) such a row can only change through its last call, the latest of
 * each tool's latest calls: the pairs among its earlier calls are the same with and without the chunk.
 */
const LOADED_SESSION_CALLS_SQL = loadedCallsSql(
  `SELECT json_array(json(c)) FROM (SELECT cs.calls_json -> p.position AS c FROM (${latestPositionsSql("cs.latest_per_tool_json", "latest")}) AS p)
          ORDER BY ${stateField("started_at_ms", "c")} DESC, ${stateField("call_seq", "c")} DESC LIMIT 1`);

/**
 * Only the (session, client, tool) sequences of the chunk's calls: no other call's flags can
 * change.
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
      SELECT cs.project_id, cs.session_id, cs.client_name, ${sequence === "tool" ? LOADED_CALLS_SQL : LOADED_SESSION_CALLS_SQL} AS calls_json, k.reach_from_ms, k.reach_to_ms
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

/**
 * What a call's flags read of its neighbours, each fetched as one tuple: D1 counts every LAG and
 * LEAD as a row read of its own. Binary JSON: text tuples, built and parsed for every call, made a
 * 1M-call rollup 40 % slower.
 */
const PREVIOUS = ["started_at_ms", "duration_ms", "args_hash"] as const;
const NEXT = ["started_at_ms", "args_hash"] as const;

/** SPEC §2.2 flags of a call from its LAG (`p_…`) and LEAD (`n_…`) neighbours in its tool sequence (retry-rule.ts). */
export const IS_RETRY_SQL = isRetryOfSql(
  { startedAt: "p_started_at_ms", duration: "p_duration_ms", argsHash: "p_args_hash" }, { startedAt: "started_at_ms", argsHash: "args_hash" });
export const WAS_RETRIED_SQL = isRetryOfSql(
  { startedAt: "started_at_ms", duration: "duration_ms", argsHash: "args_hash" }, { startedAt: "n_started_at_ms", argsHash: "n_args_hash" });

/** SPEC §2.2, times `sign` (+1 with the chunk, −1 without). */
const retryContributions = (calls: string, sign: 1 | -1) => `SELECT project_id, hour_start_ms, tool_name, client_name,
        ${sign} * SUM(is_retry) AS retries, ${sign} * SUM(1 - is_retry) AS first_call_attempts,
        ${sign} * SUM((1 - is_retry) * good * (1 - was_retried)) AS first_call_ok
      FROM (${callFlagsSql(calls)})
      GROUP BY project_id, hour_start_ms, tool_name, client_name`;

/** The rollup and recompute.ts both derive the SPEC §2.2 flags here. */
export const callFlagsSql = (calls: string) => `SELECT project_id, ${hourStartSql("started_at_ms")} AS hour_start_ms, tool_name, client_name,
          started_at_ms, good, COALESCE(${IS_RETRY_SQL}, 0) AS is_retry, COALESCE(${WAS_RETRIED_SQL}, 0) AS was_retried
        FROM (SELECT *, ${PREVIOUS.map((f) => `${tupleField(PREVIOUS, f, "previous")} AS p_${f}`).join(", ")},
            ${NEXT.map((f) => `${tupleField(NEXT, f, "next")} AS n_${f}`).join(", ")}
          FROM (SELECT ${CALL_COLUMNS}, LAG(${tupleArraySql(PREVIOUS, {}, "jsonb")}) OVER w AS previous, LEAD(${tupleArraySql(NEXT, {}, "jsonb")}) OVER w AS next
            FROM ${calls} WINDOW w AS (${TOOL_SEQUENCE})))`;

/** The columns of a change to an hour row: its key, then every counter (the arms of `changes` line up by name). */
const HOUR_ROW_COLUMNS = ["project_id", "hour_start_ms", "tool_name", "client_name"] as const;
const CHANGE_COLUMNS = [...HOUR_ROW_COLUMNS, ...COUNTERS];
/** The counters a call's neighbours decide (retryContributions), the others its own. */
const RETRY_COUNTERS: readonly string[] = ["retries", "first_call_attempts", "first_call_ok"];
const byName = (names: readonly string[]) => Object.fromEntries(names.map((n) => [n, n]));
/** A counter that `buckets` does not compute fails every chunk, never counts 0. */
const OWN_CHANGES = {
  ...byName(HOUR_ROW_COLUMNS), ...byName(COUNTERS.filter((c) => !RETRY_COUNTERS.includes(c))),
  retries: "0", first_call_attempts: "calls_without_session", first_call_ok: "sessionless_good",
};
const RETRY_CHANGES = byName([...HOUR_ROW_COLUMNS, ...RETRY_COUNTERS]);

/** SPEC §2.3: retry figures as the difference with and without the chunk. */
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

/**
 * The client of a session's latest call (started_at_ms, then call_seq) as an aggregate: a window
 * over the calls would cost D1 about four rows read per call. Both are non-negative and a start may
 * hold fractions of a millisecond, so each is written at a fixed width that sorts as it compares.
 */
const LATEST_CLIENT_SQL = "substr(MAX(printf('%024.6f%020d', started_at_ms, call_seq) || client_name), 45)";

/**
 * The common append: every new call comes after every stored one (a tie in time goes to the higher
 * call_seq, the new call), so a tool with two new calls takes them, one with a single new call
 * keeps its stored latest as second; only the new calls' tools are read, and merged in place.
 */
const LATEST_AFTER_STORED_SQL = `json_patch(call_state.latest_per_tool_json, (
          SELECT json_group_object(tool, ${latestOfToolSql("latest", "second")}) FROM (
            SELECT e.key AS tool, call_state.call_count + ${tupleField(LATEST_OF_TOOL, "latest", "e.value")} AS latest,
              COALESCE(call_state.call_count + ${tupleField(LATEST_OF_TOOL, "second", "e.value")},
                ${tupleField(LATEST_OF_TOOL, "latest", `(call_state.latest_per_tool_json -> ${labelPathSql("e.key")})`)}) AS second
            FROM json_each(excluded.latest_per_tool_json) AS e)))`;

/** Any other append: every stored and new position ranked again, per tool (either stored form). */
const LATEST_REBUILT_SQL = `(
          SELECT json_group_object(${stateField("tool_name", "c")}, ${latestOfToolSql("position", "second_position")}) FILTER (WHERE tool_rank = 1)
          FROM (
            SELECT c, position, ROW_NUMBER() OVER by_tool AS tool_rank, LEAD(position) OVER by_tool AS second_position
            FROM (
              SELECT p.position, call_state.calls_json -> p.position AS c
              FROM (${latestPositionsSql("call_state.latest_per_tool_json", "both")}) AS p
              UNION ALL
              SELECT call_state.call_count + p.position, excluded.calls_json -> p.position
              FROM (${latestPositionsSql("excluded.latest_per_tool_json", "both")}) AS p)
            WINDOW by_tool AS (PARTITION BY ${stateField("tool_name", "c")} ORDER BY ${stateField("started_at_ms", "c")} DESC, ${stateField("call_seq", "c")} DESC)))`;

export const CALL_CHUNK_SQL = {
  // SPEC §2.1–2.3: a chain counts in its first call's hour and client, a retry in its own. Day rows
  // follow by trigger (migration 0013).
  applyHourDeltas: `INSERT INTO tool_hour_metrics (project_id, hour_start_ms, tool_name, client_name, ${COUNTER_COLUMNS}, duration_histogram_json)
    ${DELTAS_CTES}
    SELECT project_id, hour_start_ms, tool_name, client_name, ${COUNTER_COLUMNS}, duration_histogram_json FROM deltas WHERE true
    ON CONFLICT (project_id, hour_start_ms, tool_name, client_name) DO UPDATE SET ${ADD_COUNTERS},
      duration_histogram_json = ${addCountsSql("tool_hour_metrics.duration_histogram_json", "excluded.duration_histogram_json")}`,

  // SPEC §2.4: difference of next tools with and without the chunk, one row per (day, client)
  // (migration 0019).
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
    ON CONFLICT (project_id, day_start_ms, client_name) DO UPDATE SET pairs_json = ${addCountsSql("pair_days.pairs_json", "excluded.pairs_json")}`,

  dropEmptyPairs: `DELETE FROM pair_days WHERE pairs_json = '{}'`,

  // SPEC §2.4 sessions, in the transaction that folds the calls in, so each call is added exactly
  // once; ties go to the later-received client.
  addSessionCounters: `INSERT INTO sessions (project_id, session_id, first_seen_ms, last_seen_ms, client_name, calls, response_bytes_sum)
    WITH ${newCallsCtes(["session_id", "client_name", "started_at_ms", "response_bytes"])}
    SELECT project_id, session_id, MIN(started_at_ms), MAX(started_at_ms), ${LATEST_CLIENT_SQL}, COUNT(*), SUM(response_bytes)
    FROM new_calls WHERE ${IN_A_SESSION}
    GROUP BY project_id, session_id
    ON CONFLICT (project_id, session_id) DO UPDATE SET
      client_name = CASE WHEN excluded.last_seen_ms >= sessions.last_seen_ms THEN excluded.client_name ELSE sessions.client_name END,
      first_seen_ms = MIN(sessions.first_seen_ms, excluded.first_seen_ms),
      last_seen_ms = MAX(sessions.last_seen_ms, excluded.last_seen_ms),
      calls = calls + excluded.calls, response_bytes_sum = response_bytes_sum + excluded.response_bytes_sum`,

  // Keeps each tool's two latest positions for LOADED_CALLS_SQL (rows from before migration 0032
  // stay without), keyed by tool (LATEST_OF_TOOL).
  appendCalls: `INSERT INTO call_state (project_id, session_id, client_name, hour_start_ms, max_duration_ms, min_started_at_ms,
      max_started_at_ms, call_count, calls_json, latest_per_tool_json)
    WITH ${newCallsCtes(BATCH_FIELDS.filter((f) => f !== "duration_bucket"))}
    SELECT project_id, session_id, client_name, hour_start_ms, MAX(duration_ms),
      MIN(started_at_ms), MAX(started_at_ms), COUNT(*),
      json_group_array(${tupleArraySql(CALL_STATE_CALL)} ORDER BY call_seq),
      json_group_object(tool_name, ${latestOfToolSql("position", "second_position")}) FILTER (WHERE tool_rank = 1)
    FROM (
      SELECT *, ROW_NUMBER() OVER by_tool AS tool_rank, LEAD(position) OVER by_tool AS second_position
      FROM (
        SELECT *, ROW_NUMBER() OVER (PARTITION BY project_id, session_id, client_name, hour_start_ms ORDER BY call_seq) - 1 AS position
        FROM (SELECT *, ${hourStartSql("started_at_ms")} AS hour_start_ms FROM new_calls WHERE ${IN_A_SESSION}))
      WINDOW by_tool AS (PARTITION BY project_id, session_id, client_name, hour_start_ms, tool_name ORDER BY started_at_ms DESC, call_seq DESC))
    GROUP BY project_id, session_id, client_name, hour_start_ms
    ON CONFLICT (project_id, session_id, client_name, hour_start_ms) DO UPDATE SET
      max_duration_ms = MAX(max_duration_ms, excluded.max_duration_ms), call_count = call_count + excluded.call_count,
      min_started_at_ms = MIN(min_started_at_ms, excluded.min_started_at_ms),
      max_started_at_ms = MAX(max_started_at_ms, excluded.max_started_at_ms),
      calls_json = substr(calls_json, 1, length(calls_json) - 1) || ',' || substr(excluded.calls_json, 2),
      latest_per_tool_json = CASE WHEN call_state.latest_per_tool_json IS NULL THEN NULL
        WHEN json_type(call_state.latest_per_tool_json) = 'object' AND excluded.min_started_at_ms >= call_state.max_started_at_ms
        THEN ${LATEST_AFTER_STORED_SQL}
        ELSE ${LATEST_REBUILT_SQL} END`,

  // Emptied, not deleted: the batch ids serve the Idempotency-Key window (migration 0025);
  // re-running the chunk finds no call.
  emptyTakenBatches: `UPDATE call_batches SET call_count = 0, chars = 2, calls_json = '[]'
    WHERE batch_seq IN (SELECT value FROM json_each(${chunkSql}, '$.batches'))`,
} as const;

/** What `takeChunk` chose: the requests and state rows of the chunk and what it is estimated to touch. */
export type CallChunkReport = {
  calls: number;
  requests: number;
  /** Estimated before loading the state rows. */
  touched: number;
  more: number;
  /** The project whose request came first in the chunk (null when nothing was waiting). */
  leader: string | null;
  /** Sum of D1's meta.rows_read. */
  rowsRead: number;
};

export interface CallChunkBounds {
  chunkCalls: number;
  /** Rows of work per chunk: new calls plus the calls of the state rows loaded around them. */
  chunkTouchedCalls: number;
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
