// The Analytics Engine layout of the calls dataset (binding CALLS_AE, docs/analytics-engine.md).
// One data point stands for `calls` tool calls of one (tool, client): a single call when the batch
// fits the platform's 250 writes per invocation, an aggregate of the excess otherwise. Every slot
// is a count or a sum, so SUM(_sample_interval * slot) is right for any mix of the two.
// Names are stored in their well-formed UTF-16 form, as D1 stores them.
// Append-only: a slot, once shipped, keeps its meaning forever (queries in the wild read it).
// The doubles are the per-call counters of metrics/counters.ts, each named as there: a counter that
// one call decides gets a slot here or the type check fails; what a call adds is counters.ts's.
import { PER_CALL_COUNTER_NAMES, addCall, type CallFacts, type PerCallCounterName } from "../metrics/counters.ts";
import { wellFormed } from "../text.ts";

/** Platform limit: writeDataPoint calls per Worker invocation. */
export const MAX_DATA_POINTS_PER_INVOCATION = 250;

/** Where each field lives in a data point. `index1` is the project id (the sampling key). */
export const CALLS_DATASET = {
  index: "project_id",
  blobs: {
    tool_name: "blob1",
    client_name: "blob2",
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
  } satisfies Record<PerCallCounterName, `double${number}`>,
} as const;

type DoubleName = keyof typeof CALLS_DATASET.doubles;
/** Order of the `doubles` array in a data point (double1 first). */
const DOUBLE_ORDER = (Object.keys(CALLS_DATASET.doubles) as DoubleName[]).sort(
  (a, b) => slotNumber(CALLS_DATASET.doubles[a]) - slotNumber(CALLS_DATASET.doubles[b]),
);
type BlobName = keyof typeof CALLS_DATASET.blobs;
const BLOB_ORDER = (Object.keys(CALLS_DATASET.blobs) as BlobName[]).sort(
  (a, b) => slotNumber(CALLS_DATASET.blobs[a]) - slotNumber(CALLS_DATASET.blobs[b]),
);

function slotNumber(slot: string): number {
  return Number(slot.replace(/^\D+/, ""));
}

export type CallForAnalytics = CallFacts & { tool_name: string; client_name: string };

type Counters = Record<DoubleName, number>;
type Group = { tool_name: string; client_name: string; counters: Counters };

/** Placeholder names of the one point that carries the smallest groups when even groups exceed the limit. */
export const OTHER_GROUP = "(other)";

function emptyCounters(): Counters {
  const counters = {} as Counters;
  for (const name of PER_CALL_COUNTER_NAMES) counters[name] = 0;
  return counters;
}

function addCounters(into: Counters, from: Counters): void {
  for (const name of DOUBLE_ORDER) into[name] += from[name];
}

/**
 * The data points for one batch: one per call while the batch has at most `maxPoints` calls;
 * otherwise one per (tool, client) carrying counts and sums, and — should there be more groups
 * than points — the smallest groups merged into one `(other)` point. Every call is represented:
 * the `calls` slots always sum to the number of calls.
 */
export function callDataPoints(
  projectId: string,
  calls: readonly CallForAnalytics[],
  maxPoints = MAX_DATA_POINTS_PER_INVOCATION,
): AnalyticsEngineDataPoint[] {
  let groups: Group[];
  if (calls.length <= maxPoints) {
    groups = calls.map((call) => {
      const counters = emptyCounters();
      addCall(counters, call);
      return { tool_name: wellFormed(call.tool_name), client_name: wellFormed(call.client_name), counters };
    });
  } else {
    const byKey = new Map<string, Group>();
    for (const call of calls) {
      const toolName = wellFormed(call.tool_name);
      const clientName = wellFormed(call.client_name);
      const key = JSON.stringify([toolName, clientName]);
      let group = byKey.get(key);
      if (!group) byKey.set(key, (group = { tool_name: toolName, client_name: clientName, counters: emptyCounters() }));
      addCall(group.counters, call);
    }
    groups = [...byKey.values()];
    if (groups.length > maxPoints) {
      groups.sort((a, b) => b.counters.calls - a.counters.calls);
      const other: Group = { tool_name: OTHER_GROUP, client_name: OTHER_GROUP, counters: emptyCounters() };
      for (const group of groups.slice(maxPoints - 1)) addCounters(other.counters, group.counters);
      groups = [...groups.slice(0, maxPoints - 1), other];
    }
  }
  return groups.map((group) => ({
    indexes: [projectId],
    blobs: BLOB_ORDER.map((name) => group[name]),
    doubles: DOUBLE_ORDER.map((name) => group.counters[name]),
  }));
}

/** Writes the points without awaiting anything (writeDataPoint is fire-and-forget by design). */
export function writeCallDataPoints(dataset: AnalyticsEngineDataset, points: readonly AnalyticsEngineDataPoint[]): void {
  for (const point of points) dataset.writeDataPoint(point);
}
