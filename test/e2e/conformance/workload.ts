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
  /** started_at in whole microseconds since the epoch (producers send up to nanoseconds, SPEC §1.2). */
  startedUs: number;
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

/** A payload ingest must drop (SPEC §1.2): it must change no figure. */
export type Junk = { type: "junk"; why: string; payload: Record<string, unknown> };

export type Item = Call | Startup | Verdict | Junk;

export type Workload = {
  /** Items in the order they are sent (receive order); `batches` splits this list. */
  items: Item[];
  batchSizes: number[];
  /** Whether the rollup cron runs after each batch has landed. */
  rollupAfter: boolean[];
  /** How each item is written on the wire (timestamp offset and digits, omitted zero values). */
  wire: WireStyle[];
};

/** Names with spaces, `+`, `/`, `%`, `&`, non-ASCII and the longest allowed (200) must filter exactly (SPEC §1.2, §3). */
export const CALLED_TOOLS = ["search_orders", "get_order", "update order/€ 🔍", "list+items%20&x=1", `t${"x".repeat(198)}z`] as const;
/** Registered in startups but never called: dead unless a policy flag is set (SPEC §2.4). */
export const UNCALLED_TOOLS = ["export_report", "admin_purge", "verify_user"] as const;
export const CLIENTS = ["cursor", "Claude Desktop+beta", `c${"l".repeat(126)}é`] as const;
/** Hashes are 4–64 lowercase hex characters (SPEC §1.2; SDKs send 12). */
const ARGS_HASHES = ["aaaa11112222", "bbbb33334444", "cccc55556666", "abcd", "0123456789abcdef".repeat(4)];
const DESCRIPTION_HASHES = ["d0d0d0d0d0d0", "d1d1d1d1d1d1", "d2d2d2d2d2d2"];
const SCHEMA_HASHES = ["5c5c5c5c5c5c", "5d5d5d5d5d5d"];
/** `e3b0c44298fc` is the norm of an empty description; tools sharing it converge too (SPEC §2.5). */
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
/** The longest duration ingest accepts (SPEC §1.2); rare, as the next call then starts a day later. */
const MAX_DURATION_MS = 86_400_000;

type Gen = fc.GeneratorValue;

function pick<T>(g: Gen, list: readonly T[]): T {
  return list[g(fc.integer, { min: 0, max: list.length - 1 })]!;
}

/**
 * A workload around `nowMs`: sessions starting a few hours before today's UTC midnight (so they cross
 * it), within today, yesterday and up to five days back; calls never later than 10 minutes before now.
 */
/**
 * `sessionless: false` leaves out calls without a session: a database filled by a release older
 * than migration 0014 read them as one session named "" (the upgrade test's first release).
 */
export function generateWorkload(g: Gen, nowMs: number, options: { sessionless?: boolean } = {}): Workload {
  const midnight = Math.floor(nowMs / DAY_MS) * DAY_MS;
  const latestStart = nowMs - 10 * 60_000;
  const sessionStarts = [
    midnight - 2 * HOUR_MS,
    midnight - 25 * 60_000,
    midnight - DAY_MS + 9 * HOUR_MS,
    midnight - 4 * DAY_MS + 13 * HOUR_MS,
    midnight - 5 * DAY_MS - 3 * HOUR_MS,
    // The first day of the default 7-day range; still under the 7-day limit at any time of day.
    midnight - 6 * DAY_MS + HOUR_MS,
    Math.min(midnight + 2 * HOUR_MS, nowMs - 3 * HOUR_MS),
  ];
  const sessionCount = g(fc.integer, { min: 4, max: 6 });
  const items: Item[] = [];
  for (let s = 0; s < sessionCount; s++) {
    // Session ids up to the 128-character cap (SPEC §1.2).
    // Now and then calls without a session (SPEC §2.2: a server that cannot tell conversations
    // apart sends session_id ""); they never come with startups (only a call may lack a session).
    const sessionless = g(fc.integer, { min: 0, max: 4 }) === 0 && options.sessionless !== false;
    const sessionId = sessionless ? "" : `s_conf${s}_${g(fc.integer, { min: 0, max: 0xffff }).toString(16)}`.padEnd(g(fc.boolean) ? 128 : 16, "x");
    const firstClient = pick(g, CLIENTS);
    const secondClient = pick(g, CLIENTS);
    // Now and then a session that only sends startups (it still counts as a session, SPEC §2.4).
    const callCount = g(fc.integer, { min: 0, max: 7 }) === 0 ? 0 : g(fc.integer, { min: 20, max: 70 });
    const switchAt = g(fc.integer, { min: 1, max: callCount + 5 });
    // Now and then two clients served from one session, interleaved call by call (an HTTP server
    // behind one SDK session, SPEC §2.2: their calls are never retries or pairs of each other).
    const interleaved = g(fc.integer, { min: 0, max: 3 }) === 0;
    // Few tools per session, so one tool's calls often follow each other (retry edges get exercised).
    const tools = [pick(g, CALLED_TOOLS), pick(g, CALLED_TOOLS), pick(g, CALLED_TOOLS)];
    // Sometimes exactly on a UTC midnight or one microsecond before it (day and hour edges).
    const edge = pick(g, ["random", "random", "on midnight", "1 µs before midnight"] as const);
    let start =
      edge === "random" ? (pick(g, sessionStarts) + g(fc.integer, { min: 0, max: 59_999 })) * 1000
      : (midnight - pick(g, [1, 2, 5]) * DAY_MS) * 1000 - (edge === "on midnight" ? 0 : 1);
    let prev: Call | undefined;
    for (let i = 0; i < callCount; i++) {
      if (prev) {
        const gap = pick(g, GAPS_MS);
        // A tie copies the previous start exactly; otherwise a sub-millisecond part moves the gap by
        // a few microseconds around the 0 and 30,000 ms edges (the comparison is in µs, docs/metrics.md).
        start = gap === "tie" ? prev.startedUs : prev.startedUs + (prev.duration_ms + gap) * 1000 + pick(g, [0, 0, 0, 0, 1, -1, 500, 999]);
      }
      if (start > latestStart * 1000) break;
      const outcome = pick(g, ["ok", "ok", "ok", "bad_args", "tool_error", "crashed"] as const);
      const call: Call = {
        type: "call",
        session_id: sessionId,
        client_name: (interleaved ? g(fc.boolean) : i >= switchAt) ? secondClient : firstClient,
        tool_name: pick(g, tools),
        startedUs: start,
        duration_ms: g(fc.integer, { min: 0, max: 59 }) === 0 ? MAX_DURATION_MS : pick(g, DURATIONS_MS),
        outcome,
        response_bytes: pick(g, [0, 2, 17, 1_000, 123_457, 2_147_483_647]),
        is_empty: outcome === "ok" && g(fc.boolean),
        args_hash: pick(g, ARGS_HASHES),
      };
      items.push(call);
      prev = call;
    }
    const startups = sessionless ? 0 : g(fc.integer, { min: 0, max: 3 });
    for (let k = 0; k < startups; k++) {
      // Now and then an empty list (sent without `tools`, as Go omits it: SPEC §1.2 reads it as []).
      const names = g(fc.integer, { min: 0, max: 9 }) === 0 ? [] : [...CALLED_TOOLS, ...UNCALLED_TOOLS].filter(() => g(fc.integer, { min: 0, max: 3 }) > 0);
      const startup: Startup = {
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
      };
      // Rarely a list that names one tool twice (docs/metrics.md: the last entry is the registered
      // one; the session's schema bytes count both, as "sum of its latest startup's schema_bytes").
      if (startup.tools.length > 0 && g(fc.integer, { min: 0, max: 5 }) === 0) {
        const twin = pick(g, startup.tools);
        startup.tools.push({ ...twin, schema_bytes: twin.schema_bytes + 7, description_hash: pick(g, DESCRIPTION_HASHES) });
      }
      items.push(startup);
    }
  }
  const verdicts = g(fc.integer, { min: 0, max: 25 });
  for (let v = 0; v < verdicts; v++) {
    // Some verdicts exactly on, or 1 ms before, a UTC midnight (the day of checked_at decides). The
    // hour added after it stays in the past whatever the time of day the test runs at: in the first
    // hour after midnight, `midnight - 1 + up to an hour` would be more than the 5 minutes ahead
    // SPEC §1.2 accepts, and ingest would rightly drop it.
    const checkedBase = pick(g, [...sessionStarts, midnight - DAY_MS, midnight - DAY_MS - 1, midnight - 1]);
    const checkedOffset = pick(g, [0, 0, g(fc.integer, { min: 0, max: HOUR_MS })]);
    items.push({
      type: "agreement",
      session_id: "s_verdicts",
      field: pick(g, FIELDS.slice(0, 2)),
      tool_a: pick(g, CALLED_TOOLS.slice(0, 3)),
      tool_b: pick(g, CALLED_TOOLS.slice(0, 3)),
      agreed: g(fc.boolean),
      checkedMs: checkedBase + Math.min(checkedOffset, Math.max(0, nowMs - 60_000 - checkedBase)),
      // Any whole number (SPEC §1.2 gives window_ms no cap), a day and more included.
      window_ms: pick(g, [0, 300_000, 300_000, 86_400_001, 2_147_483_648]),
    });
  }
  // A call up to 4 minutes in the future is accepted (SPEC §1.2 allows 5) and counts like any other.
  const calls = items.filter((i): i is Call => i.type === "call");
  if (calls.length > 0 && g(fc.boolean)) {
    const model = pick(g, calls);
    items.push({ ...model, startedUs: (nowMs + g(fc.integer, { min: 60_000, max: 240_000 })) * 1000, args_hash: pick(g, ARGS_HASHES) });
  }
  items.push(...junkItems(g, nowMs));
  // Random receive order (sort by random keys), random batch sizes.
  const keys = items.map(() => g(fc.integer, { min: 0, max: 1_000_000 }));
  const order = items.map((_, i) => i).sort((a, b) => keys[a]! - keys[b]! || a - b);
  const shuffled = order.map((i) => items[i]!);
  const batchSizes: number[] = [];
  const rollupAfter: boolean[] = [];
  for (let left = shuffled.length; left > 0; ) {
    const size = Math.min(left, g(fc.integer, { min: 1, max: 250 }));
    batchSizes.push(size);
    // The cron may run between batches: figures must be exact whatever arrives after it (SPEC §2.2).
    rollupAfter.push(g(fc.boolean));
    left -= size;
  }
  const wire = shuffled.map((): WireStyle => ({
    offsetMin: pick(g, [0, 0, 0, 120, -330, 60 * 14]),
    digits: pick(g, [0, 1, 3, 6, 9, 9]),
    nanos: pick(g, ["000", "001", "499"]),
    omitZeros: g(fc.boolean),
  }));
  return { items: shuffled, batchSizes, rollupAfter, wire };
}

export type WireStyle = {
  /** 0 writes `Z`, anything else a ±hh:mm offset (SPEC §1.2): the same instant either way. */
  offsetMin: number;
  /** Fraction digits written (0–9, SPEC §1.2); more when the microseconds need them. */
  digits: number;
  /** With 9 digits, the nanoseconds after the microseconds; all round to the same µs. */
  nanos: string;
  /** Omit `is_empty: false`, `duration_ms: 0`, `response_bytes: 0`, as the Go SDK does (SPEC §1.2). */
  omitZeros: boolean;
};

/** Payloads one rule of SPEC §1.2 drops each, built from a valid call, startup or verdict. */
function junkItems(g: Gen, nowMs: number): Junk[] {
  const call = {
    v: 1, session_id: "s_junk", client_name: "cursor", tool_name: "search_orders",
    started_at: new Date(nowMs - HOUR_MS).toISOString(), duration_ms: 5, outcome: "ok",
    response_bytes: 10, is_empty: false, args_hash: "aaaa11112222", type: "call",
  };
  const startup = { v: 1, type: "startup", session_id: "s_junk", client_name: "cursor", tools: [{ name: "junk_tool", schema_bytes: 10 }] };
  const verdict = {
    v: 1, type: "agreement", session_id: "s_junk", field: "price", tool_a: "search_orders", tool_b: "get_order",
    agreed: false, checked_at: new Date(nowMs - HOUR_MS).toISOString(), window_ms: 1000,
  };
  const all: Junk[] = [
    { type: "junk", why: "v 2", payload: { ...call, v: 2 } },
    { type: "junk", why: "is_empty on a crash", payload: { ...call, outcome: "crashed", is_empty: true } },
    { type: "junk", why: "over 7 days old", payload: { ...call, started_at: new Date(nowMs - 7 * DAY_MS - HOUR_MS).toISOString() } },
    { type: "junk", why: "10 minutes in the future", payload: { ...call, started_at: new Date(nowMs + 10 * 60_000).toISOString() } },
    { type: "junk", why: "no offset", payload: { ...call, started_at: new Date(nowMs - HOUR_MS).toISOString().slice(0, 19) } },
    { type: "junk", why: "duration over a day", payload: { ...call, duration_ms: 86_400_001 } },
    { type: "junk", why: "unknown outcome", payload: { ...call, outcome: "timeout" } },
    { type: "junk", why: "uppercase hash", payload: { ...call, args_hash: "AAAA11112222" } },
    { type: "junk", why: "3-char hash", payload: { ...call, args_hash: "abc" } },
    { type: "junk", why: "65-char hash", payload: { ...call, args_hash: "a".repeat(65) } },
    { type: "junk", why: "fractional duration", payload: { ...call, duration_ms: 1.5 } },
    { type: "junk", why: "bytes over 2^31-1", payload: { ...call, response_bytes: 2_147_483_648 } },
    { type: "junk", why: "missing args_hash", payload: { ...call, args_hash: undefined } },
    { type: "junk", why: "tool name over 200", payload: { ...call, tool_name: "t".repeat(201) } },
    { type: "junk", why: "startup with one bad entry", payload: { ...startup, tools: [{ name: "ok_tool", schema_bytes: 1 }, { name: "bad", schema_bytes: -1 }] } },
    // An unexpected transport *string* is kept as `unknown` (SPEC §1.2); a transport that is not a string is a wrong type.
    { type: "junk", why: "startup with a transport that is not a string", payload: { ...startup, transport: 7 } },
    { type: "junk", why: "verdict without field", payload: { ...verdict, field: undefined } },
    { type: "junk", why: "verdict agreed as string", payload: { ...verdict, agreed: "no" } },
  ];
  return all.filter(() => g(fc.integer, { min: 0, max: 2 }) > 0);
}

/** ISO 8601 of a time in whole microseconds, written in `style`. */
export function isoAt(us: number, style: Pick<WireStyle, "offsetMin" | "digits" | "nanos">): string {
  const ms = Math.floor(us / 1000);
  const micro = `${String(ms % 1000).padStart(3, "0")}${String(us % 1000).padStart(3, "0")}`;
  const needed = micro.replace(/0+$/, "").length;
  const digits = Math.max(style.digits, needed);
  const fraction = digits === 0 ? "" : `.${digits <= 6 ? micro.slice(0, digits) : `${micro}${style.nanos}`.slice(0, digits)}`;
  const local = new Date(ms + style.offsetMin * 60_000).toISOString().slice(0, 19);
  if (style.offsetMin === 0) return `${local}${fraction}Z`;
  const sign = style.offsetMin < 0 ? "-" : "+";
  const abs = Math.abs(style.offsetMin);
  return `${local}${fraction}${sign}${String(Math.floor(abs / 60)).padStart(2, "0")}:${String(abs % 60).padStart(2, "0")}`;
}

/** The wire form of an item (SPEC §1.2). */
export function toPayload(item: Item, style: WireStyle): Record<string, unknown> {
  switch (item.type) {
    case "junk":
      return item.payload;
    case "call": {
      const { startedUs, ...rest } = item;
      // An unknown key is stripped, never a reason to drop the item (SPEC §1.2).
      const payload: Record<string, unknown> = { v: 1, ...rest, started_at: isoAt(startedUs, style), trace_id: "x" };
      if (style.omitZeros) {
        if (payload.is_empty === false) delete payload.is_empty;
        if (payload.duration_ms === 0) delete payload.duration_ms;
        if (payload.response_bytes === 0) delete payload.response_bytes;
      }
      return payload;
    }
    case "startup": {
      const payload: Record<string, unknown> = { v: 1, ...item, transport: "stdio", sdk: "conformance/1" };
      if (item.tools.length === 0 && style.omitZeros) delete payload.tools;
      return payload;
    }
    case "agreement": {
      const { checkedMs, ...rest } = item;
      return { v: 1, ...rest, checked_at: isoAt(checkedMs * 1000, style) };
    }
  }
}
