// Ingest's writes to D1 (SPEC §1.2, schema.sql): raw calls, startups and agreements, for one batch
// (the session rows are the rollup's: ingest writes no row per session), in a constant number of statements whatever the batch size.
//
// D1 allows 100 bound parameters per statement and 50 queries per invocation (free plan), so rows
// are never bound one by one: each table gets one `INSERT … SELECT … FROM json_each(?1)` over a
// JSON array of row tuples. `json_each` walks the array in order and `ORDER BY key` keeps it, so the
// `*_seq` columns follow receive order (ties in started_at resolve by it, SPEC §2.2).
// Only named fields are copied into the tuples: nothing outside the schema can reach a row.
import { CALL_BATCH_CALL, RAW_AGREEMENT, RAW_STARTUP, tupleField, tupleOf } from "./tuples.ts";
import { AGREEMENTS_WATERMARK, INGEST_EPOCH, stateValueSql, startupsWatermarkSql } from "./rollup-state.ts";
import { IDEMPOTENCY_WINDOW_MS } from "../time.ts";
import { compareByCodePoint, type Payload } from "../../shared/index.ts";
import { durationBucket } from "../histogram.ts";
import { wellFormed } from "../text.ts";
import { errorName, log } from "../log.ts";

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

/** Serialises tuples into JSON arrays of at most `maxChars` characters each, in order. */
function jsonChunks(tuples: readonly unknown[], maxChars = MAX_BOUND_JSON_CHARS): string[] {
  const chunks: string[] = [];
  let parts: string[] = [];
  let length = 2;
  for (const tuple of tuples) {
    const json = JSON.stringify(tuple);
    if (parts.length > 0 && length + json.length + 1 > maxChars) {
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

// A request's calls go into ONE row (D1 bills rows, not bytes; migrations 0008, 0025): appended to
// its project's newest row while that row is open (its `epoch` is the current `ingest_epoch`, which
// every rollup run advances before it takes rows) and the calls fit under APPEND_LIMIT_CHARS, else a
// row of its own. Either way one row is written per request, and the rollup empties and deletes a
// row once for all the requests in it. The rollup numbers the calls in receive order (batch_seq,
// then their place in the row) into call_state.
//
// The resend guard: no row of this project among those still waiting, or emptied within the
// Idempotency-Key window (IDEMPOTENCY_WINDOW_MS before the request's receive time), lists this batch
// (its id, or one of its queued parts `id#n`). The key's Durable Object remembers the keys it
// accepted for the hour (SPEC §1.1); this guard covers a restart of that object, before and after
// the rollup folds the first copy in. It reads the project's rows through call_batches_by_project
// and their batch_ids (before calls_json), and writes nothing.

/**
 * A request appends to its project's open row while the row's calls JSON stays within this many
 * characters; a larger request starts a row of its own. An append rewrites the whole row (SQLite
 * writes a changed row's overflow pages again), so the bound keeps a small request's write small:
 * at low traffic a 5-minute row of a project is a few kB, and a 500-call request (~110 kB) is a row
 * of its own, as before.
 */
export const APPEND_LIMIT_CHARS = 65_536;

/** The current ingest epoch: rows opened in it may still be appended to (rollup-state.ts). */
const epochSql = stateValueSql(INGEST_EPOCH);
/** The newest row of a project: the only row a request of the project may append to. */
const newestRowSql = (project: string) => `(SELECT MAX(batch_seq) FROM call_batches WHERE project_id = ${project})`;
/** True when the row's batch_ids lists `id` (every id is followed by a space, the first preceded by one). */
const listsIdSql = (id: string) => `instr(batch_ids, ' ' || ${id} || ' ') > 0`;

/**
 * True when a row of the project lists the batch: `whole` is the request's id, `self` the id being
 * written (the request's, or one queued part's `id#n`); with `anyPart` a row of any part of the
 * request counts (a resend of the whole request). `receivedAt` is the request's receive time.
 */
const storedGuardSql = (project: string, whole: string, self: string, anyPart: string, receivedAt: string) => `EXISTS (
  SELECT 1 FROM call_batches
  WHERE project_id = ${project} AND (call_count > 0 OR last_received_at_ms >= ${receivedAt} - ${IDEMPOTENCY_WINDOW_MS})
    AND (${listsIdSql(whole)} OR ${listsIdSql(self)} OR (${anyPart} = 1 AND instr(batch_ids, ' ' || ${whole} || '#') > 0)))`;

/** On the slow paths a data row is written only by the attempt that inserted the batch's receipt. */
const receiptHeldSql = (project: string, batchId: string, attemptId: string) =>
  `(${batchId} IS NULL OR EXISTS (SELECT 1 FROM ingest_receipts WHERE project_id = ${project} AND batch_id = ${batchId} AND attempt_id = ${attemptId}))`;

// ?1 rows, ?2 project, ?3 receive time, ?4 batch id stored, ?5 guard on (1/0), ?6 request id,
// ?7 any part (1/0), ?8 receipt's batch id (NULL on the fast path), ?9 attempt id.
const MAY_WRITE_CALLS = `(?5 = 0 OR NOT ${storedGuardSql("?2", "?6", "?4", "?7", "?3")}) AND ${receiptHeldSql("?2", "?8", "?9")}`;

/** Appends the calls to the project's newest row when it is open and they fit. */
const APPEND_CALLS_SQL = `UPDATE call_batches SET
  calls_json = substr(calls_json, 1, chars - 1) || ',' || substr(?1, 2),
  chars = chars + length(?1) - 1,
  call_count = call_count + json_array_length(?1),
  batch_ids = batch_ids || ?4 || ' ',
  last_received_at_ms = MAX(last_received_at_ms, ?3)
WHERE batch_seq = ${newestRowSql("?2")} AND epoch = ${epochSql} AND call_count > 0
  AND chars + length(?1) - 1 <= ${APPEND_LIMIT_CHARS} AND ${MAY_WRITE_CALLS}`;

/** Starts a row with the calls, unless APPEND_CALLS_SQL (the statement before it) appended them. */
const INSERT_CALLS_SQL = `INSERT INTO call_batches (project_id, received_at_ms, last_received_at_ms, epoch, call_count, chars, batch_ids, calls_json)
SELECT ?2, ?3, ?3, ${epochSql}, json_array_length(?1), length(?1), ' ' || ?4 || ' ', ?1
WHERE NOT EXISTS (SELECT 1 FROM call_batches WHERE batch_seq = ${newestRowSql("?2")} AND epoch = ${epochSql} AND ${listsIdSql("?4")})
  AND ${MAY_WRITE_CALLS}`;

// ?1 project, ?2 batch id, ?3 attempt id, ?4 now, ?5 request id, ?6 the request's receive time. No receipt (and so no rows) when
// the batch is already stored: a receipt of an earlier attempt, or its call row from a fast-path
// attempt whose failure was reported although it committed; nor when its project was deleted
// meanwhile (a queued batch must not bring a deleted project's rows back).
const INSERT_RECEIPT_SQL = `INSERT INTO ingest_receipts (project_id, batch_id, attempt_id, written_at_ms)
SELECT ?1, ?2, ?3, ?4
WHERE NOT ${storedGuardSql("?1", "?5", "?2", "0", "?6")} AND EXISTS (SELECT 1 FROM projects WHERE project_id = ?1)
ON CONFLICT (project_id, batch_id) DO NOTHING`;

const startupField = (name: (typeof RAW_STARTUP)[number]) => tupleField(RAW_STARTUP, name, "value");

/**
 * The number after which a statement numbers its rows (`+ key + 1`, in the array's order): above
 * the table's highest number and the rollup's watermark, so a row is never numbered at or below what
 * the rollup has folded in, even after the rows above the watermark were deleted (a deleted
 * project). This is what AUTOINCREMENT gave, without its sqlite_sequence row per statement
 * (migration 0026). Both reads are seeks to the end of a key.
 */
export const seqBaseSql = (table: string, seq: string, watermarkSql: string) =>
  `seq_base AS MATERIALIZED (SELECT MAX(COALESCE((SELECT MAX(${seq}) FROM ${table}), 0), ${watermarkSql}) AS base)`;

const INSERT_STARTUPS_SQL = `INSERT INTO raw_startups (startup_seq, project_id, session_id, client_name, received_at_ms, sdk,
  mcp_sdk_version, transport, protocol_version, tools_json, agree_declared_json)
WITH ${seqBaseSql("raw_startups", "startup_seq", startupsWatermarkSql())}
SELECT (SELECT base FROM seq_base) + key + 1, ?2, ${startupField("session_id")}, ${startupField("client_name")}, ?3, ${startupField("sdk")}, ${startupField("mcp_sdk_version")},
  ${startupField("transport")}, ${startupField("protocol_version")}, ${tupleField(RAW_STARTUP, "tools", "value", "json")},
  ${tupleField(RAW_STARTUP, "agree_declared", "value", "json")}
FROM json_each(?1) WHERE ${receiptHeldSql("?2", "?4", "?5")} ORDER BY key`;

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

const INSERT_AGREEMENTS_SQL = `INSERT INTO raw_agreements (agreement_seq, project_id, session_id, field, tool_a, tool_b, agreed,
  checked_at_ms, window_ms, received_at_ms)
WITH ${seqBaseSql("raw_agreements", "agreement_seq", stateValueSql(AGREEMENTS_WATERMARK))}
SELECT (SELECT base FROM seq_base) + key + 1, ?2, ${RAW_AGREEMENT.map((name) => tupleField(RAW_AGREEMENT, name, "value")).join(", ")}, ?3
FROM json_each(?1) WHERE ${receiptHeldSql("?2", "?4", "?5")} ORDER BY key`;

/** A batch's rows as stored (only named fields: nothing outside the schema can reach a row), per table. */
export type BatchTuples = { calls: unknown[][]; startups: unknown[][]; agreements: unknown[][] };

export function batchTuples(payloads: readonly Payload[]): BatchTuples {
  const rows = splitByType(payloads);
  return {
    calls: rows.calls.map((c) =>
      tupleOf(CALL_BATCH_CALL, {
        session_id: wellFormed(c.session_id),
        client_name: wellFormed(c.client_name),
        tool_name: wellFormed(c.tool_name),
        started_at_ms: c.started_at_ms,
        duration_ms: c.duration_ms,
        outcome: c.outcome,
        response_bytes: c.response_bytes,
        is_empty: c.is_empty ? 1 : 0,
        args_hash: c.args_hash,
        duration_bucket: durationBucket(c.duration_ms),
      }),
    ),
    startups: rows.startups.map((s) =>
      tupleOf(RAW_STARTUP, {
        session_id: wellFormed(s.session_id),
        client_name: wellFormed(s.client_name),
        sdk: wellFormedOrNull(s.sdk),
        mcp_sdk_version: wellFormedOrNull(s.mcp_sdk_version),
        transport: s.transport,
        protocol_version: wellFormedOrNull(s.protocol_version),
        tools: s.tools.map((t) => ({
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
        agree_declared: s.agree_declared.map((d) => ({ field: wellFormed(d.field), tools: d.tools.map(wellFormed) })),
      }),
    ),
    agreements: rows.agreements.map((a) => {
      const [toolA, toolB] = agreementPairOrder(wellFormed(a.tool_a), wellFormed(a.tool_b));
      return tupleOf(RAW_AGREEMENT, {
        session_id: wellFormed(a.session_id),
        field: wellFormed(a.field),
        tool_a: toolA,
        tool_b: toolB,
        agreed: a.agreed ? 1 : 0,
        checked_at_ms: a.checked_at_ms,
        window_ms: a.window_ms,
      });
    }),
  };
}

/** One batch to store: a whole request, or one part of it that went through the ingest queue. */
export type StoredBatch = {
  projectId: string;
  receivedAtMs: number;
  /** The request's batch id: its Idempotency-Key, or one the worker drew. */
  requestId: string;
  /** The id stored: the request's, or `requestId#n` for the queue's part n. */
  batchId: string;
  /** The request carried an Idempotency-Key: look for an earlier copy before writing (fast path). */
  resendGuard: boolean;
  tuples: BatchTuples;
};

export function countsOf(tuples: BatchTuples): RowCounts {
  return { calls: tuples.calls.length, startups: tuples.startups.length, agreements: tuples.agreements.length };
}

/** The parts of a batch whose rows' JSON stays under `maxChars` each (a queue message's size), in order. */
export function splitTuples(tuples: BatchTuples, maxChars: number): BatchTuples[] {
  const parts: BatchTuples[] = [];
  let part: BatchTuples = { calls: [], startups: [], agreements: [] };
  let length = 0;
  for (const table of ["calls", "startups", "agreements"] as const) {
    for (const tuple of tuples[table]) {
      const size = JSON.stringify(tuple).length + 1;
      if (length > 0 && length + size > maxChars) {
        parts.push(part);
        part = { calls: [], startups: [], agreements: [] };
        length = 0;
      }
      part[table].push(tuple);
      length += size;
    }
  }
  if (length > 0) parts.push(part);
  return parts;
}

/**
 * The statements that store one batch (at least one per non-empty table, more only for huge
 * startups). With `receipt` (the slow paths: a retry, the queue's consumer) the first statement
 * inserts the batch's receipt and every row is written only by the attempt that inserted it.
 */
export function batchStatements(
  db: D1Database,
  batch: StoredBatch,
  receipt: { attemptId: string; nowMs: number } | null = null,
): { statements: D1PreparedStatement[]; counts: RowCounts } {
  const { projectId, receivedAtMs, tuples } = batch;
  const statements: D1PreparedStatement[] = [];
  const receiptId = receipt ? batch.batchId : null;
  const attemptId = receipt?.attemptId ?? null;
  if (receipt) {
    statements.push(db.prepare(INSERT_RECEIPT_SQL).bind(projectId, batch.batchId, receipt.attemptId, receipt.nowMs, batch.requestId, receivedAtMs));
  }
  if (tuples.calls.length > 0) {
    // One JSON text: a call's tuple is shorter than its payload (no keys), so the calls of a body
    // within the 1 MiB limit always fit one bound value.
    const calls = JSON.stringify(tuples.calls);
    if (calls.length > MAX_BOUND_JSON_CHARS) throw new Error("ingest: a batch's calls exceed one bound JSON value");
    const anyPart = batch.batchId === batch.requestId ? 1 : 0;
    const params = [calls, projectId, receivedAtMs, batch.batchId, batch.resendGuard && !receipt ? 1 : 0, batch.requestId, anyPart, receiptId, attemptId];
    statements.push(db.prepare(APPEND_CALLS_SQL).bind(...params), db.prepare(INSERT_CALLS_SQL).bind(...params));
  }
  for (const [sql, table] of [[INSERT_STARTUPS_SQL, tuples.startups], [INSERT_AGREEMENTS_SQL, tuples.agreements]] as const) {
    if (table.length === 0) continue;
    const prepared = db.prepare(sql);
    for (const chunk of jsonChunks(table)) statements.push(prepared.bind(chunk, projectId, receivedAtMs, receiptId, attemptId));
  }
  return { statements, counts: countsOf(tuples) };
}

/** Waits between write attempts (SPEC §1.1: retried with backoff), multiplied by the base delay. */
export const WRITE_RETRY_BACKOFF = [1, 4, 16] as const;
/** The base delay of WRITE_RETRY_BACKOFF (env INGEST_RETRY_BASE_MS): 250 ms → 0.25, 1 and 4 s, under waitUntil's 30 s. */
export const DEFAULT_WRITE_RETRY_BASE_MS = 250;

/**
 * An attempt D1 has not answered after this many base delays counts as failed (250 ms → 5 s): D1
 * stops a statement only at 30 s, and waitUntil ends 30 s after the answer — four attempts that
 * each waited for D1's own timeout would leave no time to queue the batch. An abandoned attempt may
 * still commit; the retries' receipts and the resend guard keep it from being stored twice.
 */
export const WRITE_ATTEMPT_TIMEOUT_BASES = 20;
/** …and never less than this, however small the base delay (a slow but healthy D1 is not a failure). */
export const MIN_WRITE_ATTEMPT_TIMEOUT_MS = 1_000;

export type PersistResult = { stored: boolean; failedAttempts: number };

class WriteAttemptTimeout extends Error {
  override name = "WriteAttemptTimeout";
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new WriteAttemptTimeout(`no answer within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/**
 * Stores one batch: its statements run as one D1 batch (a single transaction, so a failed attempt
 * leaves nothing behind). A failed (or unanswered, WRITE_ATTEMPT_TIMEOUT_BASES) attempt is retried
 * after WRITE_RETRY_BACKOFF; every retry
 * writes with a receipt, so an attempt reported failed that did commit is not stored twice. Each
 * failure is logged as JSON with the project and counts only — the error's name, not its message,
 * which could quote stored values. Never throws.
 */
export async function persistBatch(
  db: D1Database,
  batch: StoredBatch,
  options: { retryBaseMs?: number; sleep?: (ms: number) => Promise<void> } = {},
): Promise<PersistResult> {
  const sleep = options.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  const base = options.retryBaseMs ?? DEFAULT_WRITE_RETRY_BASE_MS;
  const counts = countsOf(batch.tuples);
  if (counts.calls + counts.startups + counts.agreements === 0) return { stored: true, failedAttempts: 0 };
  const attempts = WRITE_RETRY_BACKOFF.length + 1;
  for (let attempt = 1; attempt <= attempts; attempt++) {
    try {
      const receipt = attempt === 1 ? null : { attemptId: crypto.randomUUID(), nowMs: Date.now() };
      const written = db.batch(batchStatements(db, batch, receipt).statements);
      written.catch(() => undefined); // an abandoned attempt's late failure is not unhandled
      await withTimeout(written, Math.max(MIN_WRITE_ATTEMPT_TIMEOUT_MS, base * WRITE_ATTEMPT_TIMEOUT_BASES));
      return { stored: true, failedAttempts: attempt - 1 };
    } catch (err) {
      // The project and the counts, never a payload.
      log.error(attempt < attempts ? "ingest_write_retry" : "ingest_write_failed", { project_id: batch.projectId, attempt, error: errorName(err), ...counts });
      if (attempt < attempts) await sleep(WRITE_RETRY_BACKOFF[attempt - 1]! * base);
    }
  }
  return { stored: false, failedAttempts: attempts };
}

/**
 * Stores one batch once, on the slow path (the ingest queue's consumer): one attempt with a
 * receipt. Resolves "stored" when this attempt wrote it and "duplicate" when it was already stored;
 * rejects when D1 fails (the caller retries the message).
 */
export async function storeBatchOnce(db: D1Database, batch: StoredBatch, nowMs: number): Promise<"stored" | "duplicate"> {
  const attemptId = crypto.randomUUID();
  const results = await db.batch(batchStatements(db, batch, { attemptId, nowMs }).statements);
  return results[0]!.meta.changes > 0 ? "stored" : "duplicate";
}
