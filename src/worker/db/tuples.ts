// The positional JSON tuples stored in D1 rows, each named once: an array of a million calls is a
// third of the objects' size, and D1 bills bytes stored. tuples.test.ts checks no reader uses a
// literal position.

/** A call in a `call_batches` row's `calls_json` (ingest, db/raw-writes.ts; read by rollup/calls.ts). */
export const CALL_BATCH_CALL = [
  "session_id", "client_name", "tool_name", "started_at_ms", "duration_ms", "outcome", "response_bytes", "is_empty",
  "args_hash", "duration_bucket",
] as const;

/** A call in a `call_state` row's `calls_json` (rollup/calls.ts; read by the rollup and retention). */
export const CALL_STATE_CALL = [
  "call_seq", "tool_name", "started_at_ms", "duration_ms", "outcome", "response_bytes", "is_empty", "args_hash",
] as const;

/** A startup as ingest hands it to the `raw_startups` insert (db/raw-writes.ts). */
export const RAW_STARTUP = [
  "session_id", "client_name", "sdk", "mcp_sdk_version", "transport", "protocol_version", "tools", "agree_declared",
] as const;

/** A verdict as ingest hands it to the `raw_agreements` insert (db/raw-writes.ts). */
export const RAW_AGREEMENT = ["session_id", "field", "tool_a", "tool_b", "agreed", "checked_at_ms", "window_ms"] as const;

/** A pair's key in a `pair_days` row's JSON object (migration 0019): a JSON array as text. */
export const PAIR_KEY = ["from_tool", "to_tool"] as const;

/**
 * A span of the calls chunk, kept in its `rollup_state` row (rollup/calls.ts); `group_lo_ms` is the
 * earliest new call of its (session, client) among the chunk's candidate requests.
 */
export const CHUNK_SPAN = ["project_id", "session_id", "client_name", "from_ms", "to_ms", "reach_from_ms", "reach_to_ms", "group_lo_ms"] as const;

/** A (session, client) sequence a recompute counts, in its step's JSON and as its cursor (rollup/recompute.ts). */
export const RECOMPUTE_SEQUENCE = ["session_id", "client_name"] as const;
/** An hour row's key within a project: a recompute's cursor while it writes hour rows. */
export const HOUR_ROW_KEY = ["hour_start_ms", "tool_name", "client_name"] as const;
/** A `pair_days` row's key within a project: a recompute's cursor while it writes pairs. */
export const PAIR_DAY_KEY = ["day_start_ms", "client_name"] as const;
/** A project-day the hour-row fold hands its delete statement, in a JSON list (rollup/retention.ts). */
export const FOLD_DAY = ["project_id", "day_start_ms"] as const;

export type TupleLayout = readonly string[];

export function tuplePosition<L extends TupleLayout>(layout: L, name: L[number]): number {
  const position = layout.indexOf(name);
  if (position < 0) throw new Error(`no field ${name} in this tuple layout`);
  return position;
}

/** SQL reading `name` of the tuple `json` as an SQL value (`->>`), or as JSON (`->`, for nested values). */
export function tupleField<L extends TupleLayout>(layout: L, name: L[number], json: string, as: "value" | "json" = "value"): string {
  return `${json} ${as === "json" ? "->" : "->>"} ${tuplePosition(layout, name)}`;
}

export function tupleArraySql<L extends TupleLayout>(layout: L, expressions: Partial<Record<L[number], string>> = {}, form: "json" | "jsonb" = "json"): string {
  return `${form}_array(${layout.map((name: L[number]) => expressions[name] ?? name).join(", ")})`;
}

/** The tuple of a record, in the layout's order (the JavaScript writer). */
export function tupleOf<L extends TupleLayout>(layout: L, record: Record<L[number], unknown>): unknown[] {
  return layout.map((name: L[number]) => record[name]);
}
