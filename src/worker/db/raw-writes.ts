// Ingest's writes to D1 (SPEC §1.2) in a constant number of statements whatever the batch size. D1
// allows 100 bound parameters per statement and 50 queries per invocation (free plan), so each
// table gets one `INSERT … SELECT … FROM json_each(?1)`; `ORDER BY key` keeps receive order for the
// `*_seq` columns (SPEC §2.2 ties).
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

/** D1 caps a string value at 2,000,000 bytes; 1 MiB leaves room for multi-byte UTF-8. */
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

// A request's calls go into ONE row (D1 bills rows, not bytes; migrations 0008, 0025), appended to
// the project's open row when they fit.
// The resend guard covers a restart of the key's Durable Object (SPEC §1.1), before and after the
// rollup folds the first copy in.

/**
 * An append rewrites the whole row (SQLite rewrites a changed row's overflow pages), so the bound
 * keeps a small request's write small.
 */
export const APPEND_LIMIT_CHARS = 65_536;

const epochSql = stateValueSql(INGEST_EPOCH);
const newestRowSql = (project: string) => `(SELECT MAX(batch_seq) FROM call_batches WHERE project_id = ${project})`;
/** Every id is followed by a space, the first preceded by one. */
const listsIdSql = (id: string) => `instr(batch_ids, ' ' || ${id} || ' ') > 0`;

/**
 * `self` is the id being written (the request's, or a queued part's `id#n`); `anyPart` counts a
 * resend of the whole request.
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

const APPEND_CALLS_SQL = `UPDATE call_batches SET
  calls_json = substr(calls_json, 1, chars - 1) || ',' || substr(?1, 2),
  chars = chars + length(?1) - 1,
  call_count = call_count + json_array_length(?1),
  batch_ids = batch_ids || ?4 || ' ',
  last_received_at_ms = MAX(last_received_at_ms, ?3)
WHERE batch_seq = ${newestRowSql("?2")} AND epoch = ${epochSql} AND call_count > 0
  AND chars + length(?1) - 1 <= ${APPEND_LIMIT_CHARS} AND ${MAY_WRITE_CALLS}`;

const INSERT_CALLS_SQL = `INSERT INTO call_batches (project_id, received_at_ms, last_received_at_ms, epoch, call_count, chars, batch_ids, calls_json)
SELECT ?2, ?3, ?3, ${epochSql}, json_array_length(?1), length(?1), ' ' || ?4 || ' ', ?1
WHERE NOT EXISTS (SELECT 1 FROM call_batches WHERE batch_seq = ${newestRowSql("?2")} AND epoch = ${epochSql} AND ${listsIdSql("?4")})
  AND ${MAY_WRITE_CALLS}`;

// ?1 project, ?2 batch id, ?3 attempt id, ?4 now, ?5 request id, ?6 the request's receive time. No
// receipt when the batch is already stored (an attempt reported failed may have committed), or when
// the project was deleted meanwhile: a queued batch must not bring its rows back.
const INSERT_RECEIPT_SQL = `INSERT INTO ingest_receipts (project_id, batch_id, attempt_id, written_at_ms)
SELECT ?1, ?2, ?3, ?4
WHERE NOT ${storedGuardSql("?1", "?5", "?2", "0", "?6")} AND EXISTS (SELECT 1 FROM projects WHERE project_id = ?1)
ON CONFLICT (project_id, batch_id) DO NOTHING`;

const startupField = (name: (typeof RAW_STARTUP)[number]) => tupleField(RAW_STARTUP, name, "value");

/**
 * Above the table's highest number and the rollup's watermark, so a row is never numbered at or
 * below what was folded in, even after a deleted project's rows. AUTOINCREMENT without its
 * sqlite_sequence row per statement (migration 0026).
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
 * SPEC §2.5: code-point order, not JavaScript's UTF-16 `<` (which puts U+1F680 before U+FB01), to
 * match SQLite's BINARY order on UTF-8 that migrations/0002_agreement_pair_order.sql gave the older
 * rows.
 */
export function agreementPairOrder(toolA: string, toolB: string): [string, string] {
  return compareByCodePoint(toolA, toolB) <= 0 ? [toolA, toolB] : [toolB, toolA];
}

const INSERT_AGREEMENTS_SQL = `INSERT INTO raw_agreements (agreement_seq, project_id, session_id, field, tool_a, tool_b, agreed,
  checked_at_ms, window_ms, received_at_ms)
WITH ${seqBaseSql("raw_agreements", "agreement_seq", stateValueSql(AGREEMENTS_WATERMARK))}
SELECT (SELECT base FROM seq_base) + key + 1, ?2, ${RAW_AGREEMENT.map((name) => tupleField(RAW_AGREEMENT, name, "value")).join(", ")}, ?3
FROM json_each(?1) WHERE ${receiptHeldSql("?2", "?4", "?5")} ORDER BY key`;

/** Only named fields: nothing outside the schema can reach a row. */
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

export type StoredBatch = {
  projectId: string;
  receivedAtMs: number;
  requestId: string;
  batchId: string;
  /** The request carried an Idempotency-Key: look for an earlier copy before writing (fast path). */
  resendGuard: boolean;
  tuples: BatchTuples;
};

export function countsOf(tuples: BatchTuples): RowCounts {
  return { calls: tuples.calls.length, startups: tuples.startups.length, agreements: tuples.agreements.length };
}

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
 * With `receipt` (retries, the queue's consumer) every row is written only by the attempt that
 * inserted the receipt.
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
    // A call's tuple is shorter than its payload, so a body within the 1 MiB limit always fits one
    // bound value.
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
/** Default 0.25, 1 and 4 s: under waitUntil's 30 s. */
export const DEFAULT_WRITE_RETRY_BASE_MS = 250;

/**
 * D1 stops a statement only at 30 s and waitUntil ends 30 s after the answer, so attempts waiting
 * for D1's own timeout would leave no time to queue the batch. Receipts keep an abandoned attempt
 * that commits from being stored twice.
 */
export const WRITE_ATTEMPT_TIMEOUT_BASES = 20;
/** A slow but healthy D1 is not a failure. */
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
 * One transaction, so a failed attempt leaves nothing behind. Failures log the error's name, never
 * its message, which could quote stored values. Never throws.
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

/** Rejects when D1 fails so the caller retries the message. */
export async function storeBatchOnce(db: D1Database, batch: StoredBatch, nowMs: number): Promise<"stored" | "duplicate"> {
  const attemptId = crypto.randomUUID();
  const results = await db.batch(batchStatements(db, batch, { attemptId, nowMs }).statements);
  return results[0]!.meta.changes > 0 ? "stored" : "duplicate";
}
