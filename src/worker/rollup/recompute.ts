// Recomputes a project's neighbour-dependent figures (SPEC §2.2, §2.4) from raw calls with the
// rollup's own SQL, after a rule change or a fix (docs/migrations.md). Days whose neighbours are no
// longer all kept are frozen.
// Each step is one transaction that chooses its work and advances the cursor, so it applies whole
// or not at all; the rollup leaves the project's calls alone meanwhile (scope.ts).
import { dayStartSql, DAY_MS, hourStartSql } from "../time.ts";
import { MAX_RETRY_REACH_MS } from "../retry-rule.ts";
import { RAW_KEPT_FROM, stateValueSql } from "../db/rollup-state.ts";
import {
  CALL_STATE_CALL, HOUR_ROW_KEY, PAIR_DAY_KEY, PAIR_KEY, RECOMPUTE_SEQUENCE, tupleArraySql, tupleField, type TupleLayout,
} from "../db/tuples.ts";
import type { RecomputeState } from "../db/recomputes.ts";
import { CALL_COLUMNS, SESSION_SEQUENCE, callFlagsSql } from "./calls.ts";
import { namedStatement } from "../db/named-sql.ts";
import { BOUND_SCOPE, decideScope, type RunScope } from "./scope.ts";

/** A retried predecessor started at most one retry reach before it. */
export const RECOMPUTE_LOOKBACK_MS = MAX_RETRY_REACH_MS;

/** The first day recomputed when raw calls are whole from `keptFromMs` on: a UTC day start. */
export function recomputeFromMs(keptFromMs: number): number {
  return Math.ceil((keptFromMs + RECOMPUTE_LOOKBACK_MS) / DAY_MS) * DAY_MS;
}
/** The integer division is the ceiling's. */
const recomputeFromSql = (keptFrom: string) => `((${keptFrom} + ${RECOMPUTE_LOOKBACK_MS + DAY_MS - 1}) / ${DAY_MS} * ${DAY_MS})`;

const KEPT_FROM_SQL = stateValueSql(RAW_KEPT_FROM);
const stateField = (name: (typeof CALL_STATE_CALL)[number]) => tupleField(CALL_STATE_CALL, name, "j.value");

/** The recompute of project :project_id, with its step's kind (`kind`) and its cursor and last key. */
const stepCte = (kinds: string[]) => `st AS MATERIALIZED (
      SELECT step ->> '$.kind' AS kind, step, from_ms, cursor, step -> '$.last' AS last FROM recomputes
      WHERE project_id = :project_id AND step ->> '$.kind' IN (${kinds.map((k) => `'${k}'`).join(", ")}))`;

const keyOf = (layout: TupleLayout, alias: string) => `(${layout.map((c) => `${alias}.${c}`).join(", ")})`;
const keyIn = (layout: TupleLayout, json: string) => `(${layout.map((c) => tupleField(layout, c, json)).join(", ")})`;
/** The row `alias` after the cursor `cursor` (a tuple of `layout`; '[]' = from the start). */
const afterSql = (layout: TupleLayout, alias: string, cursor: string) => `(${cursor} = '[]' OR ${keyOf(layout, alias)} > ${keyIn(layout, cursor)})`;
const inStepSql = (layout: TupleLayout, alias: string) =>
  `${afterSql(layout, alias, "st.cursor")} AND ${keyOf(layout, alias)} <= ${keyIn(layout, "st.last")}`;

/** Read without correlation inside the choice. */
const OWN_ROW = `own AS MATERIALIZED (SELECT cursor, from_ms FROM recomputes WHERE project_id = :project_id)`;

/** The session calls of the counted sequences: every call_state row from the lookback on. */
const countedCallsCtes = (kinds: string) => `${stepCte([kinds])},
    sequences AS MATERIALIZED (
      SELECT ${RECOMPUTE_SEQUENCE.map((c) => `${tupleField(RECOMPUTE_SEQUENCE, c, "g.value")} AS ${c}`).join(", ")}
      FROM st, json_each(st.step, '$.groups') AS g),
    calls AS MATERIALIZED (
      SELECT x.project_id, x.session_id, x.client_name, ${stateField("tool_name")} AS tool_name,
        ${stateField("started_at_ms")} AS started_at_ms, ${stateField("duration_ms")} AS duration_ms,
        (${stateField("outcome")} = 'ok' AND ${stateField("is_empty")} = 0) AS good, ${stateField("args_hash")} AS args_hash,
        ${stateField("call_seq")} AS call_seq
      FROM st, sequences s JOIN call_state x ON x.project_id = :project_id AND x.session_id = s.session_id AND x.client_name = s.client_name
        AND x.hour_start_ms >= ${hourStartSql(`st.from_ms - ${RECOMPUTE_LOOKBACK_MS}`)}, json_each(x.calls_json) AS j)`;

const SCRATCH_LEFT = `(EXISTS (SELECT 1 FROM recompute_hours WHERE project_id = :project_id) OR EXISTS (SELECT 1 FROM recompute_pairs WHERE project_id = :project_id))`;
const HOURS_LEFT = `EXISTS (SELECT 1 FROM recompute_hours WHERE project_id = :project_id)`;

export const RECOMPUTE_SQL = {
  /** The oldest recompute under way among those the run leaves the calls of alone (scope.ts). */
  next: `SELECT project_id, state FROM recomputes WHERE state <> 'done' AND project_id IN ${BOUND_SCOPE.recomputing}
    ORDER BY requested_at_ms, project_id LIMIT 1`,

  /** Kind 'none' unless still in :state, so a step raced by another run does nothing. */
  choose: `UPDATE recomputes SET step = CASE
      WHEN state <> :state THEN json_object('kind', 'none')
      WHEN state = 'clearing' THEN json_object('kind', 'clearing')
      WHEN state = 'counting' AND kept_from_ms IS NOT ${KEPT_FROM_SQL} THEN json_object('kind', 'restart')
      WHEN state = 'counting' THEN (
        WITH ${OWN_ROW},
        sequences AS MATERIALIZED (
          SELECT x.session_id, x.client_name, SUM(x.call_count) AS calls FROM own, call_state x
          WHERE x.project_id = :project_id AND x.hour_start_ms >= ${hourStartSql(`own.from_ms - ${RECOMPUTE_LOOKBACK_MS}`)}
            AND ${afterSql(RECOMPUTE_SEQUENCE, "x", "own.cursor")}
          GROUP BY x.session_id, x.client_name ORDER BY x.session_id, x.client_name LIMIT :max_sequences),
        running AS MATERIALIZED (
          SELECT session_id, client_name, calls, ROW_NUMBER() OVER w AS k, SUM(calls) OVER w AS running
          FROM sequences WINDOW w AS (ORDER BY session_id, client_name ROWS UNBOUNDED PRECEDING)),
        chosen AS MATERIALIZED (SELECT * FROM running WHERE k = 1 OR running <= :step_bound)
        SELECT CASE WHEN COUNT(*) = 0 THEN json_object('kind', 'counted') ELSE json_object('kind', 'counting',
            'groups', json_group_array(${tupleArraySql(RECOMPUTE_SEQUENCE)}), 'calls', SUM(calls),
            'last', json((SELECT ${tupleArraySql(RECOMPUTE_SEQUENCE)} FROM chosen ORDER BY k DESC LIMIT 1))) END
        FROM chosen)
      WHEN state = 'hours' THEN (
        WITH ${OWN_ROW},
        keys AS MATERIALIZED (
          SELECT m.hour_start_ms, m.tool_name, m.client_name FROM own, tool_hour_metrics m
          WHERE m.project_id = :project_id AND m.hour_start_ms >= own.from_ms AND ${afterSql(HOUR_ROW_KEY, "m", "own.cursor")}
          ORDER BY m.hour_start_ms, m.tool_name, m.client_name LIMIT :step_bound)
        SELECT CASE WHEN COUNT(*) = 0 THEN json_object('kind', 'hours_done') ELSE json_object('kind', 'hours', 'rows', COUNT(*),
            'last', json((SELECT ${tupleArraySql(HOUR_ROW_KEY)} FROM keys
              ORDER BY hour_start_ms DESC, tool_name DESC, client_name DESC LIMIT 1))) END
        FROM keys)
      WHEN state = 'pairs' THEN (
        WITH ${OWN_ROW},
        keys AS MATERIALIZED (
          SELECT day_start_ms, client_name FROM (
            SELECT p.day_start_ms, p.client_name FROM own, pair_days p
            WHERE p.project_id = :project_id AND p.day_start_ms >= own.from_ms AND ${afterSql(PAIR_DAY_KEY, "p", "own.cursor")}
            UNION
            SELECT s.day_start_ms, s.client_name FROM own, recompute_pairs s
            WHERE s.project_id = :project_id AND ${afterSql(PAIR_DAY_KEY, "s", "own.cursor")})
          ORDER BY day_start_ms, client_name LIMIT :step_bound)
        SELECT CASE WHEN COUNT(*) = 0 THEN json_object('kind', 'pairs_done') ELSE json_object('kind', 'pairs', 'keys', COUNT(*),
            'last', json((SELECT ${tupleArraySql(PAIR_DAY_KEY)} FROM keys ORDER BY day_start_ms DESC, client_name DESC LIMIT 1))) END
        FROM keys)
      ELSE json_object('kind', 'none') END
    WHERE project_id = :project_id
    RETURNING step`,

  clearHours: `DELETE FROM recompute_hours WHERE (project_id, hour_start_ms, tool_name, client_name) IN (
      SELECT project_id, hour_start_ms, tool_name, client_name FROM recompute_hours
      WHERE project_id = :project_id AND EXISTS (SELECT 1 FROM recomputes WHERE project_id = :project_id AND step ->> '$.kind' = 'clearing') LIMIT :max_rows)`,
  clearPairs: `DELETE FROM recompute_pairs WHERE (project_id, day_start_ms, client_name, pair) IN (
      SELECT project_id, day_start_ms, client_name, pair FROM recompute_pairs
      WHERE project_id = :project_id AND EXISTS (SELECT 1 FROM recomputes WHERE project_id = :project_id AND step ->> '$.kind' = 'clearing') LIMIT :max_rows)`,

  /** Counting: the session calls' figures per hour row, from the calls starting on `from_ms` or later. */
  countHours: `INSERT INTO recompute_hours (project_id, hour_start_ms, tool_name, client_name, retries, chains, first_ok, good)
    WITH ${countedCallsCtes("counting")}
    SELECT project_id, hour_start_ms, tool_name, client_name, SUM(is_retry), SUM(1 - is_retry),
      SUM((1 - is_retry) * good * (1 - was_retried)), SUM(good)
    FROM (${callFlagsSql("calls")})
    WHERE started_at_ms >= (SELECT from_ms FROM st)
    GROUP BY project_id, hour_start_ms, tool_name, client_name
    ON CONFLICT (project_id, hour_start_ms, tool_name, client_name) DO UPDATE SET retries = retries + excluded.retries,
      chains = chains + excluded.chains, first_ok = first_ok + excluded.first_ok, good = good + excluded.good`,

  /** Counting: each call's pair with the next call of its (session, client) sequence, on the call's day (SPEC §2.4). */
  countPairs: `INSERT INTO recompute_pairs (project_id, day_start_ms, client_name, pair, pair_count)
    WITH ${countedCallsCtes("counting")}
    SELECT project_id, ${dayStartSql("started_at_ms")} AS day_start_ms, client_name,
      ${tupleArraySql(PAIR_KEY, { from_tool: "tool_name", to_tool: "next_tool" })} AS pair, COUNT(*)
    FROM (SELECT ${CALL_COLUMNS}, LEAD(tool_name) OVER (${SESSION_SEQUENCE}) AS next_tool FROM calls)
    WHERE next_tool IS NOT NULL AND next_tool <> tool_name AND started_at_ms >= (SELECT from_ms FROM st)
    GROUP BY project_id, day_start_ms, client_name, pair
    ON CONFLICT (project_id, day_start_ms, client_name, pair) DO UPDATE SET pair_count = pair_count + excluded.pair_count`,

  /**
   * Calls without a session are kept nowhere raw (SPEC §2.2), so their part comes from the row's
   * own counters. Only rows whose figures differ are written.
   */
  writeHours: `WITH ${stepCte(["hours"])},
    figures AS MATERIALIZED (
      SELECT m.hour_start_ms, m.tool_name, m.client_name, COALESCE(s.retries, 0) AS retries,
        m.calls_without_session + COALESCE(s.chains, 0) AS first_call_attempts,
        m.ok - m.empty - COALESCE(s.good, 0) + COALESCE(s.first_ok, 0) AS first_call_ok
      FROM st, tool_hour_metrics m LEFT JOIN recompute_hours s ON s.project_id = m.project_id AND s.hour_start_ms = m.hour_start_ms
        AND s.tool_name = m.tool_name AND s.client_name = m.client_name
      WHERE m.project_id = :project_id AND m.hour_start_ms >= st.from_ms AND ${inStepSql(HOUR_ROW_KEY, "m")})
    UPDATE tool_hour_metrics SET retries = f.retries, first_call_attempts = f.first_call_attempts, first_call_ok = f.first_call_ok
    FROM figures f
    WHERE tool_hour_metrics.project_id = :project_id AND tool_hour_metrics.hour_start_ms = f.hour_start_ms
      AND tool_hour_metrics.tool_name = f.tool_name AND tool_hour_metrics.client_name = f.client_name
      AND (tool_hour_metrics.retries <> f.retries OR tool_hour_metrics.first_call_attempts <> f.first_call_attempts
        OR tool_hour_metrics.first_call_ok <> f.first_call_ok)`,

  /** Hours: the scratch rows written (or, once every hour row is, whatever is left), ≤ :max_rows. */
  consumeHours: `DELETE FROM recompute_hours WHERE (project_id, hour_start_ms, tool_name, client_name) IN (
      WITH ${stepCte(["hours", "hours_done"])}
      SELECT s.project_id, s.hour_start_ms, s.tool_name, s.client_name FROM st, recompute_hours s
      WHERE s.project_id = :project_id AND (st.kind = 'hours_done' OR ${inStepSql(HOUR_ROW_KEY, "s")}) LIMIT :max_rows)`,

  /** Pairs: the step's (day, client) rows replaced by the recomputed ones. */
  deletePairDays: `WITH ${stepCte(["pairs"])}
    DELETE FROM pair_days WHERE project_id = :project_id AND EXISTS (SELECT 1 FROM st
      WHERE pair_days.day_start_ms >= st.from_ms AND ${inStepSql(PAIR_DAY_KEY, "pair_days")})`,
  insertPairDays: `INSERT INTO pair_days (project_id, day_start_ms, client_name, pairs_json)
    WITH ${stepCte(["pairs"])}
    SELECT s.project_id, s.day_start_ms, s.client_name, json_group_object(s.pair, s.pair_count ORDER BY s.pair)
    FROM st, recompute_pairs s WHERE s.project_id = :project_id AND ${inStepSql(PAIR_DAY_KEY, "s")}
    GROUP BY s.project_id, s.day_start_ms, s.client_name`,
  consumePairs: `DELETE FROM recompute_pairs WHERE project_id = :project_id AND EXISTS (
      WITH ${stepCte(["pairs"])} SELECT 1 FROM st WHERE ${inStepSql(PAIR_DAY_KEY, "recompute_pairs")})`,

  /** The step's end: the cursor and the counts move on, or the state does; :now_ms is the time (when it is done). */
  advance: `UPDATE recomputes SET
      state = CASE step ->> '$.kind'
        WHEN 'restart' THEN 'clearing'
        WHEN 'clearing' THEN CASE WHEN ${SCRATCH_LEFT} THEN 'clearing' ELSE 'counting' END
        WHEN 'counted' THEN 'hours'
        WHEN 'hours_done' THEN CASE WHEN ${HOURS_LEFT} THEN 'hours' ELSE 'pairs' END
        WHEN 'pairs_done' THEN 'done'
        ELSE state END,
      kept_from_ms = CASE WHEN step ->> '$.kind' = 'clearing' AND NOT ${SCRATCH_LEFT} THEN ${KEPT_FROM_SQL} ELSE kept_from_ms END,
      from_ms = CASE WHEN step ->> '$.kind' = 'clearing' AND NOT ${SCRATCH_LEFT} THEN ${recomputeFromSql(KEPT_FROM_SQL)} ELSE from_ms END,
      cursor = CASE
        WHEN step ->> '$.kind' IN ('counting', 'hours', 'pairs') THEN step -> '$.last'
        WHEN step ->> '$.kind' IN ('restart', 'clearing', 'counted') OR (step ->> '$.kind' = 'hours_done' AND NOT ${HOURS_LEFT}) THEN '[]'
        ELSE cursor END,
      sessions = CASE step ->> '$.kind' WHEN 'restart' THEN 0 WHEN 'counting' THEN sessions + json_array_length(step, '$.groups') ELSE sessions END,
      calls = CASE step ->> '$.kind' WHEN 'restart' THEN 0 WHEN 'counting' THEN calls + (step ->> '$.calls') ELSE calls END,
      hour_rows = hour_rows + CASE WHEN step ->> '$.kind' = 'hours' THEN step ->> '$.rows' ELSE 0 END,
      pair_rows = pair_rows + CASE WHEN step ->> '$.kind' = 'pairs' THEN step ->> '$.keys' ELSE 0 END,
      steps = steps + (step ->> '$.kind' <> 'none'),
      finished_at_ms = CASE WHEN step ->> '$.kind' = 'pairs_done' THEN :now_ms ELSE finished_at_ms END
    WHERE project_id = :project_id`,
} as const;

export interface RecomputeBounds {
  /** The first sequence is always taken. */
  recomputeCalls: number;
  /** Rows one step writes or deletes: hour rows, (day, client) pair rows, scratch rows. */
  recomputeRows: number;
  recomputeSequences: number;
}

export interface RecomputeStepReport {
  project_id: string;
  /** What the step did: clearing, restart, counting, counted, hours, hours_done, pairs, pairs_done, or none (raced). */
  kind: string;
  statements: number;
  hourRowsChanged: number;
  done: boolean;
}

/** Statements a recompute step costs at most against the per-invocation query budget (its probe included). */
export const RECOMPUTE_STEP_STATEMENTS = 6;

const STATEMENTS_OF: Record<Exclude<RecomputeState, "done">, (keyof typeof RECOMPUTE_SQL)[]> = {
  clearing: ["clearHours", "clearPairs"],
  counting: ["countHours", "countPairs"],
  hours: ["writeHours", "consumeHours"],
  pairs: ["deletePairDays", "insertPairDays", "consumePairs"],
};

/** null when no recompute is under way. `nowMs` is recorded as the finish time. */
export async function runRecomputeStep(db: D1Database, nowMs: number, bounds: RecomputeBounds, scope?: RunScope): Promise<RecomputeStepReport | null> {
  const { recomputing } = scope ?? (await decideScope(db));
  const next = await namedStatement(db, RECOMPUTE_SQL.next, { recomputing_projects: JSON.stringify(recomputing) })
    .first<{ project_id: string; state: Exclude<RecomputeState, "done"> }>();
  if (!next) return null;
  const { project_id: projectId, state } = next;
  const bound = state === "counting" ? bounds.recomputeCalls : bounds.recomputeRows;
  const statements = [
    namedStatement(db, RECOMPUTE_SQL.choose, { project_id: projectId, state, step_bound: bound, max_sequences: bounds.recomputeSequences }),
    ...STATEMENTS_OF[state].map((name) =>
      name === "clearHours" || name === "clearPairs" || name === "consumeHours"
        ? namedStatement(db, RECOMPUTE_SQL[name], { project_id: projectId, max_rows: bounds.recomputeRows })
        : namedStatement(db, RECOMPUTE_SQL[name], { project_id: projectId })),
    namedStatement(db, RECOMPUTE_SQL.advance, { project_id: projectId, now_ms: nowMs }),
  ];
  const results = await db.batch(statements);
  const step = (results[0]?.results?.[0] as { step?: string } | undefined)?.step;
  const kind = typeof step === "string" ? (JSON.parse(step) as { kind: string }).kind : "none";
  const written = state === "hours" ? (results[1]?.meta.changes ?? 0) : 0;
  return { project_id: projectId, kind, statements: 1 + statements.length, hourRowsChanged: written, done: kind === "pairs_done" };
}
