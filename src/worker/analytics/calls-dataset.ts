// The Analytics Engine layout of the calls dataset (docs/analytics-engine.md). A data point weighs
// `calls` calls: one call, or identical ones grouped when a batch exceeds the 250 writes per invocation.
// Append-only: a shipped slot keeps its meaning (queries in the wild read it). Every per-call counter
// of metrics/counters.ts needs the next free doubleN, or the type check fails. Read by writer and
// query builder (explore-sql.ts) alike.
import { PER_CALL_COUNTER_NAMES, addCall, type CallFacts, type PerCallCounterName } from "../metrics/counters.ts";
import { wellFormed } from "../text.ts";
import type { SessionKind } from "../../shared/call.ts";

/** Platform limit: writeDataPoint calls per Worker invocation. */
export const MAX_DATA_POINTS_PER_INVOCATION = 250;

/** Where each field lives in a data point. `index1` is the project id (the sampling key). */
export const CALLS_DATASET = {
  /** The dataset's name in wrangler.toml and in SQL (`FROM mcpulse_calls`). */
  name: "mcpulse_calls",
  index: "project_id",
  blobs: {
    tool_name: "blob1",
    client_name: "blob2",
    /** The client's own version (its `clientInfo.version`), `unknown` when not said. */
    client_version: "blob3",
    /** ok | bad_args | tool_error | crashed. */
    outcome: "blob4",
    /** `1` for an ok call with an empty result, else `0`. */
    empty: "blob5",
    /** Where the session id came from: key | conversation | transport | connection | none | unknown. */
    session_kind: "blob6",
    /** stdio | http | sse | unknown. */
    transport: "blob7",
    /** The MCP protocol revision negotiated (e.g. `2025-06-18`), `unknown` when not said. */
    protocol_version: "blob8",
    /** The server's own version (its `serverInfo.version`), `unknown` when not said. */
    server_version: "blob9",
    /** The ingest request's country (`request.cf.country`), `unknown` without one. */
    country: "blob10",
    /** The Cloudflare colo that took the ingest request (`request.cf.colo`), `unknown` without one. */
    colo: "blob11",
    args_hash: "blob12",
    /** Empty when the call had no session (SPEC §2.2). */
    session_id: "blob13",
  },
  doubles: {
    /** Calls this point stands for: the weight (1 for a single call). */
    calls: "double1",
    /** Calls with outcome ok (empty ones included, SPEC §2.1). */
    ok: "double2",
    /** Calls that were ok but empty. */
    empty: "double3",
    bad_args: "double4",
    tool_error: "double5",
    crashed: "double6",
    duration_ms_sum: "double7",
    /** UTF-16 length of the responses (SPEC §1.3), summed. */
    response_bytes_sum: "double8",
    /** Calls sent without a session (SPEC §2.2). */
    calls_without_session: "double9",
    /** The call's `started_at`, epoch ms (a group's earliest). Ranges and grains read this, not `timestamp`. */
    started_at_ms: "double10",
    /** One call's duration: the call's own, or its duration chunk's value. Quantiles read this. */
    duration_ms: "double11",
    /** One call's response size: the call's own, or its group's mean. */
    response_bytes: "double12",
    /** Calls without an args_hash (OTLP spans without arguments, SPEC §10): 1 or 0. */
    calls_without_args_hash: "double13",
  } satisfies Record<PerCallCounterName | "started_at_ms" | "duration_ms" | "response_bytes", `double${number}`>,
} as const;

export type BlobName = keyof typeof CALLS_DATASET.blobs;
export type DoubleName = keyof typeof CALLS_DATASET.doubles;

/** Order of the `doubles` array in a data point (double1 first). */
const DOUBLE_ORDER = (Object.keys(CALLS_DATASET.doubles) as DoubleName[]).sort(
  (a, b) => slotNumber(CALLS_DATASET.doubles[a]) - slotNumber(CALLS_DATASET.doubles[b]),
);
const BLOB_ORDER = (Object.keys(CALLS_DATASET.blobs) as BlobName[]).sort(
  (a, b) => slotNumber(CALLS_DATASET.blobs[a]) - slotNumber(CALLS_DATASET.blobs[b]),
);

export function slotNumber(slot: string): number {
  return Number(slot.replace(/^\D+/, ""));
}

export { SESSION_KINDS, type SessionKind } from "../../shared/call.ts";

/** What a descriptive dimension holds when nothing said it. */
export const UNKNOWN_VALUE = "unknown";

/** A call as the writer needs it: the stored call plus the optional descriptive facts (SPEC §1.2). */
export type CallForAnalytics = CallFacts & {
  tool_name: string;
  client_name: string;
  args_hash: string;
  started_at_ms: number;
  client_version?: string | null;
  server_version?: string | null;
  protocol_version?: string | null;
  session_kind?: SessionKind | null;
  transport?: string | null;
};

/** Facts of the ingest request itself (Cloudflare's `request.cf`). */
export type RequestFacts = { country: string | null; colo: string | null };
const NO_REQUEST_FACTS: RequestFacts = { country: null, colo: null };

type Blobs = Record<BlobName, string>;
type Counters = Record<PerCallCounterName, number>;
type Group = { blobs: Blobs; counters: Counters; startedAtMs: number; durationMs: number; responseBytesSum: number };

/** Placeholder of a dimension merged away when a batch's groups exceed the limit. */
export const OTHER_GROUP = "(other)";

function emptyCounters(): Counters {
  const counters = {} as Counters;
  for (const name of PER_CALL_COUNTER_NAMES) counters[name] = 0;
  return counters;
}

function blobsOf(call: CallForAnalytics, request: RequestFacts): Blobs {
  const text = (value: string | null | undefined) => (value == null || value === "" ? UNKNOWN_VALUE : wellFormed(value));
  return {
    tool_name: wellFormed(call.tool_name),
    client_name: wellFormed(call.client_name),
    client_version: text(call.client_version),
    outcome: call.outcome,
    empty: call.outcome === "ok" && call.is_empty ? "1" : "0",
    session_kind: call.session_kind ?? UNKNOWN_VALUE,
    transport: call.transport ?? UNKNOWN_VALUE,
    protocol_version: text(call.protocol_version),
    server_version: text(call.server_version),
    country: text(request.country),
    colo: text(request.colo),
    args_hash: call.args_hash,
    session_id: wellFormed(call.session_id),
  };
}

/**
 * Widest a duration chunk may be (largest ÷ smallest): its value, 2·lo·hi/(lo+hi), is then within
 * (hi−lo)/(hi+lo) < 4.8 % of every duration in it. Any quantile of values each within 4.8 % of the
 * true ones is within 4.8 % of the true quantile (at least k of them lie at or below 1.048 × the
 * true k-th value, and likewise from below), so quantiles read from such points stay within 5 %.
 */
export const DURATION_CHUNK_RATIO = 1.1;

/**
 * How a batch over the 250-point limit is grouped: the finest level whose points fit. Every level
 * keeps tool, outcome, emptiness and hour (so hourly figures and the D1 reconciliation stay exact).
 * Merged values are stored as `(other)`; distinct counts over them are approximate.
 */
type Level = { keep: ReadonlySet<BlobName>; timeMs: number; chunks: "ratio" | "budget" };
const EXACT_DIMENSIONS = new Set<BlobName>(["tool_name", "client_name", "outcome", "empty"]);
const GROUPING_LEVELS: readonly Level[] = [
  { keep: new Set(BLOB_ORDER.filter((b) => b !== "args_hash")), timeMs: 60_000, chunks: "ratio" },
  { keep: new Set(BLOB_ORDER.filter((b) => b !== "args_hash" && b !== "session_id")), timeMs: 60_000, chunks: "ratio" },
  { keep: EXACT_DIMENSIONS, timeMs: 3_600_000, chunks: "ratio" },
  { keep: EXACT_DIMENSIONS, timeMs: 3_600_000, chunks: "budget" },
  { keep: new Set<BlobName>(["tool_name", "outcome", "empty"]), timeMs: 3_600_000, chunks: "budget" },
];

type Bucket = { blobs: Blobs; calls: CallForAnalytics[] };

function bucketsOf(calls: readonly CallForAnalytics[], request: RequestFacts, level: Level): Bucket[] {
  const byKey = new Map<string, Bucket>();
  for (const call of calls) {
    const blobs = blobsOf(call, request);
    for (const name of BLOB_ORDER) if (!level.keep.has(name)) blobs[name] = OTHER_GROUP;
    const key = JSON.stringify([BLOB_ORDER.map((n) => blobs[n]), Math.floor(call.started_at_ms / level.timeMs)]);
    let bucket = byKey.get(key);
    if (!bucket) byKey.set(key, (bucket = { blobs, calls: [] }));
    bucket.calls.push(call);
  }
  for (const bucket of byKey.values()) bucket.calls.sort((a, b) => a.duration_ms - b.duration_ms);
  return [...byKey.values()];
}

/** Runs of durations (sorted) at most DURATION_CHUNK_RATIO wide. */
function ratioChunks(sorted: CallForAnalytics[]): CallForAnalytics[][] {
  const chunks: CallForAnalytics[][] = [];
  let current: CallForAnalytics[] = [];
  for (const call of sorted) {
    const low = current[0]?.duration_ms;
    if (low !== undefined && call.duration_ms > low * DURATION_CHUNK_RATIO) {
      chunks.push(current);
      current = [];
    }
    current.push(call);
  }
  if (current.length > 0) chunks.push(current);
  return chunks;
}

/** `count` runs of neighbouring durations (sorted), as equal in calls as they can be. */
function countChunks(sorted: CallForAnalytics[], count: number): CallForAnalytics[][] {
  const n = Math.max(1, Math.min(count, sorted.length));
  return Array.from({ length: n }, (_, i) => sorted.slice(Math.floor((i * sorted.length) / n), Math.floor(((i + 1) * sorted.length) / n)));
}

function groupOf(blobs: Blobs, calls: CallForAnalytics[]): Group {
  const group: Group = { blobs, counters: emptyCounters(), startedAtMs: Infinity, durationMs: 0, responseBytesSum: 0 };
  for (const call of calls) {
    addCall(group.counters, call);
    group.startedAtMs = Math.min(group.startedAtMs, call.started_at_ms);
    group.responseBytesSum += call.response_bytes;
  }
  const lo = calls[0]!.duration_ms;
  const hi = calls[calls.length - 1]!.duration_ms;
  // The value with the least worst relative error over [lo, hi] (0 for a chunk of zeros).
  group.durationMs = lo + hi === 0 ? 0 : (2 * lo * hi) / (lo + hi);
  return group;
}

function groupCalls(calls: readonly CallForAnalytics[], request: RequestFacts, level: Level, maxPoints: number): Group[] {
  const buckets = bucketsOf(calls, request, level);
  if (level.chunks === "ratio") return buckets.flatMap((b) => ratioChunks(b.calls).map((chunk) => groupOf(b.blobs, chunk)));
  // Each group one point, and the points left over shared by calls (never more than maxPoints).
  const spare = Math.max(0, maxPoints - buckets.length);
  return buckets.flatMap((b) => countChunks(b.calls, 1 + Math.floor((spare * b.calls.length) / calls.length)).map((chunk) => groupOf(b.blobs, chunk)));
}

/** The smallest groups merged into one `(other)` point, the largest keeping their own: the last resort. */
function mergeSmallest(groups: Group[], maxPoints: number): Group[] {
  groups.sort((a, b) => b.counters.calls - a.counters.calls);
  const rest = groups.slice(maxPoints - 1);
  const blobs = {} as Blobs;
  for (const name of BLOB_ORDER) blobs[name] = OTHER_GROUP;
  const other: Group = { blobs, counters: emptyCounters(), startedAtMs: Infinity, durationMs: 0, responseBytesSum: 0 };
  for (const g of rest) {
    for (const name of PER_CALL_COUNTER_NAMES) other.counters[name] += g.counters[name];
    other.startedAtMs = Math.min(other.startedAtMs, g.startedAtMs);
    other.responseBytesSum += g.responseBytesSum;
  }
  other.durationMs = other.counters.duration_ms_sum / other.counters.calls;
  return [...groups.slice(0, maxPoints - 1), other];
}

/**
 * The data points for one batch: one per call within `maxPoints`, else grouped (GROUPING_LEVELS).
 * The `calls` slots always sum to the batch's calls.
 */
export function callDataPoints(
  projectId: string,
  calls: readonly CallForAnalytics[],
  request: RequestFacts = NO_REQUEST_FACTS,
  maxPoints = MAX_DATA_POINTS_PER_INVOCATION,
): AnalyticsEngineDataPoint[] {
  let groups: Group[];
  if (calls.length <= maxPoints) {
    groups = calls.map((call) => {
      const counters = emptyCounters();
      addCall(counters, call);
      return { blobs: blobsOf(call, request), counters, startedAtMs: call.started_at_ms, durationMs: call.duration_ms, responseBytesSum: call.response_bytes };
    });
  } else {
    groups = [];
    for (const level of GROUPING_LEVELS) {
      groups = groupCalls(calls, request, level, maxPoints);
      if (groups.length <= maxPoints) break;
    }
    // Not even one point per (tool, outcome, emptiness, hour) fits: the largest (tool, client, …)
    // groups keep their point and the rest share one (other) point.
    if (groups.length > maxPoints) groups = mergeSmallest(groupCalls(calls, request, GROUPING_LEVELS[3]!, 0), maxPoints);
  }
  return groups.map((group) => {
    const values: Record<DoubleName, number> = {
      ...group.counters,
      started_at_ms: group.startedAtMs,
      duration_ms: group.durationMs,
      response_bytes: group.responseBytesSum / group.counters.calls,
    };
    return {
      indexes: [projectId],
      blobs: BLOB_ORDER.map((name) => group.blobs[name]),
      doubles: DOUBLE_ORDER.map((name) => values[name]),
    };
  });
}

/** A data point read back by field name (tests, the local engine's loader). */
export function dataPointFields(point: AnalyticsEngineDataPoint): { blobs: Blobs; doubles: Record<DoubleName, number> } {
  const blobs = {} as Blobs;
  for (const name of BLOB_ORDER) blobs[name] = String(point.blobs?.[slotNumber(CALLS_DATASET.blobs[name]) - 1] ?? "");
  const doubles = {} as Record<DoubleName, number>;
  for (const name of DOUBLE_ORDER) doubles[name] = Number(point.doubles?.[slotNumber(CALLS_DATASET.doubles[name]) - 1] ?? 0);
  return { blobs, doubles };
}

/** Writes the points without awaiting anything (writeDataPoint is fire-and-forget by design). */
export function writeCallDataPoints(dataset: AnalyticsEngineDataset, points: readonly AnalyticsEngineDataPoint[]): void {
  for (const point of points) dataset.writeDataPoint(point);
}
