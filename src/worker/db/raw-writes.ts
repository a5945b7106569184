// Ingest's writes to D1 (SPEC §1.2, schema.sql): raw calls, startups and agreements, for one batch
// (the session rows are the rollup's: ingest writes no row per session), in a constant number of statements whatever the batch size.
//
// D1 allows 100 bound parameters per statement and 50 queries per invocation (free plan), so rows
// are never bound one by one: each table gets one `INSERT … SELECT … FROM json_each(?1)` over a
// JSON array of row tuples. `json_each` walks the array in order and `ORDER BY key` keeps it, so the
// `*_seq` columns follow receive order (ties in started_at resolve by it, SPEC §2.2).
// Only named fields are copied into the tuples: nothing outside the schema can reach a row.
import { compareByCodePoint, type Payload } from "../../shared/index.ts";
import { durationBucket } from "../histogram.ts";
import { wellFormed } from "../text.ts";

type CallPayload = Extract<Payload, { type: "call" }>;
type StartupPayload = Extract<Payload, { type: "startup" }>;
type AgreementPayload = Extract<Payload, { type: "agreement" }>;

/**
 * A bound JSON text stays under this many characters (D1 caps a string value at 2,000,000 bytes;
 * 1 MiB leaves room for multi-byte UTF-8). A 1 MiB body needs one chunk per table unless its startups
 * expand (absent optional tool fields are stored as nulls), so the statement count stays small and
 * bounded by the body limit.
 */
const MAX_BOUND_JSON_CHARS = 1_000_000;

/** Like wellFormed, for the nullable optional fields. */
function wellFormedOrNull(text: string | null): string | null {
  return text === null ? null : wellFormed(text);
}

export type BatchRows = {
  calls: CallPayload[];
  startups: StartupPayload[];
  agreements: AgreementPayload[];
};

export type RowCounts = { calls: number; startups: number; agreements: number };

export function splitByType(payloads: readonly Payload[]): BatchRows {
  const rows: BatchRows = { calls: [], startups: [], agreements: [] };
  for (const payload of payloads) {
    if (payload.type === "call") rows.calls.push(payload);
    else if (payload.type === "startup") rows.startups.push(payload);
    else if (payload.type === "agreement") rows.agreements.push(payload);
  }
  return rows;
}

/** Serialises tuples into JSON arrays of at most MAX_BOUND_JSON_CHARS characters each, in order. */
function jsonChunks(tuples: readonly unknown[]): string[] {
  const chunks: string[] = [];
  let parts: string[] = [];
  let length = 2;
  for (const tuple of tuples) {
    const json = JSON.stringify(tuple);
    if (parts.length > 0 && length + json.length + 1 > MAX_BOUND_JSON_CHARS) {
      chunks.push(`[${parts.join(",")}]`);
      parts = [];
      length = 2;
    }
    parts.push(json);
    length += json.length + 1;
  }
  if (parts.length > 0) chunks.push(`[${parts.join(",")}]`);
  return chunks;
}

// A request's calls are ONE row (D1 bills rows, not bytes; migration 0008): the rollup numbers
// them in receive order (batch_seq, then their order in the request) into call_state.
const INSERT_CALLS_SQL = `INSERT INTO call_batches (project_id, received_at_ms, call_count, calls_json)
VALUES (?2, ?3, json_array_length(?1), ?1)`;

const INSERT_STARTUPS_SQL = `INSERT INTO raw_startups (project_id, session_id, client_name, received_at_ms, sdk,
  mcp_sdk_version, transport, protocol_version, tools_json, agree_declared_json)
SELECT ?2, value ->> 0, value ->> 1, ?3, value ->> 2, value ->> 3, value ->> 4, value ->> 5,
  value -> 6, value -> 7
FROM json_each(?1) ORDER BY key`;

/**
 * An agreement pair as it is stored: the two names in code-point order (SPEC §2.5), so a pair sent
 * in either order is one row. Code points, not JavaScript's UTF-16 `<`, which puts 🚀 (U+1F680)
 * before U+FB01: code-point order is SQLite's BINARY order on UTF-8, the order
 * migrations/0002_agreement_pair_order.sql gave the rows stored before. Compared after wellFormed,
 * on the names as they are stored.
 */
export function agreementPairOrder(toolA: string, toolB: string): [string, string] {
  return compareByCodePoint(toolA, toolB) <= 0 ? [toolA, toolB] : [toolB, toolA];
}

const INSERT_AGREEMENTS_SQL = `INSERT INTO raw_agreements (project_id, session_id, field, tool_a, tool_b, agreed,
  checked_at_ms, window_ms, received_at_ms)
SELECT ?2, value ->> 0, value ->> 1, value ->> 2, value ->> 3, value ->> 4, value ->> 5, value ->> 6, ?3
FROM json_each(?1) ORDER BY key`;

/** The statements that store one batch (at least one per non-empty table, more only for huge startups). */
export function batchStatements(
  db: D1Database,
  projectId: string,
  payloads: readonly Payload[],
  receivedAtMs: number,
): { statements: D1PreparedStatement[]; counts: RowCounts } {
  const rows = splitByType(payloads);
  const statements: D1PreparedStatement[] = [];
  // Every statement binds ?1 = the JSON rows, ?2 = the project; the raw tables also ?3 = receive time.
  const add = (sql: string, tuples: unknown[], bindsReceivedAt = true) => {
    if (tuples.length === 0) return;
    const prepared = db.prepare(sql);
    for (const chunk of jsonChunks(tuples)) {
      statements.push(bindsReceivedAt ? prepared.bind(chunk, projectId, receivedAtMs) : prepared.bind(chunk, projectId));
    }
  };

  add(
    INSERT_CALLS_SQL,
    rows.calls.map((c) => [
      wellFormed(c.session_id),
      wellFormed(c.client_name),
      wellFormed(c.tool_name),
      c.started_at_ms,
      c.duration_ms,
      c.outcome,
      c.response_bytes,
      c.is_empty ? 1 : 0,
      c.args_hash,
      durationBucket(c.duration_ms),
    ]),
  );
  add(
    INSERT_STARTUPS_SQL,
    rows.startups.map((s) => [
      wellFormed(s.session_id),
      wellFormed(s.client_name),
      wellFormedOrNull(s.sdk),
      wellFormedOrNull(s.mcp_sdk_version),
      s.transport,
      wellFormedOrNull(s.protocol_version),
      s.tools.map((t) => ({
        name: wellFormed(t.name),
        schema_bytes: t.schema_bytes,
        schema_hash: t.schema_hash,
        description_hash: t.description_hash,
        description_norm: t.description_norm,
        policy: t.policy
          ? {
              requires_authorization: t.policy.requires_authorization,
              requires_verified_identity: t.policy.requires_verified_identity,
            }
          : null,
      })),
      s.agree_declared.map((d) => ({ field: wellFormed(d.field), tools: d.tools.map(wellFormed) })),
    ]),
  );
  add(
    INSERT_AGREEMENTS_SQL,
    rows.agreements.map((a) => [
      wellFormed(a.session_id),
      wellFormed(a.field),
      ...agreementPairOrder(wellFormed(a.tool_a), wellFormed(a.tool_b)),
      a.agreed ? 1 : 0,
      a.checked_at_ms,
      a.window_ms,
    ]),
  );
  return {
    statements,
    counts: { calls: rows.calls.length, startups: rows.startups.length, agreements: rows.agreements.length },
  };
}

/** Structured log line of a write failure: the project and the counts, never a payload. */
export type WriteFailureLog = {
  event: "ingest_write_retry" | "ingest_write_failed";
  project_id: string;
  attempt: number;
  error: string;
} & RowCounts;

/**
 * Stores one batch: its statements run as one D1 batch (a single transaction, so a failed attempt
 * leaves nothing behind and the retry cannot duplicate rows). A failure is retried once; each
 * failure is logged as JSON with the project and counts only — the error's name, not its message,
 * which could quote stored values. Resolves to whether the rows were stored; never throws.
 */
export async function persistBatch(
  db: D1Database,
  projectId: string,
  payloads: readonly Payload[],
  receivedAtMs: number,
  log: (line: string) => void = (line) => console.error(line),
): Promise<boolean> {
  let built: ReturnType<typeof batchStatements>;
  try {
    built = batchStatements(db, projectId, payloads, receivedAtMs);
  } catch (err) {
    log(JSON.stringify({ event: "ingest_write_failed", project_id: projectId, attempt: 0, error: errorName(err), calls: 0, startups: 0, agreements: 0 } satisfies WriteFailureLog));
    return false;
  }
  const { statements, counts } = built;
  if (statements.length === 0) return true;
  for (let attempt = 1; attempt <= 2; attempt++) {
    try {
      await db.batch(statements);
      return true;
    } catch (err) {
      const line: WriteFailureLog = {
        event: attempt === 1 ? "ingest_write_retry" : "ingest_write_failed",
        project_id: projectId,
        attempt,
        error: errorName(err),
        ...counts,
      };
      log(JSON.stringify(line));
    }
  }
  return false;
}

function errorName(err: unknown): string {
  return err instanceof Error ? err.name : typeof err;
}
