// Random workloads for the metrics conformance test: calls, startups and agreement verdicts as the
// wire carries them (SPEC §1.2), in the shuffled order and batches they are sent in. Every payload is
// valid, so every one of them is stored and the test can wait for all of them to land.
import fc from "fast-check";

export const HOUR_MS = 3_600_000;
export const DAY_MS = 86_400_000;

export type Outcome = "ok" | "bad_args" | "tool_error" | "crashed";
export type Policy = { requires_authorization: boolean; requires_verified_identity: boolean } | null | undefined;

export type Call = {
  type: "call";
  session_id: string;
  client_name: string;
  tool_name: string;
  startedMs: number;
  duration_ms: number;
  outcome: Outcome;
  response_bytes: number;
  is_empty: boolean;
  args_hash: string;
};

export type StartupTool = {
  name: string;
  schema_bytes: number;
  schema_hash: string;
  description_hash: string;
  description_norm?: string;
  policy?: Policy;
};

export type Startup = {
  type: "startup";
  session_id: string;
  client_name: string;
  tools: StartupTool[];
  agree_declared: { field: string; tools: string[] }[];
};

export type Verdict = {
  type: "agreement";
  session_id: string;
  field: string;
  tool_a: string;
  tool_b: string;
  agreed: boolean;
  checkedMs: number;
  window_ms: number;
};

export type Item = Call | Startup | Verdict;

export type Workload = {
  /** Items in the order they are sent (receive order); `batches` splits this list. */
  items: Item[];
  batchSizes: number[];
  /** How each item's timestamp is written on the wire: UTC `Z` or a ±hh:mm offset (minutes). */
  offsetsMin: number[];
};

export const CALLED_TOOLS = ["search_orders", "get_order", "update_order", "list_items", "legacy_lookup"] as const;
/** Registered in startups but never called: dead unless a policy flag is set (SPEC §2.4). */
export const UNCALLED_TOOLS = ["export_report", "admin_purge", "verify_user"] as const;
export const CLIENTS = ["cursor", "claude-desktop", "vscode"] as const;
const ARGS_HASHES = ["aaaa11112222", "bbbb33334444", "cccc55556666"];
const DESCRIPTION_HASHES = ["d0d0d0d0d0d0", "d1d1d1d1d1d1", "d2d2d2d2d2d2"];
const SCHEMA_HASHES = ["5c5c5c5c5c5c", "5d5d5d5d5d5d"];
/** `e3b0c44298fc` is the norm of an empty description, never "converged" (docs/read-api.md). */
const DESCRIPTION_NORMS = ["a1a1a1a1a1a1", "b2b2b2b2b2b2", "e3b0c44298fc", undefined];
const POLICIES: Policy[] = [
  undefined,
  null,
  { requires_authorization: false, requires_verified_identity: false },
  { requires_authorization: true, requires_verified_identity: false },
  { requires_authorization: false, requires_verified_identity: true },
];
const FIELDS = ["price", "total", "stock"];

/** Gaps between the end of a session's previous call and the start of the next (SPEC §2.2 edges). */
const GAPS_MS = [0, 0, 1, -1, -500, 29_999, 30_000, 30_000, 30_001, 5_000, 60_000, 2 * HOUR_MS, "tie"] as const;
const DURATIONS_MS = [0, 0, 1, 7, 19, 20, 21, 45, 99, 100, 250, 1_999, 2_000, 12_345, 90_000, 4_000_000];

type Gen = fc.GeneratorValue;

function pick<T>(g: Gen, list: readonly T[]): T {
  return list[g(fc.integer, { min: 0, max: list.length - 1 })]!;
}

/**
 * A workload around `nowMs`: sessions starting a few hours before today's UTC midnight (so they cross
 * it), within today, yesterday and up to five days back; calls never later than 10 minutes before now.
 */
export function generateWorkload(g: Gen, nowMs: number): Workload {
  const midnight = Math.floor(nowMs / DAY_MS) * DAY_MS;
  const latestStart = nowMs - 10 * 60_000;
  const sessionStarts = [
    midnight - 2 * HOUR_MS,
    midnight - 25 * 60_000,
    midnight - DAY_MS + 9 * HOUR_MS,
    midnight - 4 * DAY_MS + 13 * HOUR_MS,
    midnight - 5 * DAY_MS - 3 * HOUR_MS,
    Math.min(midnight + 2 * HOUR_MS, nowMs - 3 * HOUR_MS),
  ];
  const sessionCount = g(fc.integer, { min: 4, max: 6 });
  const items: Item[] = [];
  for (let s = 0; s < sessionCount; s++) {
    const sessionId = `s_conf${s}_${g(fc.integer, { min: 0, max: 0xffff }).toString(16)}`;
    const firstClient = pick(g, CLIENTS);
    const secondClient = pick(g, CLIENTS);
    const callCount = g(fc.integer, { min: 20, max: 70 });
    const switchAt = g(fc.integer, { min: 1, max: callCount + 5 });
    // Few tools per session, so one tool's calls often follow each other (retry edges get exercised).
    const tools = [pick(g, CALLED_TOOLS), pick(g, CALLED_TOOLS), pick(g, CALLED_TOOLS)];
    let start = pick(g, sessionStarts) + g(fc.integer, { min: 0, max: 59_999 });
    let prev: Call | undefined;
    for (let i = 0; i < callCount; i++) {
      if (prev) {
        const gap = pick(g, GAPS_MS);
        start = gap === "tie" ? prev.startedMs : prev.startedMs + prev.duration_ms + gap;
      }
      if (start > latestStart) break;
      const outcome = pick(g, ["ok", "ok", "ok", "bad_args", "tool_error", "crashed"] as const);
      const call: Call = {
        type: "call",
        session_id: sessionId,
        client_name: i >= switchAt ? secondClient : firstClient,
        tool_name: pick(g, tools),
        startedMs: start,
        duration_ms: pick(g, DURATIONS_MS),
        outcome,
        response_bytes: pick(g, [0, 2, 17, 1_000, 123_457, 2_147_483_647]),
        is_empty: outcome === "ok" && g(fc.boolean),
        args_hash: pick(g, ARGS_HASHES),
      };
      items.push(call);
      prev = call;
    }
    const startups = g(fc.integer, { min: 0, max: 3 });
    for (let k = 0; k < startups; k++) {
      const names = [...CALLED_TOOLS, ...UNCALLED_TOOLS].filter(() => g(fc.integer, { min: 0, max: 3 }) > 0);
      items.push({
        type: "startup",
        session_id: sessionId,
        client_name: g(fc.boolean) ? firstClient : secondClient,
        tools: names.map((name) => {
          const tool: StartupTool = {
            name,
            schema_bytes: pick(g, [0, 1, 333, 4_097]),
            schema_hash: pick(g, SCHEMA_HASHES),
            description_hash: pick(g, DESCRIPTION_HASHES),
          };
          const norm = pick(g, DESCRIPTION_NORMS);
          if (norm !== undefined) tool.description_norm = norm;
          const policy = pick(g, POLICIES);
          if (policy !== undefined) tool.policy = policy;
          return tool;
        }),
        agree_declared: FIELDS.filter(() => g(fc.boolean)).map((field) => ({
          field,
          tools: [pick(g, CALLED_TOOLS), pick(g, UNCALLED_TOOLS)],
        })),
      });
    }
  }
  const verdicts = g(fc.integer, { min: 0, max: 25 });
  for (let v = 0; v < verdicts; v++) {
    items.push({
      type: "agreement",
      session_id: "s_verdicts",
      field: pick(g, FIELDS.slice(0, 2)),
      tool_a: pick(g, CALLED_TOOLS.slice(0, 2)),
      tool_b: pick(g, CALLED_TOOLS.slice(1, 3)),
      agreed: g(fc.boolean),
      checkedMs: pick(g, sessionStarts) + g(fc.integer, { min: 0, max: HOUR_MS }),
      window_ms: 300_000,
    });
  }
  // Random receive order (sort by random keys), random batch sizes.
  const keys = items.map(() => g(fc.integer, { min: 0, max: 1_000_000 }));
  const order = items.map((_, i) => i).sort((a, b) => keys[a]! - keys[b]! || a - b);
  const shuffled = order.map((i) => items[i]!);
  const batchSizes: number[] = [];
  for (let left = shuffled.length; left > 0; ) {
    const size = Math.min(left, g(fc.integer, { min: 1, max: 250 }));
    batchSizes.push(size);
    left -= size;
  }
  const offsetsMin = shuffled.map(() => pick(g, [0, 0, 0, 120, -330, 60 * 14]));
  return { items: shuffled, batchSizes, offsetsMin };
}

/** ISO 8601 with `Z` (offset 0) or a ±hh:mm offset (SPEC §1.2): the same instant either way. */
export function isoAt(ms: number, offsetMin: number): string {
  if (offsetMin === 0) return new Date(ms).toISOString();
  const local = new Date(ms + offsetMin * 60_000).toISOString().slice(0, 23);
  const sign = offsetMin < 0 ? "-" : "+";
  const abs = Math.abs(offsetMin);
  return `${local}${sign}${String(Math.floor(abs / 60)).padStart(2, "0")}:${String(abs % 60).padStart(2, "0")}`;
}

/** The wire form of an item (SPEC §1.2). */
export function toPayload(item: Item, offsetMin: number): Record<string, unknown> {
  switch (item.type) {
    case "call": {
      const { startedMs, ...rest } = item;
      return { v: 1, ...rest, started_at: isoAt(startedMs, offsetMin) };
    }
    case "startup":
      return { v: 1, ...item, transport: "stdio", sdk: "conformance/1" };
    case "agreement": {
      const { checkedMs, ...rest } = item;
      return { v: 1, ...rest, checked_at: isoAt(checkedMs, offsetMin) };
    }
  }
}
